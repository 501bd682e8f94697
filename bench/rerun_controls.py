"""The controls bench_rerun moves: each kind of widget found on a page, and how to change it
there (``forward``) and back (``back``) the way a person would, arming the timing probe just
before the input that counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from playwright.sync_api import Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from bench.rerun_probe import arm
from tests.e2e.browser import open_select

SKIP_KEYS = ("presenter", "kvviz_reset_")
SKIP_SUFFIXES = ("_play",)  # Play reruns by itself; timing it says nothing about one change
WIDGETS = ["stSlider", "stNumberInput", "stSelectbox", "stMultiSelect", "stButtonGroup", "stCheckbox"]


@dataclass
class Change:
    """One control of a page and how to move it there (``forward``) and back (``back``)."""

    page: str
    name: str
    forward: Callable[[Page], None]
    back: Callable[[Page], None]


def box(page: Page, key: str) -> Locator:
    """The container of the widget keyed ``key``."""
    return page.locator(f".st-key-{key}").first


def slider_changes(stem: str, key: str, page: Page) -> list[Change]:
    thumb = box(page, key).locator("input[type=range]").first
    now, top = (float(thumb.get_attribute(a) or 0) for a in ("value", "max"))
    up, down = ("ArrowLeft", "ArrowRight") if now >= top else ("ArrowRight", "ArrowLeft")

    def press(k: str) -> Callable[[Page], None]:
        def go(p: Page) -> None:
            t = box(p, key).locator("input[type=range]").first
            t.focus()
            arm(p, key)
            t.press(k)

        return go

    return [Change(stem, key, press(up), press(down))]


def number_changes(stem: str, key: str, page: Page) -> list[Change]:
    up, down = "stNumberInputStepUp", "stNumberInputStepDown"
    if box(page, key).get_by_test_id(up).is_disabled():
        up, down = down, up
    if box(page, key).get_by_test_id(up).is_disabled():
        return []

    def step(test_id: str) -> Callable[[Page], None]:
        def go(p: Page) -> None:
            arm(p, key)
            box(p, key).get_by_test_id(test_id).click()
            p.mouse.move(1, 1)

        return go

    return [Change(stem, key, step(up), step(down))]


def click_option(key: str, text: str) -> Callable[[Page], None]:
    """A segmented control's option by its label."""

    def go(p: Page) -> None:
        arm(p, key)
        b = box(p, key)
        target = b.locator("button").filter(has_text=text)
        exact = target.get_by_text(text, exact=True)
        (exact.first if exact.count() else target.first).click()
        p.mouse.move(1, 1)

    return go


def group_changes(stem: str, key: str, page: Page) -> list[Change]:
    b = box(page, key)
    buttons = b.locator("button")
    labels = [t.strip() for t in buttons.all_inner_texts()]
    chosen = [
        i
        for i in range(buttons.count())
        if buttons.nth(i).get_attribute("aria-checked") == "true"
        or "Active" in (buttons.nth(i).get_attribute("data-testid") or "")
    ]
    if not labels or not chosen:
        return []
    a = chosen[0]
    others = [i for i in range(len(labels)) if i != a]
    if not key.endswith("_view"):
        others = others[:1] if a + 1 >= len(labels) else [a + 1]
    return [
        Change(stem, f"{key} → {labels[i]}", click_option(key, labels[i]), click_option(key, labels[a])) for i in others
    ]


def toggle_changes(stem: str, key: str, page: Page) -> list[Change]:
    def flip(p: Page) -> None:
        arm(p, key)
        box(p, key).locator("label").first.click()
        p.mouse.move(1, 1)

    return [Change(stem, key, flip, flip)]


def options(p: Page) -> Locator:
    """The open dropdown's options (a select box's or a multiselect's)."""
    return p.locator("[role=listbox] [role=option]")


def open_list(p: Page, key: str, tries: int = 4) -> None:
    """Open a select box's or multiselect's dropdown with one click, as the browser tests do, until
    the field says it is expanded (a click just after the page drew the widget can be lost)."""
    for attempt in range(tries):
        open_select(box(p, key).locator("input[role=combobox]").first)
        try:
            box(p, key).locator("input[role=combobox][aria-expanded=true]").first.wait_for(timeout=2_500)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise


def click_option_in_list(p: Page, key: str, text: str) -> None:
    """Open the dropdown of ``key`` and click its option ``text``: the click is the timed input."""
    open_list(p, key)
    opt = options(p).get_by_text(text, exact=True).first
    opt.wait_for(timeout=10_000)
    arm(p, key)
    opt.click()


def select_changes(stem: str, key: str, page: Page) -> list[Change]:
    current = box(page, key).locator("input[role=combobox]").input_value().strip()
    open_list(page, key)
    labels = [t.strip() for t in options(page).all_inner_texts()]
    page.keyboard.press("Escape")
    if current not in labels or len(labels) < 2:
        return []
    other = labels[(labels.index(current) + 1) % len(labels)]

    def pick(text: str) -> Callable[[Page], None]:
        def go(p: Page) -> None:
            click_option_in_list(p, key, text)
            p.mouse.move(1, 1)

        return go

    return [Change(stem, f"{key} → {other}", pick(other), pick(current))]


def multiselect_changes(stem: str, key: str, page: Page) -> list[Change]:
    """Add the first option not chosen and remove it again; when every option is chosen, remove
    the last one and add it back."""
    chosen = [t.strip() for t in box(page, key).locator("[data-tag] [title]").all_inner_texts()]
    open_list(page, key)
    extra = [t.strip() for t in options(page).all_inner_texts() if t.strip() != "Select all"]
    page.keyboard.press("Escape")
    if not extra and len(chosen) < 2:
        return []
    text = extra[0] if extra else chosen[-1]

    def add(p: Page) -> None:
        click_option_in_list(p, key, text)
        p.keyboard.press("Escape")
        p.mouse.move(1, 1)

    def remove(p: Page) -> None:
        cross = box(p, key).locator(f'button[aria-label="Remove {text}"]').first
        arm(p, key)
        cross.click()
        p.mouse.move(1, 1)

    return [Change(stem, f"{key} + {text}", add, remove) if extra else Change(stem, f"{key} − {text}", remove, add)]


MOVERS = {
    "stSlider": slider_changes,
    "stNumberInput": number_changes,
    "stSelectbox": select_changes,
    "stMultiSelect": multiselect_changes,
    "stButtonGroup": group_changes,
    "stCheckbox": toggle_changes,
}


def wanted(key: str, only: Sequence[str]) -> bool:
    """Whether ``--controls`` can select a change of this control: a filter word inside its key, or
    a change name that starts with it ("prefix_view → Over time"). No filter: every control."""
    return not only or any(o in key or o.startswith(key) for o in only)


def controls(page: Page, stem: str, only: Sequence[str] = ()) -> list[Change]:
    """Every enabled control on the page as it is now, in page order (sidebar first); with ``only``,
    those the filter can select (the others are not even opened)."""
    found = page.evaluate(
        """(widgets) => [...document.querySelectorAll('[class*="st-key-"]')].map(e => {
        const key = [...e.classList].find(c => c.startsWith('st-key-')).slice(7);
        const kind = widgets.find(w => e.querySelector(`[data-testid=${w}]`));
        const off = e.querySelector('input:disabled, [aria-disabled=true], '
                                    + 'button:disabled:not([data-testid^=stNumberInputStep])');
        return [key, kind || null, !!off]; })""",
        WIDGETS,
    )
    changes: list[Change] = []
    for key, kind, disabled in found:
        if not kind or disabled or key.startswith(SKIP_KEYS) or key.endswith(SKIP_SUFFIXES) or not wanted(key, only):
            continue
        try:
            changes += MOVERS[kind](stem, key, page)
        except Exception as exc:  # noqa: BLE001 - a control the bench cannot read is reported and skipped
            print(f"{stem:<15}{key:<42.42} skipped: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}")
    return changes

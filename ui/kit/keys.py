"""Stepping a view from the keyboard, and playing it by itself: for a lecturer at a projector.

``keyboard_steps("◀", "▶")`` makes ← and → click the page's buttons with exactly those labels,
so every step goes through the page's own button callbacks (and its URL parameter). It is a
tiny same-origin component (Streamlit's srcdoc iframes share the app's origin) that installs
one keydown listener on the app's document; the listener is created in the app's window, acts
only while the component is on the page, and leaves the keys alone while a text field, select
box or slider has focus (a focused slider steps itself with the arrows). Presses queue: the next
button is clicked only once the run the last one started has drawn its step, so a quick → → moves
two steps (a click sent sooner would carry the slider's old value, which Streamlit takes over the
button's step); a press that cannot move the step (← on the first, → on the last) is dropped.

``autoplay(key, n_steps)`` adds Play and a speed control; while playing, a fragment ticks once per
interval and reruns the page, and the next run moves ``st.session_state[key]`` one step before the
slider is drawn (``take_tick``; a widget's value cannot change once it is drawn in a run), stopping
at the last step. Play at the last step starts again from the first.

``step_controls(key, n_steps, label)`` is what every stepped view draws: ◀, the step slider, ▶,
Play with its speed, and ← → on the keyboard, all moving the one step ``st.session_state[key]``.
"""

from __future__ import annotations

import json
import time

import streamlit as st

from ui.kit import links

SECONDS_PER_STEP = (0.5, 1.0, 2.0, 4.0)
PLAYBACK_SUFFIXES = ("_play", "_speed")  # autoplay's widget keys: f"{key}_play", f"{key}_speed" (not in the URL)

_KEYS_HTML = """
<script>
  const labels = {labels};
  const app = window.parent;
  window.frameElement.dataset.kvvizKeys = "1";
  app.kvvizStepLabels = labels;
  if (!app.kvvizStepListener) {{
    // built with the app window's Function, so it outlives this iframe's reruns
    app.kvvizStepListener = new app.Function("event", `
      const doc = window.document;
      if (!doc.querySelector("iframe[data-kvviz-keys]")) return;
      if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
      const label = window.kvvizStepLabels[event.key];
      if (!label) return;
      const target = event.target;
      const typing = "input, textarea, select, [role=slider], [contenteditable=true]";
      if (target && target.closest && target.closest(typing)) return;
      event.preventDefault();
      window.kvvizStepQueue.push(event.key);
      window.kvvizStepPump();
    `);
    // One press at a time: the next is clicked once the run the last one started has drawn its step.
    // A click sent before that would carry the slider's old value, and Streamlit would take the step back.
    // A press that cannot move the step (◀ on the first, ▶ on the last) is dropped, so every click sent
    // changes the slider: that change, with the script idle, is the sign that the run is done.
    app.kvvizStepQueue = [];
    app.kvvizStepPump = new app.Function(`
      const doc = window.document;
      if (window.kvvizStepBusy || !window.kvvizStepQueue.length) return;
      const key = window.kvvizStepQueue.shift();
      const label = window.kvvizStepLabels[key];
      const button = Array.from(doc.querySelectorAll("[data-testid=stMain] button"))
        .find(b => b.innerText.trim() === label && !b.disabled);
      const row = button && button.closest("[data-testid=stHorizontalBlock]");
      const slider = row && row.querySelector("input[type=range]");
      if (!slider || slider.disabled
          || (key === "ArrowLeft" ? +slider.value <= +slider.min : +slider.value >= +slider.max))
        return window.kvvizStepPump();
      const root = doc.querySelector("[data-testid=stApp]");
      const steps = () => Array.from(doc.querySelectorAll("[data-testid=stMain] input[type=range]"))
        .map(s => s.getAttribute("aria-valuetext")).join();
      const before = steps();
      const done = () => {{
        observer.disconnect(); clearTimeout(timer); window.kvvizStepBusy = false; window.kvvizStepPump();
      }};
      const observer = new MutationObserver(() => {{
        if (root.dataset.testScriptState === "notRunning" && steps() !== before) done();
      }});
      observer.observe(root, {{attributes: true, subtree: true,
                               attributeFilter: ["data-test-script-state", "aria-valuetext"]}});
      const timer = setTimeout(done, 10000);   // a lost connection: give up rather than hold the keys
      window.kvvizStepBusy = true;
      button.click();
    `);
    app.document.addEventListener("keydown", app.kvvizStepListener);
  }}
</script>
"""


def keyboard_steps(prev_label: str, next_label: str) -> None:
    """Bind ← to the button labelled ``prev_label`` and → to ``next_label`` on this page."""
    labels = json.dumps({"ArrowLeft": prev_label, "ArrowRight": next_label})
    st.iframe(_KEYS_HTML.format(labels=labels), height=1)


def step_controls(
    key: str, n_steps: int, label: str = "Step", *, stacked: bool = False, play: bool = True, **slider_kw
) -> int:
    """◀, the step slider (``key``, steps 0 … ``n_steps - 1``), ▶, Play and its speed, and ← → for ◀ ▶;
    the step shown. ``slider_kw`` goes to ``st.slider`` (``bind="query-params"`` for a fixed range).
    ``stacked`` puts Play and its speed on a row of their own and leaves out the slider's label (the
    view's heading names the step), for a narrow column beside a figure; without ``play`` the caller draws
    them (``autoplay``) further down, where the first screen has room."""
    last = max(n_steps - 1, 0)
    take_tick(key, n_steps)
    # ◀ and ▶ as wide as their glyphs, the slider taking the rest: in a narrow column (presenter mode
    # beside the tree, the sidebar open) a column share would squeeze a glyph to a sliver
    row = st.container() if stacked else st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    with row, st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
        st.button("◀", key=f"{key}_prev", on_click=_step_by, args=(key, -1, last), help="Previous step (←)")
        step = st.slider(
            label,
            0,
            max(last, 1),
            key=key,
            disabled=last == 0,
            width="stretch",
            label_visibility="collapsed" if stacked else "visible",  # the heading beside it names the step
            **slider_kw,
        )
        st.button("▶", key=f"{key}_next", on_click=_step_by, args=(key, 1, last), help="Next step (→)")
    if play:
        with row:
            autoplay(key, n_steps)
    keyboard_steps("◀", "▶")
    return int(step)


def _step_by(key: str, delta: int, last: int) -> None:
    """A button's callback: the step it shows is read when it is clicked, so it is never stale. In a
    part that reruns alone, a step the part's rerun would drop reruns the page (``keep_part_change``)."""
    st.session_state[key] = min(max(int(st.session_state.get(key, 0)) + delta, 0), last)
    links.keep_part_change()


def autoplay(key: str, n_steps: int) -> None:
    """Play / pause and seconds per step for the stepped view whose current step is ``st.session_state[key]``.

    Its ticks move the step through ``take_tick(key, n_steps)``, which the page calls before the
    widget keyed ``key`` (and Play) are drawn, as ``step_controls`` does. Play stops by itself at step
    ``n_steps - 1``.
    """
    play_key, speed_key = (key + suffix for suffix in PLAYBACK_SUFFIXES)
    with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
        playing = st.toggle(
            "Play",
            key=play_key,
            disabled=n_steps <= 1,
            on_change=_rewind,
            args=(key, n_steps),
            help="Step through the view by itself (← and → step by hand); from the last "
            "step it starts again at the first.",
        )
        seconds = (
            st.segmented_control(
                "Seconds per step",
                SECONDS_PER_STEP,
                default=1.0,
                key=speed_key,
                format_func=lambda s: f"{s:g} s",
                label_visibility="collapsed",
            )
            or 1.0
        )
    if playing:
        st.fragment(_advance, run_every=seconds)(key, seconds)
    else:
        st.session_state.pop(_clock(key), None)


def _rewind(key: str, n_steps: int) -> None:
    """Play switched on at the last step: start again from the first, as a player does."""
    if st.session_state[_play_key(key)] and int(st.session_state.get(key, 0)) >= n_steps - 1:
        st.session_state[key] = 0


def _play_key(key: str) -> str:
    return key + PLAYBACK_SUFFIXES[0]


def _clock(key: str) -> str:
    return f"{key}_last_tick"


def _due(key: str) -> str:
    return f"{key}_tick_due"


def take_tick(key: str, n_steps: int) -> None:
    """The step a tick of Play asked for, set at the start of the run that tick caused: the next step,
    or Play switched off at the last one."""
    if not st.session_state.pop(_due(key), False):
        return
    step = int(st.session_state.get(key, 0)) + 1
    if step >= n_steps:
        st.session_state[_play_key(key)] = False
    else:
        st.session_state[key] = step


def _advance(key: str, seconds: float) -> None:
    """One tick, once ``seconds`` have passed since the last one: the page reruns and moves a step.

    The fragment also runs inside every full rerun, after the widgets are drawn: the clock keeps
    those from ticking early (the first one, right after Play, only starts it), and a tick only
    asks for the step (``take_tick``), so a rerun caused by ▶ or ← during play never changes a drawn
    widget.
    """
    clock, now = _clock(key), time.monotonic()
    if now - st.session_state.setdefault(clock, now) < 0.9 * seconds:
        return
    st.session_state[clock] = now
    st.session_state[_due(key)] = True
    st.rerun()

"""Static checks of every st.cache_data / st.cache_resource function in pages/ and ui/.

Streamlit replays a cached function's elements on a cache hit; an element, a progress callback or a
session object passed in (or an element created inside) belongs to an earlier run and crashes the
view on rerun and for the next visitor. Every cache is also bounded: max_entries and a ttl.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("pages/*.py"), *ROOT.glob("ui/**/*.py")])
CACHES = {"cache_data", "cache_resource"}
SUSPECT_NAME = re.compile(
    r"(callback|progress|bar$|placeholder|container|element|session|^on_|^report$|^st$|"
    r"^ctx$|widget|spinner|status|empty)",
    re.I,
)
SUSPECT_TYPE = re.compile(r"(Callable|DeltaGenerator|SessionState|Progress|Container|Placeholder|UploadedFile)")
DRAWING = ("frame", "tables", "work", "errors")  # ui modules whose functions draw elements
ELEMENT_MAKERS = {"st", *DRAWING}  # st.* and ui.kit.frame.* (...) calls draw elements
DRAWING_FUNCTIONS = {
    node.name
    for module in DRAWING  # the same functions imported by name
    for node in ast.parse((ROOT / "ui" / "kit" / f"{module}.py").read_text()).body
    if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
}


def _cache_kind(decorator: ast.expr) -> str | None:
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(node, ast.Attribute) and node.attr in CACHES:
        return node.attr
    return None


def _module_dicts(tree: ast.Module) -> dict[str, set[str]]:
    """Keys of module-level dict literals (``CACHE = {"max_entries": 4, "ttl": 3600}``) a decorator may splat."""
    found = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Dict)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            found[node.targets[0].id] = {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return found


def _keywords(dec: ast.expr, dicts: dict[str, set[str]]) -> set[str]:
    if not isinstance(dec, ast.Call):
        return set()
    names = {k.arg for k in dec.keywords if k.arg}
    for k in dec.keywords:
        if k.arg is None and isinstance(k.value, ast.Name):
            names |= dicts.get(k.value.id, set())
    return names


def cached_functions() -> list[tuple[str, ast.FunctionDef, set[str]]]:
    """(name, function, the decorator's keyword names) for every cached function."""
    found = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(), str(path))
        dicts = _module_dicts(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                for dec in node.decorator_list:
                    if _cache_kind(dec):
                        found.append((f"{path.relative_to(ROOT)}:{node.name}", node, _keywords(dec, dicts)))
    return found


CACHED = cached_functions()
IDS = [name for name, _, _ in CACHED]


def test_the_check_sees_the_cached_functions():
    assert len(CACHED) >= 10, IDS


@pytest.mark.parametrize(("name", "fn", "keywords"), CACHED, ids=IDS)
def test_no_element_callback_or_session_parameter(name, fn, keywords):
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    for arg in args:
        assert not SUSPECT_NAME.search(arg.arg.lstrip("_")), f"{name}: parameter {arg.arg!r}"
        if arg.annotation is not None:
            assert not SUSPECT_TYPE.search(ast.unparse(arg.annotation)), f"{name}: {ast.unparse(arg)}"


@pytest.mark.parametrize(("name", "fn", "keywords"), CACHED, ids=IDS)
def test_no_element_drawn_inside(name, fn, keywords):
    for node in (n for stmt in fn.body for n in ast.walk(stmt)):
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, ast.Attribute):
                root = root.value
            assert not (isinstance(root, ast.Name) and root.id in ELEMENT_MAKERS and root is not node.func), (
                f"{name} calls {ast.unparse(node.func)}"
            )
            assert not (isinstance(node.func, ast.Name) and node.func.id in DRAWING_FUNCTIONS), (
                f"{name} calls {node.func.id}"
            )


@pytest.mark.parametrize(("name", "fn", "keywords"), CACHED, ids=IDS)
def test_bounded_with_max_entries_and_ttl(name, fn, keywords):
    assert {"max_entries", "ttl"} <= keywords, f"{name}: decorator keywords {sorted(keywords)}"


def test_the_checks_can_fail():
    assert {"user_errors", "download_csv", "confirm_cost", "stepped", "header"} <= DRAWING_FUNCTIONS
    bad = ast.parse("@st.cache_data\ndef f(x, progress_callback):\n    st.progress(0.5)\n").body[0]
    arg = bad.args.args[1].arg
    assert SUSPECT_NAME.search(arg)
    assert any(isinstance(n, ast.Call) and ast.unparse(n.func) == "st.progress" for n in ast.walk(bad))
    assert _cache_kind(bad.decorator_list[0]) == "cache_data" and not _keywords(bad.decorator_list[0], {})
    splat = ast.parse('CACHE = {"max_entries": 4}\n@st.cache_data(**CACHE)\ndef f(): pass\n')
    assert _keywords(splat.body[1].decorator_list[0], _module_dicts(splat)) == {"max_entries"}

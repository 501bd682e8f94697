"""Shared test fixtures: an AppTest runner for pages, with fresh Streamlit caches for each AppTest test."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")

# No example has a deadline: a test that asserts a time fails on a loaded machine (timings go in bench/).
settings.register_profile("kvviz", deadline=None)
settings.load_profile("kvviz")


def pytest_configure(config):
    """With pytest-xdist workers, the process that starts them compiles every kernel first (as
    ``make run`` does, ``kvviz.precompile``), so that no worker, server or pool process compiles
    one again. Every process scans the installed packages for Streamlit components once."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        from kvviz.precompile import compile_all

        compile_all()
    scan_for_components_once()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The browser tests first. pytest-xdist's work stealing hands each worker an even share of the
    list in order and, when one runs dry, moves the end of the other's share: the browser tests, at
    the start of the first share, stay on one worker and share its one server (whose caches they
    fill for each other) and its one browser, and their longest runs do not end the suite."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/e2e/"))


def scan_for_components_once() -> None:
    """Each new AppTest scans the metadata of every installed package for Streamlit components (kvviz
    uses none): about a quarter of the CPU time of the page tests. Nothing is installed while the tests
    run, so the first scan's answer serves every later AppTest. The scanner is Streamlit's own, not
    public: tests/pages/test_streamlit_private.py fails the day AppTest stops calling it."""
    from streamlit.components.v2 import manifest_scanner

    if not hasattr(manifest_scanner.scan_component_manifests, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


@pytest.fixture(autouse=True)
def _fresh_streamlit_caches(request):
    """A test that runs the app in AppTest starts with empty Streamlit caches: they are
    process-global, and a page test that met another test's results (a library entry read before
    it was damaged, a replay already drawn) would test nothing. The rest never run a page: their
    modules use none of this file's AppTest helpers, and they neither import Streamlit nor clear.

    A module marked ``shared_caches`` only opens views from their URLs and reads what they show: no
    patched function, environment, upload store or clock. Its tests share the worker's caches, as
    the visitors of one server do, and so meet the cache-hit path, where a cached function's elements
    are replayed, as often as the miss."""
    if _runs_the_app(request.module) and not request.node.get_closest_marker("shared_caches"):
        import streamlit as st

        st.cache_data.clear()
        st.cache_resource.clear()
    yield


def _runs_the_app(module) -> bool:
    """Whether a test module runs the app in AppTest: it holds AppTest, this file's APP or one of its runners."""
    runners = (getattr(module, name, None) for name in ("open_page", "open_with_session_trace"))
    return (
        getattr(module, "AppTest", None) is not None
        or getattr(module, "APP", None) == APP
        or any(getattr(getattr(f, "__code__", None), "co_filename", None) == __file__ for f in runners)
    )


def open_page(stem: str, query: dict[str, str] | None = None, timeout: float = 180):
    """Run the app, switch to ``pages/<stem>.py`` (with URL query parameters) and return the AppTest.

    ``run()`` must come before ``switch_page``. The timeout is generous: a first view can meet a
    kernel call that the compile before the workers did not cover (a new kind of array) and compile
    it, which takes minutes on a loaded machine.
    """
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=timeout)
    at.run()
    for key, value in (query or {}).items():
        at.query_params[key] = value
    if stem != "home":
        at.switch_page(f"pages/{stem}.py")
    at.run()
    return at


def open_with_session_trace(stem: str, spec: dict, query: dict[str, str] | None = None, timeout: float = 180):
    """Run the app with ``spec`` as the session's trace (as the Trace page keeps it), then open
    ``pages/<stem>.py`` with URL ``query``: how a page meets a trace that was loaded elsewhere."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=timeout)
    at.session_state["kvviz_trace_spec"] = spec
    at.run()
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.switch_page(f"pages/{stem}.py").run()


LENGTHS_ONLY = {
    "kind": "upload",
    "data": b"timestamp,input_length,output_length\n0,100,5\n10,200,7\n",
    "block_size": 512,
    "name": "lengths only",
}
"""A session trace without block ids (arrivals and lengths only)."""


def shown(markdown: str) -> str:
    """The text a viewer reads from markdown that went through ``ui.kit.frame.plain`` (escapes removed)."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown)


def assert_clean(at) -> None:
    """No uncaught exception on the page."""
    assert not at.exception, [e.message for e in at.exception]


def limit_memory(monkeypatch, above: int) -> None:
    """``$KVVIZ_MEMORY_GIB`` set to ``above`` bytes more than this process holds now, with what it holds
    held still: a garbage collection or a trimmed heap during the test would otherwise free more than
    ``above`` and let through what the limit is there to refuse."""
    from kvviz.common import budget

    held = budget.resident()
    monkeypatch.setattr(budget, "resident", lambda: held)
    monkeypatch.setenv(budget.MEMORY_ENV, f"{(held + above) / budget.GIB:.9f}")

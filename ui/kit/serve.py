"""``make run``: compile every kernel, then serve the dashboard, warmed, and say when it is ready.

    .venv/bin/python -m ui.kit.serve [streamlit run options]

1. Every numba kernel is compiled (on a fresh checkout) or loaded from the disk cache
   (``kvviz.precompile``), saying how long it took; the server starts only after it, so no
   visitor waits for a compile.
2. Streamlit serves ``app.py`` in this process, through its own command line (``streamlit run``).
3. Once the server answers its health check, every view module is imported and the replay kernels
   are loaded, in this process, so that the first visitor of each page does not pay for the imports
   of plotly, pandas and the page's modules, nor for numba's loading of compiled code, and CacheGen's
   default levels are measured (the encodes and judging its first view would otherwise wait on). Then
   it prints the ready line with the time since start.

A visitor who arrives while step 3 runs is served at once; the imports it shares with step 3 are done
once (Python's import lock).
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys
import threading
import time
import urllib.request
from pathlib import Path

from kvviz.precompile import compile_and_say, say

ROOT = Path(__file__).resolve().parents[2]
HEALTH_TIMEOUT_S = 120.0


def port_of(options: list[str]) -> str:
    """The ``--server.port`` among Streamlit's options (``--server.port N`` or ``--server.port=N``), else 8501."""
    for i, option in enumerate(options):
        if option == "--server.port" and i + 1 < len(options):
            return options[i + 1]
        if option.startswith("--server.port="):
            return option.split("=", 1)[1]
    return "8501"


def healthy(url: str, timeout: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether the server at ``url`` answered its health check within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                return True
        time.sleep(0.2)
    return False


def warm() -> None:
    """Import every view module, load the replay kernels into this process, and measure CacheGen's
    default levels (its first view encodes three levels and judges them on the record-world model)."""
    import ui
    from kvviz import prefix_cache, vllm
    from kvviz.cachegen import levels
    from kvviz.eviction import replay

    for module in pkgutil.iter_modules(ui.__path__):
        if module.name != "serve":
            importlib.import_module(f"{ui.__name__}.{module.name}")
    for warm_up in (replay.warm_up, prefix_cache.warm_up, vllm.warm_up, levels.measure):
        warm_up()


def announce_ready(url: str, start: float) -> None:
    """Wait for the server, warm it, then print the ready line (or say that it did not answer)."""
    if not healthy(url):
        say(f"kvviz: the server has not answered {url}/_stcore/health in {HEALTH_TIMEOUT_S:.0f} s")
        return
    warm()
    say(f"kvviz: ready on {url} ({time.monotonic() - start:.1f} s after start)")


def main(options: list[str] | None = None) -> None:
    """Compile, then serve ``app.py`` with Streamlit ``options`` until the server stops."""
    from streamlit.web import cli

    options = sys.argv[1:] if options is None else options
    start = time.monotonic()
    if not compile_and_say("kvviz: cannot start"):  # a setting that leaves no room to run: one line
        sys.exit(2)
    url = f"http://localhost:{port_of(options)}"
    threading.Thread(target=announce_ready, args=(url, start), daemon=True).start()
    cli.main(["run", str(ROOT / "app.py"), *options], prog_name="streamlit")


if __name__ == "__main__":
    main()

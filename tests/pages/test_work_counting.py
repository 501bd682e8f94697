"""A page's progress bar drawn by the work's own ``(done, total)`` callback, inside a cached function:
it counts up with the time left, is emptied at the end, and a cache hit replays it without error."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

import ui.kit.work as work


class Bar:
    """What ``st.progress`` returns, recording each update."""

    def __init__(self, value: float, text: str) -> None:
        self.drawn, self.emptied = [(value, text)], False

    def progress(self, value: float, text: str) -> None:
        self.drawn.append((value, text))

    def empty(self) -> None:
        self.emptied = True


def test_the_bar_says_runs_done_of_the_total_and_the_time_left(monkeypatch):
    bars = []
    monkeypatch.setattr(work.st, "progress", lambda value, text: bars.append(Bar(value, text)) or bars[-1])
    with work.counting("Searching", "runs") as tell:
        tell(1, 4)
        tell(4, 4)
        tell(5, None)  # a total not known: the count alone
    (bar,) = bars
    assert bar.emptied and bar.drawn[0] == (0.0, "Searching…")
    assert bar.drawn[1][0] == 0.25 and re.fullmatch(r"Searching: 1 of 4 runs, about \d+ s left", bar.drawn[1][1])
    assert bar.drawn[2] == (1.0, "Searching: 4 of 4 runs, about 0 s left")
    assert bar.drawn[3] == (0.0, "Searching: 5 runs")


def app() -> None:
    import streamlit as st

    from ui.kit.work import counting

    @st.cache_data(show_spinner=False)
    def run(n: int) -> int:
        with counting("Searching", "runs") as tell:
            for done in range(1, n + 1):
                tell(done, n)
        return n

    st.write(f"result {run(3)}")


def test_a_cache_hit_replays_the_bar_and_empties_it():
    at = AppTest.from_function(app).run()
    assert not at.exception and at.markdown[0].value == "result 3" and not at.get("progress")
    at.run()  # the cached function is not called: its bar is replayed with its updates, then emptied
    assert not at.exception and at.markdown[0].value == "result 3" and not at.get("progress")

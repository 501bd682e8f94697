"""CPU seconds of each test, its server and its browser included: which tests to make cheaper.

On a loaded machine the suite is bound by CPU, not by waiting, so tests are ranked by the CPU time
they cost the machine: the test process's own, that of every process it started and reaped, and
what its live descendants (a Streamlit server, Playwright's driver, Chromium and its renderers,
a pool) spent meanwhile, read from ``/proc``. Each test is set up, run and torn down one at a time
in one pytest process, as a pytest-xdist worker runs its share, so a session fixture's cost (the
browser tests' server and browser) lands on the first test that needs it, as it does in the suite.

    python -m bench.bench_suite tests/e2e/test_links_browser.py -p no:randomly
    python -m bench.bench_suite --top 30 --json cpu.json tests/pages

Arguments other than ``--top`` and ``--json`` go to pytest. Only Linux (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

TICK = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.2


def _processes() -> dict[tuple[int, int], tuple[int, str, float]]:
    """Every process now: ``(pid, start tick) -> (parent pid, program, CPU seconds of it and its reaped
    children)``."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
        # fields[0] is stat's field 3: the parent is field 4, utime..cstime 14..17, the start time 22
        program = text[text.index("(") + 1 : text.rindex(")")]
        out[(int(name), int(fields[19]))] = (int(fields[1]), program, sum(int(f) for f in fields[11:15]) / TICK)
    return out


class TreeCpu:
    """CPU seconds spent by this process and every process it started, directly or not, so far.

    Each descendant is followed from the first look that finds it under this process (by pid and
    start time, so a reused pid is another process), with its own CPU time and its reaped children's.
    When one is gone, the process that reaped it holds its time: the parent it had at the last look,
    if that one is followed; then it counts 0 here. One this process reaped (a session's server at
    the end of the last test) keeps its time at the last look under its own kind, and that much is
    taken from this process's reaped children, so the server's time is not listed as the tests'
    own. Otherwise (it outlived its parent) its time at the last look stays. A background thread
    looks every ``SAMPLE_S`` seconds, so only what a process orphaned after the last look spent is
    missed; the thread's own CPU time is left out."""

    def __init__(self) -> None:
        self.me = os.getpid()
        self.seen: dict[tuple[int, int], tuple[int, str, float]] = {}
        self.gone: dict[tuple[int, int], tuple[str, float]] = {}
        self.reaped_here = 0.0  # CPU seconds, at the last look, of the followed children this process reaped
        self.sampler_cpu = 0.0
        self.lock = threading.RLock()
        self.stop = threading.Event()
        threading.Thread(target=self._sample_forever, daemon=True).start()

    def _sample_forever(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            self.look()
            usage = resource.getrusage(resource.RUSAGE_THREAD)
            self.sampler_cpu = usage.ru_utime + usage.ru_stime

    def look(self) -> None:
        with self.lock:
            now = _processes()
            children: dict[int, list[tuple[int, int]]] = {}
            for key, (ppid, _, _) in now.items():
                children.setdefault(ppid, []).append(key)
            found, todo = set(), list(children.get(self.me, []))
            while todo:
                key = todo.pop()
                found.add(key)
                todo.extend(children.get(key[0], []))
            alive = {pid for pid, _ in (found | (self.seen.keys() & now.keys()))} | {self.me}
            for key, (ppid, program, cpu) in self.seen.items():
                if key not in now:
                    self.gone[key] = (program, 0.0 if ppid in alive - {self.me} else cpu)
                    self.reaped_here += cpu if ppid == self.me else 0.0
            self.seen = {key: now[key] for key in found | (self.seen.keys() & now.keys())}

    def total(self) -> dict[str, float]:
        """CPU seconds so far by kind of program: ``tests`` (this process and the children it reaped),
        ``chromium``, ``playwright`` (its driver) and ``python`` (servers, commands, pools), ``other``."""
        with self.lock:  # no look between reading the reaped children's time and what to take from it
            self.look()
            own = resource.getrusage(resource.RUSAGE_SELF)
            reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
            reaped_cpu = reaped.ru_utime + reaped.ru_stime - self.reaped_here
            out = {"tests": own.ru_utime + own.ru_stime + reaped_cpu - self.sampler_cpu}
            followed = [(program, cpu) for _, program, cpu in self.seen.values()] + list(self.gone.values())
        for program, cpu in followed:
            kind = next((k for k, prefix in KINDS if program.startswith(prefix)), "other")
            out[kind] = out.get(kind, 0.0) + cpu
        return out


KINDS = (("chromium", "chrom"), ("chromium", "headless_shell"), ("playwright", "node"), ("python", "python"))


def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {kind: after[kind] - before.get(kind, 0.0) for kind in after}


@dataclass
class TestCost:
    nodeid: str
    cpu_s: float
    wall_s: float
    outcome: str
    by_kind: dict[str, float]


class CpuPerTest:
    """A pytest plugin that times each test's setup, call and teardown together."""

    def __init__(self, cpu: TreeCpu) -> None:
        self.cpu = cpu
        self.costs: list[TestCost] = []
        self._outcome: dict[str, str] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        cpu, wall = self.cpu.total(), time.perf_counter()
        yield
        by_kind = spent(cpu, self.cpu.total())
        outcome = self._outcome.pop(item.nodeid, "passed")
        self.costs.append(TestCost(item.nodeid, sum(by_kind.values()), time.perf_counter() - wall, outcome, by_kind))

    def pytest_runtest_logreport(self, report) -> None:
        if report.failed or (report.when == "call" and report.skipped):
            self._outcome[report.nodeid] = report.outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=40, help="how many of the costliest tests to list")
    parser.add_argument("--json", type=Path, help="write every test's cost here")
    args, pytest_args = parser.parse_known_args(argv)
    cpu = TreeCpu()
    plugin = CpuPerTest(cpu)
    start_cpu, start = cpu.total(), time.perf_counter()
    code = pytest.main(["-q", "-p", "no:xdist", *pytest_args], plugins=[plugin])
    total_cpu, total_wall = sum(spent(start_cpu, cpu.total()).values()), time.perf_counter() - start
    costs = sorted(plugin.costs, key=lambda c: -c.cpu_s)
    print(f"\n{'CPU s':>8} {'wall s':>8}  test (CPU s by program where others than the tests' own spent any)")
    for c in costs[: args.top]:
        parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(c.by_kind.items()) if k != "tests" and v >= 0.05)
        print(
            f"{c.cpu_s:8.1f} {c.wall_s:8.1f}  {c.nodeid}{'' if c.outcome == 'passed' else f' ({c.outcome})'}"
            + (f"  [tests {c.by_kind['tests']:.1f}, {parts}]" if parts else "")
        )
    tests_cpu = sum(c.cpu_s for c in costs)
    print(
        f"{len(costs)} tests: {tests_cpu:.1f} CPU s in the tests, {total_cpu:.1f} CPU s and {total_wall:.1f} s"
        f" wall for the whole run (collection and start-up included); load average {os.getloadavg()[0]:.1f}"
    )
    if args.json:
        args.json.write_text(json.dumps([asdict(c) for c in costs], indent=1))
    return int(code)


if __name__ == "__main__":
    sys.exit(main())

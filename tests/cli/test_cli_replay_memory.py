"""A replay that does not fit in the memory this process may use is refused before it starts: one line
naming what the replay needs, what is free and what to cut, exit 2. The limit is ``$KVVIZ_MEMORY_GIB``
(validated) set just above what the process holds: a library entry opens without a reading check, so
the replay's own estimate is what refuses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvviz.cli import main
from kvviz.common import budget
from kvviz.common.errors import InputError
from kvviz.traces import library
from kvviz.traces.workload import WorkloadConfig, generate
from tests.conftest import limit_memory

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = ["--model", "llama-3-8b", "--gpu", "h100"]


@pytest.fixture
def entry(tmp_path, monkeypatch) -> str:
    """A library entry of a synthetic trace (read when it was stored: opening it reads no text)."""
    monkeypatch.setenv(library.ROOT_ENV, str(tmp_path / "library"))
    trace = generate(WorkloadConfig(requests=2000, seed=5, block_size=64))
    return library.store(trace, "replayed").entry.id


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["stats", "@"], "the statistics of this trace"),
        (["hitcurve", "@"], "an eviction replay of this trace"),
        (["hitcurve", "@", "--cache", "prefix"], "a prefix-cache replay of this trace"),
        (["hitcurve", "@", "--cache", "vllm"], "a replay of vLLM's block pool over this trace"),
        (["tiers", "@", *DEPLOYMENT], "a tiered replay of this trace"),
        (["tiers", "@", *DEPLOYMENT, "--instances", "4", "--router", "cache-aware"], "the cluster's replay"),
        (["cluster", "@", "--instances", "2,8"], "the cluster's replay of this trace"),
        (["plan", "@", *DEPLOYMENT, "--target-p90-ttft", "1", "--dram-sizes", "64GiB"], "a tiered replay"),
        (["plan", "@", *DEPLOYMENT, "--target-p90-ttft", "1"], "a tiered replay of this trace"),
    ],
)
def test_a_replay_that_does_not_fit_is_one_line_before_it_starts(argv, what, entry, monkeypatch, capsys):
    limit_memory(monkeypatch, 2**20)
    assert main([entry if a == "@" else a for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"kvviz {argv[0]}: {what}") and "needs about" in err and "is free here; cut the trace" in err


def test_the_instances_are_counted(entry, monkeypatch, capsys):
    """Eight instances need more than two: the estimate names the instances as a way out."""
    from kvviz.traces.cli import resolve

    trace = resolve(entry)
    two, eight = (budget.replay_memory(budget.CLUSTER, trace, n, n) for n in (2, 8))
    assert eight.need > two.need and "fewer instances" in eight.advice


@pytest.mark.parametrize("value", ["lots", "0", "-1", "nan", "inf", "2e6"])
def test_a_memory_limit_that_is_not_a_size_is_refused_naming_it(value):
    res = subprocess.run(
        [sys.executable, "-m", "kvviz", "stats", str(ROOT / "assets" / "example_trace.jsonl")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, budget.MEMORY_ENV: value},
    )
    assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1, res.stderr
    assert f"the environment variable {budget.MEMORY_ENV} is {value!r}: give a number of GiB" in res.stderr


def test_a_limit_lowers_what_is_free_to_it_less_what_the_process_holds(monkeypatch):
    limit_memory(monkeypatch, 100 * 2**20)
    free = budget.free_memory()
    assert free is not None and free <= 101 * 2**20


def test_the_workers_are_bounded_by_the_same_limit(tmp_path, monkeypatch, capsys):
    """A limit that leaves room for one small replay but not for four worker processes refuses the four."""
    monkeypatch.setenv(library.ROOT_ENV, str(tmp_path / "library"))
    small = library.store(generate(WorkloadConfig(requests=50, seed=5)), "small").entry.id
    main(["plan", small, *DEPLOYMENT, "--target-p90-ttft", "1", "--dram-sizes", "64GiB", "--workers", "1"])
    capsys.readouterr()  # the modules a plan imports are loaded: what the process holds now stays
    limit_memory(monkeypatch, 200 * 2**20)
    argv = ["plan", small, *DEPLOYMENT, "--target-p90-ttft", "1", "--dram-sizes", "64GiB,128GiB", "--workers", "4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--workers 4: each worker needs about" in err and "give at most 1" in err, err


def test_a_need_and_a_free_memory_that_round_alike_are_said_in_mib(monkeypatch):
    monkeypatch.setattr(budget, "free_memory", lambda: 200 * 2**20)
    with pytest.raises(InputError) as refused:
        budget.check_memory(230 * 2**20, "a replay", "cut the trace")
    assert str(refused.value) == "a replay needs about 230 MiB of memory and 200 MiB is free here; cut the trace"

"""``python -m kvviz hitcurve``: the CSV it prints and the one-line errors it exits 2 with."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kvviz.cli import main
from kvviz.commands.hitcurve import rate_for
from kvviz.eviction.grid import parse_capacities
from kvviz.eviction.replay import hit_curve
from kvviz.traces import load_trace

EXAMPLE = "assets/example_trace.jsonl"


def test_prints_the_curve_as_csv(capsys):
    assert main(["hitcurve", EXAMPLE, "--policies", "lru,belady", "--capacities", "100,1k,inf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "policy,capacity,hits,accesses,hit_ratio"
    assert [line.split(",")[:2] for line in lines[1:]] == [
        ["lru", "100"],
        ["lru", "1000"],
        ["lru", "inf"],
        ["belady", "100"],
        ["belady", "1000"],
        ["belady", "inf"],
    ]
    expected = hit_curve(load_trace(EXAMPLE), ["lru"], parse_capacities("1k"))
    assert lines[2].split(",")[2] == str(expected["hits"].iloc[0])
    assert lines[3].split(",")[2] == lines[6].split(",")[2]  # infinite capacity: every policy alike


EXACT_CURVES = {"exact": ["--sample", "exact"], "prefix": ["--prefix"], "auto": []}


@pytest.fixture(scope="module")
def exact_curves() -> dict[str, list]:
    """Each exact curve's output, and whether pandas was imported before and after it was drawn, from one
    fresh interpreter drawing them in turn: pandas absent before a curve and present after it was
    imported by that curve, as it would be in an interpreter of its own."""
    script = (
        "import contextlib, io, json, sys; from kvviz.cli import main\n"
        "seen = {}\n"
        f"for name, options in {EXACT_CURVES!r}.items():\n"
        "    out, before = io.StringIO(), 'pandas' in sys.modules\n"
        "    with contextlib.redirect_stdout(out):\n"
        f"        main(['hitcurve', {EXAMPLE!r}, '--policies', 'lru,arc', *options])\n"
        "    seen[name] = [out.getvalue(), before, 'pandas' in sys.modules]\n"
        "print(json.dumps(seen))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", EXACT_CURVES)
def test_an_exact_curve_never_imports_pandas(name, exact_curves):
    # An exact block-cache curve is mostly start-up; pandas alone would add a third of a second
    # (docs/eviction.md, Speed), so the command reads and counts without it, also when the
    # default "auto" has to ask the sampler whether this trace is small enough to stay exact.
    out, before, after = exact_curves[name]
    assert not after, "pandas imported by an earlier curve" if before else f"pandas imported by {EXACT_CURVES[name]}"
    assert out.splitlines()[1].startswith("lru,")


def test_prefix_mode_and_coarser_blocks(capsys):
    main(["hitcurve", EXAMPLE, "--policies", "fifo", "--capacities", "300"])
    full = int(capsys.readouterr().out.splitlines()[1].split(",")[2])
    main(["hitcurve", EXAMPLE, "--policies", "fifo", "--capacities", "300", "--prefix"])
    prefix = int(capsys.readouterr().out.splitlines()[1].split(",")[2])
    assert prefix <= full
    main(["hitcurve", EXAMPLE, "--policies", "fifo", "--capacities", "inf", "--cache-block", "2"])
    coarse = capsys.readouterr().out.splitlines()[1].split(",")
    assert int(coarse[3]) < len(load_trace(EXAMPLE).blocks)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policies", "lru,mru"], "unknown policy 'mru'"),
        (["--capacities", "0"], "capacity '0' must be at least 1 block"),
        (["--capacities", "ten"], "capacity 'ten' is not a number"),
        (["--capacities", "1.5"], "whole number"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, args, message):
    assert main(["hitcurve", EXAMPLE, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_unreplayable_traces_exit_2(tmp_path, capsys):
    lengths = tmp_path / "lengths.csv"
    lengths.write_text("timestamp,input_length,output_length\n0,100,5\n")
    assert main(["hitcurve", str(lengths)]) == 2
    assert "no block ids" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["hitcurve", str(empty)]) == 2
    assert "empty" in capsys.readouterr().err


def test_a_sampled_curve_says_so_on_stderr_and_keeps_its_columns(capsys):
    assert main(["hitcurve", EXAMPLE, "--policies", "fifo,lru", "--capacities", "1k,inf", "--sample", "20%"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "policy,capacity,hits,accesses,hit_ratio,represented,rate,error_estimate",
        "fifo,1000,7545,30384,0.248321,true,0.2,0.025192",
        "fifo,inf,13221,30384,0.435130,true,0.2,0.000000",
        "lru,1000,8170,30384,0.268892,true,0.2,0.000000",
        "lru,inf,13221,30384,0.435130,true,0.2,0.000000",
    ]
    assert captured.err.splitlines()[1:] == [
        "  fifo: 0.025  not reliable at this rate at 1000 blocks: use --sample exact",  # exact: 7,280 hits
        "  lru: 0.000",
    ]
    assert captured.err.startswith("kvviz hitcurve: sampled at rate 0.2 (SHARDS-adj; LRU exact)")
    exact = hit_curve(load_trace(EXAMPLE), ["lru"], (1000,))
    assert exact["hits"].iloc[0] == 8170  # LRU stays exact
    assert main(["hitcurve", EXAMPLE, "--policies", "fifo", "--sample", "exact"]) == 0
    assert "sampled" not in capsys.readouterr().err
    assert main(["hitcurve", EXAMPLE, "--sample", "often"]) == 2
    assert "sample" in capsys.readouterr().err


def test_capacities_a_sample_cannot_represent_are_marked_and_flagged(capsys):
    """At 1% the example's 1,000 blocks are 10 sampled blocks: ARC needs 100 and SIEVE 2,000 (SIEVE's
    sampled 10,884 hits against an exact 9,304), so those rows say false and stderr says why."""
    assert (
        main(["hitcurve", EXAMPLE, "--policies", "lru,arc,sieve", "--capacities", "1000,20000,inf", "--sample", "1%"])
        == 0
    )
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "policy,capacity,hits,accesses,hit_ratio,represented,rate,error_estimate",
        "lru,1000,8170,30384,0.268892,true,0.01,0.000000",
        "lru,20000,13221,30384,0.435130,true,0.01,0.000000",
        "lru,inf,13221,30384,0.435130,true,0.01,0.000000",
        "arc,1000,9370,30384,0.308386,false,0.01,0.071534",
        "arc,20000,13221,30384,0.435130,true,0.01,0.000000",
        "arc,inf,13221,30384,0.435130,true,0.01,0.000000",
        "sieve,1000,10884,30384,0.358215,false,0.01,0.252483",
        "sieve,20000,13684,30384,0.450369,false,0.01,0.112432",
        "sieve,inf,13221,30384,0.435130,true,0.01,0.000000",
    ]
    assert captured.err.splitlines()[1:] == [
        "  lru: 0.000",
        "  arc: 0.000",
        "  sieve: none (the sample represents none of its finite capacities)",
        "kvviz hitcurve: capacity 1000 is below what a 1% sample can represent: 10 sampled blocks, and arc needs "
        "at least 100, sieve needs at least 2,000 (rows marked represented=false); use --sample exact",
        "kvviz hitcurve: capacity 20000 is below what a 1% sample can represent: 200 sampled blocks, and sieve "
        "needs at least 2,000 (rows marked represented=false); use --sample 0.1 or more, or exact",
    ]
    assert main(["hitcurve", EXAMPLE, "--policies", "sieve", "--capacities", "1000", "--sample", "exact"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "sieve,1000,9304,30384,0.306214"


@given(st.integers(1, 10**6), st.integers(2, 10**9))
def test_the_rate_suggested_for_a_capacity_represents_it(sampled_blocks, capacity):
    """Two significant digits, rounded up: at most 10% above the rate needed, never below it."""
    assume(sampled_blocks < capacity)
    needed = Fraction(sampled_blocks, capacity)
    suggested = rate_for(sampled_blocks, capacity)
    assert needed <= Fraction(suggested) <= needed * Fraction(11, 10)
    assert len(suggested.split("e")[0].replace(".", "").lstrip("0")) <= 2


def test_a_sampled_curve_with_a_model_has_gib_then_the_sampled_columns(capsys):
    assert (
        main(
            [
                "hitcurve",
                EXAMPLE,
                "--policies",
                "lru",
                "--capacities",
                "100,inf",
                "--sample",
                "0.5",
                "--model",
                "llama-3-8b",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines() == [
        "policy,capacity,hits,accesses,hit_ratio,capacity_gib,represented,rate,error_estimate",
        "lru,100,2539,30384,0.083564,6.2500,true,0.5,0.000000",
        "lru,inf,13221,30384,0.435130,inf,true,0.5,0.000000",
    ]


def test_a_block_curve_imports_only_what_it_needs():
    """Start-up is most of a short hitcurve run: other commands, the radix replay and the model
    presets stay unimported (a fresh interpreter, since this one has imported them all)."""
    import subprocess
    import sys

    code = (
        "import sys; from kvviz.cli import main; "
        f"main(['hitcurve', {EXAMPLE!r}, '--policies', 'lru', '--capacities', '100']); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('kvviz'))), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(done.stderr.split())
    assert "kvviz.commands.hitcurve" in loaded and "kvviz.eviction.replay" in loaded
    assert not loaded & {
        "kvviz.commands.blend_eval",
        "kvviz.commands.radix",
        "kvviz.cacheblend.blend",
        "kvviz.prefix_cache",
        "kvviz.common.hardware",
        "kvviz.traces.workload",
    }
    assert done.stdout.startswith("policy,capacity,hits")

"""``python -m kvviz hitcurve``: the CSV it prints and the one-line errors it exits 2 with."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvviz.cli import main
from kvviz.eviction import hit_curve, parse_capacities
from kvviz.trace import load_trace

EXAMPLE = "assets/example_trace.jsonl"


def test_prints_the_curve_as_csv(capsys):
    assert main(["hitcurve", EXAMPLE, "--policies", "lru,belady", "--capacities", "100,1k,inf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "policy,capacity,hits,accesses,hit_ratio"
    assert [line.split(",")[:2] for line in lines[1:]] == [
        ["lru", "100"], ["lru", "1000"], ["lru", "inf"], ["belady", "100"], ["belady", "1000"], ["belady", "inf"]]
    expected = hit_curve(load_trace(EXAMPLE), ["lru"], parse_capacities("1k"))
    assert lines[2].split(",")[2] == str(expected["hits"].iloc[0])
    assert lines[3].split(",")[2] == lines[6].split(",")[2]        # infinite capacity: every policy alike


@pytest.mark.parametrize("options", [["--sample", "exact", "--prefix"], []], ids=["exact", "auto"])
def test_an_exact_curve_never_imports_pandas(options):
    # An exact block-cache curve is mostly start-up; pandas alone would add a third of a second
    # (docs/eviction.md, Speed), so the command reads and counts without it, also when the
    # default "auto" has to ask the sampler whether this trace is small enough to stay exact.
    script = ("import sys; from kvviz.cli import main; "
              f"main(['hitcurve', {EXAMPLE!r}, '--policies', 'lru,arc', *{options!r}]); "
              "sys.exit(3 if 'pandas' in sys.modules else 0)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("lru,")


def test_prefix_mode_and_coarser_blocks(capsys):
    main(["hitcurve", EXAMPLE, "--policies", "fifo", "--capacities", "300"])
    full = int(capsys.readouterr().out.splitlines()[1].split(",")[2])
    main(["hitcurve", EXAMPLE, "--policies", "fifo", "--capacities", "300", "--prefix"])
    prefix = int(capsys.readouterr().out.splitlines()[1].split(",")[2])
    assert prefix <= full
    main(["hitcurve", EXAMPLE, "--policies", "fifo", "--capacities", "inf", "--cache-block", "2"])
    coarse = capsys.readouterr().out.splitlines()[1].split(",")
    assert int(coarse[3]) < len(load_trace(EXAMPLE).blocks)


@pytest.mark.parametrize(("args", "message"), [
    (["--policies", "lru,mru"], "unknown policy 'mru'"),
    (["--capacities", "0"], "capacity '0' must be at least 1 block"),
    (["--capacities", "ten"], "capacity 'ten' is not a number"),
    (["--capacities", "1.5"], "whole number"),
])
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


def test_sample_rate_says_so_on_stderr_and_keeps_the_csv(capsys):
    assert main(["hitcurve", EXAMPLE, "--policies", "fifo,lru", "--capacities", "1k,inf", "--sample", "20%"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "policy,capacity,hits,accesses,hit_ratio" and len(lines) == 5
    assert "sampled at rate 0.2" in captured.err
    exact = hit_curve(load_trace(EXAMPLE), ["lru"], (1000,))
    assert lines[3].split(",")[2] == str(exact["hits"].iloc[0])            # LRU stays exact
    assert main(["hitcurve", EXAMPLE, "--policies", "fifo", "--sample", "exact"]) == 0
    assert "sampled" not in capsys.readouterr().err
    assert main(["hitcurve", EXAMPLE, "--sample", "often"]) == 2
    assert "sample" in capsys.readouterr().err


def test_a_block_curve_imports_only_what_it_needs():
    """Start-up is most of a short hitcurve run: other commands, the radix replay and the model
    presets stay unimported (a fresh interpreter, since this one has imported them all)."""
    import subprocess
    import sys

    code = ("import sys; from kvviz.cli import main; "
            f"main(['hitcurve', {EXAMPLE!r}, '--policies', 'lru', '--capacities', '100']); "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('kvviz'))), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = set(done.stderr.split())
    assert "kvviz.commands.hitcurve" in loaded and "kvviz.eviction" in loaded
    assert not loaded & {"kvviz.commands.blend_eval", "kvviz.commands.radix", "kvviz.blend", "kvviz.prefix_cache",
                         "kvviz.hardware", "kvviz.workload"}
    assert done.stdout.startswith("policy,capacity,hits")

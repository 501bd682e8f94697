"""No option ignored: an option that does not apply to the run asked for is refused with one line
naming it (exit 2, before any work), and a user's string of any length is echoed cut short."""

from __future__ import annotations

import pytest

from kvviz.cli import main
from tests import fixtures as fx

EXAMPLE = "assets/example_trace.jsonl"
MAPPED = "@mapped.csv"  # tests/fixtures' CSV with columns t_us, prompt, completion, blocks
DATES = b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,100,5\n2023-11-16 18:15:47,100,5\n"
MAP = "arrival=t_us,input=prompt,output=completion"
LONG = "a" * 10_000
CUT = "a" * 40 + "… (10,000 characters)"

REFUSED = [
    # hitcurve: prefix counting is a block-cache option; vLLM's pool is not sampled
    (
        ["hitcurve", EXAMPLE, "--sample", "0.01", "--cache", "vllm"],
        "--sample applies to --cache block or prefix; vLLM's block pool replays exactly",
    ),
    (
        ["hitcurve", EXAMPLE, "--prefix", "--cache", "prefix"],
        "--prefix applies to --cache block; every hit of the prefix cache is a prefix hit",
    ),
    (
        ["hitcurve", EXAMPLE, "--prefix", "--sample", "0.01"],
        "--sample applies to counting every block; --prefix counts exactly (a prefix needs every block of its request)",
    ),
    # radix: a script or a trace; HiCache's options with a radix cache
    (
        ["radix", "preset:ops", "--trace", EXAMPLE],
        "give a script or --trace, not both: --trace replays the trace, and the script 'preset:ops' would be ignored",
    ),
    (
        ["radix", "--trace", EXAMPLE, "--totals-only"],
        "--totals-only applies to a script; with --trace the totals are all that is printed",
    ),
    (
        ["radix", "--trace", EXAMPLE, "--no-auto-ack"],
        "--no-auto-ack applies to a script's 'ack' steps; a trace has none, so its transfers are acknowledged as "
        "they end",
    ),
    (
        ["radix", "--trace", EXAMPLE, "--host", "100"],
        "--host applies to --cache hiradix (the CPU tier); this replay uses radix",
    ),
    (
        ["radix", "preset:ops", "--cache", "radix", "--write-policy", "write_back"],
        "--write-policy applies to --cache hiradix (the CPU tier); this replay uses radix",
    ),
    (
        ["radix", "preset:ops", "--no-deferral", "--threshold", "5"],
        "--threshold is the deferral threshold, and deferral is off in this replay",
    ),
    (["radix", "preset:ops", "--requests", "5"], "--requests applies to --trace"),
    (["radix", "preset:ops", "--columns", MAP], "--columns applies to reading a trace, and no --trace was given"),
    # overload: Poisson arrivals or a trace's; the predictor's option
    (
        ["overload", "--trace", EXAMPLE, "--load", "3"],
        "--load applies to Poisson arrivals; --trace replays the trace's own",
    ),
    (
        ["overload", "--trace", EXAMPLE, "--seed", "0"],
        "--seed applies to Poisson arrivals; --trace replays the trace's own",
    ),
    (["overload", "--duration", "20", "--speedup", "3"], "--speedup applies to --trace (the replay's speed-up)"),
    (
        ["overload", "--duration", "20", "--policy", "early", "--t-d", "2"],
        "--t-d applies to --policy predict (the predictor's decode time), not early",
    ),
    (
        ["overload", "--duration", "20", "--time-unit", "s"],
        "--time-unit applies to reading a trace, and no --trace was given",
    ),
    # schedule: the synthetic workload's options, kvcentric's
    (
        ["schedule", "--trace", EXAMPLE, "--requests", "30"],
        "--requests applies to the synthetic workload; --trace replays the trace",
    ),
    (
        ["schedule", "--trace", EXAMPLE, "--scheduler", "cache", "--seed", "3"],
        "--seed seeds the synthetic workload and the random scheduler, and this run has neither",
    ),
    (
        ["schedule", "--requests", "30", "--scheduler", "balance", "--bandwidth", "100"],
        "--bandwidth applies to --scheduler kvcentric, not balance",
    ),
    (
        ["schedule", "--requests", "30", "--skip-bad-rows"],
        "--skip-bad-rows applies to reading a trace, and no --trace was given",
    ),
    # codec: the synthetic KV's options, the model's
    (
        ["codec", "--source", "model", "--channels", "8"],
        "--channels applies to --source synthetic; the model's KV has its own shape",
    ),
    (["codec", "--documents", "5"], "--documents applies to --source model"),
    (["codec", "--channels", "8", "--outliers", "9"], "--outliers 9 is more than the 8 channels per layer"),
    # stream: random bandwidth traces, the paper rule
    (
        ["stream", "--bandwidth", "step", "--traces", "10"],
        "--traces applies to random bandwidth traces (persistent, iid); step is one trace",
    ),
    (
        ["stream", "--bandwidth", "iid", "--persistence", "0.5"],
        "--persistence applies to --bandwidth persistent, not iid",
    ),
    (
        ["stream", "--policy", "text", "--initial-gbps", "2"],
        "--initial-gbps applies to --policy paper (its first estimate), not text",
    ),
    (
        ["stream", "--policy", "level1", "--recompute", "fixed"],
        "--recompute is the cost of sending text, which --policy level1 never does",
    ),
    # blend-eval: options of the methods left out
    (
        ["blend-eval", "--method", "full_reuse", "--ratios", "0.1"],
        "--ratios applies to --method cacheblend and random, which this run leaves out",
    ),
    (
        ["blend-eval", "--method", "random", "--variant", "k_layer1"],
        "--variant applies to --method cacheblend, which this run leaves out",
    ),
    # generate: a kind's knobs with its share at 0
    (
        ["generate", "--share-doc-qa", "0", "--documents", "5"],
        "--documents shapes only the requests of --share-doc-qa, which is 0",
    ),
    (
        ["generate", "--share-chat", "0.0", "--think-time-s", "5"],
        "--think-time-s shapes only the requests of --share-chat, which is 0",
    ),
    # kvsize
    (["kvsize", "--list", "--tokens", "100"], "--tokens applies to one model; --list lists them all"),
    # reading a trace: a column map is for CSV, each role once; a library entry was read at import
    (
        ["stats", EXAMPLE, "--columns", MAP],
        "--columns applies to CSV files; this file is Mooncake JSONL (FAST'25), which has no columns",
    ),
    (
        ["stats", EXAMPLE, "--format", "qwen", "--columns", MAP],
        "--columns applies to CSV files; --format qwen has no columns",
    ),
    (
        ["stats", MAPPED, "--columns", "arrival=t_us,input=prompt,arrival=blocks,output=completion"],
        "--columns gives arrival twice ('t_us', then 'blocks')",
    ),
    (
        ["stats", MAPPED, "--columns", "arrival=t_us,inputs=prompt,output=completion"],
        "--columns names an unknown role 'inputs'; the roles are arrival, input, output, hash_ids",
    ),
    (["stats", MAPPED, "--columns", "arrival=t_us,input= ,output=completion"], "--columns gives input no column name"),
    (
        ["stats", MAPPED, "--columns", "arrival=t_us,prompt,output=completion"],
        "--columns expects role=column, got 'prompt'",
    ),
    (["stats", MAPPED, "--columns", "arrival=t_us,output=completion"], "--columns needs input too"),
    (
        ["stats", "@dates.csv", "--time-unit", "s"],
        "line 2, field 'TIMESTAMP': a time unit applies to numbers; these "
        "arrival times are date-times, so leave the time unit out",
    ),
    (
        ["hitcurve", "0123456789abcdef", "--block-size", "16"],
        "--block-size applies to files; a library entry was read when it was imported",
    ),
    # a 10 kB argument is named by its start
    (["stats", LONG], f"cannot open trace file '{CUT}': File name too long"),
    (["hitcurve", "--cache", "prefix", "x" + LONG[1:]], f"cannot open trace file 'x{CUT[1:]}': File name too long"),
    (
        ["schedule", "--trace", "b" * 200],
        f"cannot open trace file '{'b' * 40}… (200 characters)': no such file, nor "
        "a library id (python -m kvviz import --list)",
    ),
    (["radix", LONG], f"cannot open script '{CUT}': File name too long"),
    (
        ["hitcurve", EXAMPLE, "--policies", LONG],
        f"field 'policies': unknown policy '{CUT}'; choose from lru, fifo, "
        "lfu, length_aware, sieve, arc, s3fifo, belady",
    ),
    (
        ["hitcurve", EXAMPLE, "--cache", LONG],
        f"argument --cache: invalid choice: '{CUT}' (choose from 'block', 'prefix', 'vllm')",
    ),
]


def _ids(case) -> str:
    argv, _ = case
    return " ".join(a if len(a) < 30 else a[:10] + "…" for a in argv)


@pytest.mark.parametrize(("argv", "line"), REFUSED, ids=[_ids(c) for c in REFUSED])
def test_an_option_that_does_not_apply_is_refused_on_one_line(argv, line, tmp_path, capsys):
    (tmp_path / "mapped.csv").write_bytes(fx.MAPPED_CSV)
    (tmp_path / "dates.csv").write_bytes(DATES)
    argv = [a.replace("@", f"{tmp_path}/") for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"kvviz {argv[0]}: {line}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["hitcurve", EXAMPLE, "--policies", "lru", "--capacities", "100", "--sample", "exact"],
        ["hitcurve", EXAMPLE, "--policies", "lru", "--capacities", "100", "--prefix"],
        ["hitcurve", EXAMPLE, "--policies", "lru", "--capacities", "100", "--cache", "prefix"],
        ["radix", "--trace", EXAMPLE, "--requests", "20", "--cache", "hiradix", "--host", "40000", "--threshold", "5"],
        ["radix", "preset:chat", "--cache", "radix", "--totals-only"],
        ["overload", "--duration", "20", "--policy", "predict", "--t-d", "2", "--seed", "3"],
        ["schedule", "--requests", "30", "--scheduler", "kvcentric", "--seed", "1", "--bandwidth", "100"],
        ["stats", "@mapped.csv", "--columns", MAP + ",hash_ids=blocks", "--format", "csv"],
        ["generate", "--requests", "5", "--share-chat", "0", "--documents", "5", "--oneshot-tokens", "100"],
    ],
    ids=lambda argv: " ".join(argv[:1] + argv[2:]),
)
def test_options_that_apply_still_run(argv, tmp_path, capsys):
    (tmp_path / "mapped.csv").write_bytes(fx.MAPPED_CSV)
    assert main([a.replace("@", f"{tmp_path}/") for a in argv]) == 0
    assert capsys.readouterr().err == ""


def test_an_explicit_block_policy_list_is_not_swapped_for_the_prefix_cache_default(capsys):
    """The default policies differ by cache; an explicit list equal to the block default was once
    taken for "not given" and replaced by the prefix cache's six."""
    assert (
        main(
            [
                "hitcurve",
                EXAMPLE,
                "--cache",
                "prefix",
                "--policies",
                "lru,fifo,lfu,length_aware,sieve,arc,s3fifo,belady",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err == (
        "kvviz hitcurve: field 'policies': unknown prefix-cache policy 'length_aware'; "
        "choose from lru, lfu, fifo, mru, filo, slru\n"
    )


def test_a_refusal_comes_before_the_work(monkeypatch, capsys):
    import kvviz.traces.cli

    def never(*args, **kwargs):
        raise AssertionError("the trace was read before the options were checked")

    monkeypatch.setattr(kvviz.traces.cli, "load_trace", never)
    assert main(["radix", "preset:ops", "--trace", EXAMPLE]) == 2
    assert main(["overload", "--trace", EXAMPLE, "--mean-input", "10"]) == 2
    assert main(["schedule", "--trace", EXAMPLE, "--requests", "10"]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 3


def test_options_left_out_take_the_generator_defaults(capsys):
    from kvviz.traces.workload import WorkloadConfig, generate

    assert main(["generate", "--seed", "3", "--requests", "50"]) == 0
    assert capsys.readouterr().out == generate(WorkloadConfig(seed=3, requests=50)).to_jsonl()

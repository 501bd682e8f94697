"""The ``stream`` and ``codec`` commands: tables, summaries, and one-line errors with exit 2."""

from __future__ import annotations

from kvviz.cli import main


def test_stream_prints_the_chunk_table_and_the_summary(capsys):
    assert main(["stream", "--bandwidth", "step", "--slo", "1", "--policy", "paper"]) == 0
    out = capsys.readouterr().out
    assert "level3" in out and "text" in out
    assert "paper: TTFT 0.924 s, SLO 1 s met" in out
    assert "violation_rate" in out and "Levels measured (sizes encoded from a synthetic KV chunk" in out


def test_stream_all_policies_over_random_traces(capsys):
    assert main(["stream", "--bandwidth", "iid", "--slo", "0.5", "--policy", "all", "--traces", "200"]) == 0
    out = capsys.readouterr().out
    for policy in ("paper", "artifact", "level1", "quant8", "text", "oracle"):
        assert f"{policy}: TTFT" in out
    assert "Over 200 trace(s)" in out


def test_stream_reads_a_csv(tmp_path, capsys):
    path = tmp_path / "bw.csv"
    path.write_text("time_s,gbps\n0,2\n0.5,8\n")
    assert main(["stream", "--bandwidth", str(path), "--policy", "artifact"]) == 0
    assert "bw.csv" in capsys.readouterr().out


def test_stream_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["stream", "--slo", "0"]) == 2
    assert "argument --slo: must be in (0," in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("0,5\n1,-1\n")
    assert main(["stream", "--bandwidth", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and err.count("\n") == 1
    assert main(["stream", "--bandwidth", str(tmp_path / "missing.csv")]) == 2
    assert main(["stream", "--policy", "fastest"]) == 2
    assert main(["stream", "--chunk", "20000"]) == 2
    assert "larger than the context" in capsys.readouterr().err


def test_work_over_the_budget_is_refused_before_it_starts(capsys):
    assert main(["stream", "--traces", "20000", "--context", "1000000", "--chunk", "1000", "--documents", "20"]) == 2
    err = capsys.readouterr().err
    assert "over the limit of 300 s" in err and "random traces" in err and err.count("\n") == 1
    assert main(["codec", "--layers", "32", "--tokens", "65536", "--channels", "1024"]) == 2
    err = capsys.readouterr().err
    assert "codec study" in err and "over the limit" in err and "layers, tokens or channels" in err


def test_codec_prints_the_ablation(capsys):
    assert main(["codec", "--rho", "0.5", "--layers", "2", "--tokens", "128", "--channels", "16"]) == 0
    out = capsys.readouterr().out
    assert "variance raw/delta" in out and "zlib on fp16" in out and "MISMATCH" not in out
    assert main(["codec", "--rho", "1.5"]) == 2
    assert "rho" in capsys.readouterr().err


def test_codec_on_the_record_world_model(capsys, monkeypatch):
    import kvviz.cacheblend.model as model_module

    stand_in = model_module.Model(model_module.Config(), model_module.init_params(model_module.Config(), seed=0))
    monkeypatch.setattr(model_module, "load_model", lambda path=None: stand_in)
    assert main(["codec", "--source", "model", "--documents", "10"]) == 0
    out = capsys.readouterr().out
    assert "Record-world model KV (4, 2, 240, 64), 120 questions" in out and "accuracy" in out

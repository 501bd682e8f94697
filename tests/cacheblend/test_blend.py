"""CacheBlend on the record-world model: caches, selection, metrics, controller and the CLI."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from kvviz.cacheblend import blend
from kvviz.cacheblend.model import WEIGHTS, Config, Model, forward, init_params, load_model
from kvviz.cacheblend.record_world import sample_documents, with_questions
from kvviz.cli import main
from kvviz.common.errors import InputError

RANDOM = Model(Config(), init_params(Config(), 11))
trained = pytest.mark.skipif(not WEIGHTS.exists(), reason="shipped weights missing")


@pytest.fixture(scope="module")
def shipped():
    model = load_model()
    docs = sample_documents(100, 777)
    return model, blend.setup(model, docs, 5)


def test_chunk_cache_equals_full_prefill_when_one_chunk_covers_the_document():
    tokens = sample_documents(3, 0).tokens
    full, whole = blend.full_prefill_kv(RANDOM, tokens), blend.chunk_kv(RANDOM, tokens, 24)
    np.testing.assert_array_equal(whole.k, full.k)
    np.testing.assert_array_equal(whole.v, full.v)


@settings(max_examples=12)
@given(chunk_len=st.integers(1, 24), seed=st.integers(0, 100))
def test_rope_shift_makes_the_first_chunk_and_layer_zero_exact(chunk_len, seed):
    tokens = sample_documents(2, seed).tokens
    full, reused = blend.full_prefill_kv(RANDOM, tokens), blend.chunk_kv(RANDOM, tokens, chunk_len)
    np.testing.assert_allclose(reused.k[:, :, :, :chunk_len], full.k[:, :, :, :chunk_len], atol=1e-5)
    np.testing.assert_allclose(reused.k[0], full.k[0], atol=1e-4)  # layer 0: K moved by rotation only
    np.testing.assert_array_equal(reused.v[0], full.v[0])


def test_recomputing_every_token_at_every_layer_is_full_prefill():
    tokens = sample_documents(4, 1).tokens
    full, reused = blend.full_prefill_kv(RANDOM, tokens), blend.chunk_kv(RANDOM, tokens, 5)
    res = blend.selective_recompute(RANDOM, tokens, reused, 5, [24, 24, 24, None])
    np.testing.assert_allclose(res.kv.k, full.k, atol=1e-5)
    np.testing.assert_allclose(res.kv.v, full.v, atol=1e-5)
    assert res.computed[1:].all()


def test_answer_matches_a_plain_forward_over_document_and_question():
    docs = sample_documents(6, 2)
    predicted = blend.answer(RANDOM, blend.full_prefill_kv(RANDOM, docs.tokens), docs)
    for record in (0, 5, 11):
        tokens, answer_at, _ = with_questions(docs, np.full((docs.n, 1), record))
        expected = np.argmax(forward(RANDOM, tokens).logits[:, answer_at[0]], axis=-1)
        np.testing.assert_array_equal(predicted[:, record], expected)


def test_keep_schedules():
    assert blend.keep_schedule(blend.VARIANTS["paper"], 0.2, 24, 4) == [6, 5, 4, None]
    assert blend.keep_schedule(blend.VARIANTS["v_layer1"], 0.2, 24, 4) == [None, 5, None, None]
    assert blend.keep_schedule(blend.VARIANTS["paper"], 1.0, 24, 4) == [24, 24, 18, None]
    assert blend.keep_schedule(blend.VARIANTS["paper"], 0.0, 24, 4) == [0, 0, 0, None]


def test_gradual_selection_shrinks_and_nests():
    tokens = sample_documents(5, 3).tokens
    res = blend.blend(RANDOM, tokens, 5, 0.25)
    counts = res.computed.sum(axis=2)
    # r·N = 6: 1.25·6 = 7.5 -> 8 carried past layer 0 and recomputed at layer 1, then 6, then 4.5 -> 5
    assert counts[:, 0].tolist() == [8, 8, 6, 5]
    assert np.all(res.computed[3] <= res.computed[2]) and np.all(res.computed[2] <= res.computed[1])


def test_one_shot_variants_compute_layers_zero_and_one_in_full():
    tokens = sample_documents(3, 4).tokens
    res = blend.blend(RANDOM, tokens, 5, 0.2, "k_layer1")
    assert res.computed[0].all() and res.computed[1].all()
    assert res.computed[2].sum(axis=1).tolist() == [5, 5, 5] and np.array_equal(res.computed[2], res.computed[3])


def test_bad_inputs_are_input_errors():
    tokens = sample_documents(1, 0).tokens
    with pytest.raises(InputError, match=r"ratio must be in \[0, 1\]"):
        blend.blend(RANDOM, tokens, 5, 1.5)
    with pytest.raises(InputError, match="variant"):
        blend.blend(RANDOM, tokens, 5, 0.2, "nope")
    with pytest.raises(InputError, match="chunk length"):
        blend.setup(RANDOM, sample_documents(1, 0), 0)


@settings(max_examples=25)
@given(seed=st.integers(0, 10_000))
def test_spearman_rows_agrees_with_scipy(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(3, 15)), rng.normal(size=(3, 15))
    ours = blend.spearman_rows(x, y)
    for row in range(3):
        assert ours[row] == pytest.approx(spearmanr(x[row], y[row]).statistic, abs=1e-12)


def test_controller_reproduces_exercise_8():
    # 32 layers, load 10 ms, prefill 20 ms per layer -> r = 50%, TTFT 320 ms vs 640 ms
    got = blend.plan(0.010, 0.020, 32)
    assert got.ratio == pytest.approx(0.5) and got.ttft_blend == pytest.approx(0.32)
    assert got.ttft_full == pytest.approx(0.64) and got.reuse_pays
    assert blend.plan(0.001, 0.020, 32).ratio == blend.R_MIN  # never below the 15% floor
    slow = blend.plan(0.030, 0.020, 32)
    assert slow.ratio == 1.0 and not slow.reuse_pays and slow.ttft_blend == pytest.approx(0.64)


def test_controller_presets_match_the_papers_per_layer_examples():
    # CacheBlend §5: LLaMA-7B at 4K, 15% recompute ~3 ms vs NVMe load ~16 ms; 70B: ~7 ms vs ~4 ms
    seven = blend.loading_controller(blend.SERVING_MODELS["7B MHA"], 4096, 4.8)
    seventy = blend.loading_controller(blend.SERVING_MODELS["70B GQA"], 4096, 4.8)
    assert 2.5e-3 < 0.15 * seven.prefill < 3.5e-3 and 13e-3 < seven.load < 17e-3
    assert 5.5e-3 < 0.15 * seventy.prefill < 8e-3 and 3e-3 < seventy.load < 4.5e-3
    assert blend.SERVING_MODELS["70B GQA"].kv_bytes_per_token_layer() * 80 == 327_680  # exercise 1
    with pytest.raises(InputError, match="bandwidth"):
        blend.loading_controller(blend.SERVING_MODELS["7B MHA"], 4096, 0)


def test_deviation_is_zero_at_layer_zero_under_full_reuse():
    s = blend.setup(RANDOM, sample_documents(4, 5), 5)
    dev = blend.kv_deviation(s.reused, s.full)
    assert dev[0].max() < 1e-6 and dev[1:, :, 5:].max() > 1e-3
    assert dev[:, :, :5].max() < 1e-6  # the first chunk is a true prefix


@trained
def test_shipped_model_answers_every_fresh_document_under_full_prefill(shipped):
    model, s = shipped
    assert np.mean(blend.answer(model, s.full, s.docs) == s.docs.values) == 1.0


@trained
def test_full_reuse_breaks_only_cut_records_and_cacheblend_repairs_them(shipped):
    model, s = shipped
    table = blend.evaluate(model, s, (0.2,), variant="paper", seed=1).set_index("method")
    assert table.loc["full_reuse", "acc_cut"] < 0.3 and table.loc["full_reuse", "acc_uncut"] > 0.95
    assert table.loc["cacheblend", "acc_cut"] >= 0.95  # the lecture's 99.4%, within the bar the page is held to
    assert table.loc["cacheblend", "acc_cut"] > table.loc["random", "acc_cut"] + 0.4
    assert table.loc["prefix", "acc_all"] == 1.0 and table.loc["prefix", "ratio"] == pytest.approx(19 / 24)


def test_top_share_counts_the_largest_round_fraction_of_tokens():
    dev = np.array([[10.0, 0, 0, 0, 0, 0, 0, 0, 0, 10], [1.0] * 10, [0.0] * 10])
    # 15% of 10 tokens rounds to 2: the two largest of each row
    np.testing.assert_allclose(blend.top_share(dev, 0.15), [1.0, 0.2, np.nan])
    assert blend.top_share(dev[:2], 0.5).tolist() == [1.0, 0.5]


def test_deviation_stats_are_per_layer_from_layer_one_with_chunk_starts_apart():
    s = blend.setup(RANDOM, sample_documents(6, 5), 5)
    stats = blend.deviation_stats(RANDOM, s, 0.2)
    dev = blend.kv_deviation(s.reused, s.full).astype(np.float64)
    assert list(stats.layer_share) == [1, 2, 3] and list(stats.spearman) == [(1, 2), (2, 3)]
    for layer in (1, 2, 3):
        expected = np.mean(blend.top_share(dev[layer], 0.15))
        assert stats.layer_share[layer] == pytest.approx(expected)
        starts = dev[layer][:, [5, 10, 15, 20]].sum() / dev[layer].sum()
        assert stats.start_share[layer] == pytest.approx(starts)
    assert stats.top_share == pytest.approx(np.mean(list(stats.layer_share.values())))


@trained
def test_deviation_is_concentrated_and_consistent_across_layers(shipped):
    model, s = shipped
    stats = blend.deviation_stats(model, s, 0.2)
    # Shipped weights, layer by layer: the top 15% of tokens carry ~78% at layer 1, ~34% at layers 2-3
    # (notes: 98%); rank correlation ~0.25 (layers 1-2), ~0.8 (2-3) (notes: 0.88-0.93); the chunk
    # starts carry most of layer 1's deviation and a quarter of the deeper layers'. The first
    # selection holds every cut value (notes: 99%), the last ~80%. The concentration and the rank
    # correlation are checked against what these weights do, not the notes' numbers they miss.
    assert stats.layer_share[1] > 0.7 and min(stats.layer_share.values()) > 2 * 0.15
    assert stats.start_share[1] > 0.7 and stats.start_share[3] < 0.5
    assert stats.spearman[(2, 3)] > 0.6 and stats.spearman[(1, 2)] > 0
    assert stats.catch_first >= 0.99 and stats.catch_final > 0.7


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["blend-eval", *args])
    return code, out.getvalue(), err.getvalue()


@trained
def test_cli_prints_the_csv_the_issue_specifies():
    code, out, _ = _cli("--ratios", "0,0.2", "--docs", "20", "--chunk-len", "5")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0] == "method,ratio,acc_cut,acc_uncut,acc_all"
    methods = [line.split(",")[0] for line in lines[1:]]
    assert methods == ["full_prefill", "full_reuse", "prefix", "cacheblend", "cacheblend", "random", "random"]
    code, out, _ = _cli("--ratios", "0.1", "--docs", "5", "--method", "random")
    assert code == 0 and out.strip().splitlines()[1].startswith("random,0.1000,")


@pytest.mark.parametrize(
    "args, message",
    [
        (("--ratios", "0,1.5"), r"ratio must be in \[0, 1\], got 1.5"),
        (("--ratios", "a,b"), "comma-separated numbers"),
        (("--chunk-len", "0"), r"argument --chunk-len: must be in 1\.\."),
        (("--docs", "0"), r"argument --docs: must be in 1\.\."),
        (("--weights", "/nonexistent/w.npz"), "python -m kvviz.cacheblend.train"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(args, message):
    code, out, err = _cli(*args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert pytest.importorskip("re").search(message, err)


def test_probe_averages_deviation_by_place_in_chunk_after_the_first_chunk():
    from kvviz.cacheblend.probe import by_chunk_position, main

    dev = np.arange(2 * 3 * 9, dtype=float).reshape(2, 3, 9)  # chunks of 3: positions 3..8 count
    np.testing.assert_allclose(by_chunk_position(dev, 3), [[13.5, 14.5, 15.5], [40.5, 41.5, 42.5]])
    with redirect_stderr(io.StringIO()):
        assert main(["--chunk-len", "0"]) == 2

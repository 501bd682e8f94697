"""The record-world model as a codec source: layout round trip and answers over decoded KV."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.cacheblend.model import Config, Model, init_params
from kvviz.cachegen import compare, model_kv


@pytest.fixture(scope="module")
def random_model():
    return Model(Config(), init_params(Config(), seed=0))


def test_layout_round_trips(random_model):
    kv, ctx = model_kv.record_world_kv(5, 0, random_model)
    assert kv.shape == (4, 2, 5 * 24, 64)
    k, v = model_kv.from_codec(kv, ctx.shape)
    assert np.array_equal(model_kv.to_codec(k, v), kv)
    # token t of document d is row d*24 + t: the first document's K equals its own prefill's K
    from kvviz.cacheblend.blend import full_prefill_kv

    alone = full_prefill_kv(random_model, ctx.docs.tokens[:1])
    assert np.allclose(kv[:, :, :24], model_kv.to_codec(alone.k, alone.v), atol=1e-5)


def test_ablation_scores_answers_over_each_decoded_kv(random_model):
    kv, ctx = model_kv.record_world_kv(20, 0, random_model)
    profile, _ = model_kv.record_world_kv(20, 1, random_model)
    judge, calls = model_kv.Judge(kv, ctx), []

    def counted(kv_hat):
        calls.append(kv_hat)
        return judge(kv_hat)

    table = compare.ablation(kv, profile, 2, 10, 1.0, check=False, judge=counted)
    assert len(calls) == len(table) and table.accuracy.between(0, 1).all() and (table.kl >= 0).all()
    zlib = table.set_index("variant").loc["zlib on fp16", "accuracy"]
    assert zlib == pytest.approx(model_kv.accuracy(kv.astype(np.float16).astype(np.float32), ctx))


def test_judge_of_the_full_precision_kv_is_perfect_agreement_and_zero_kl(random_model):
    kv, ctx = model_kv.record_world_kv(10, 0, random_model)
    same = model_kv.Judge(kv, ctx)(kv)
    assert same.agreement == 1.0 and same.kl == pytest.approx(0.0, abs=1e-12)
    assert same.accuracy == pytest.approx(model_kv.accuracy(kv, ctx))
    noisy = model_kv.Judge(kv, ctx)(kv + np.random.default_rng(0).normal(0, 0.5, kv.shape).astype(np.float32))
    assert noisy.kl > 1e-4 and noisy.logprob < same.logprob + 1e-9
    assert model_kv.kv_values(10) == kv.size


@pytest.mark.skipif(not model_kv.available(), reason="record-world weights not trained yet")
def test_trained_model_reads_its_context_and_8_bit_keeps_it():
    kv, ctx = model_kv.record_world_kv(100, 0)
    full = model_kv.accuracy(kv, ctx)
    assert full > 0.9
    q8 = compare.run_quant(kv, 8, 1.0, judge=model_kv.Judge(kv, ctx))
    assert q8.accuracy >= full - 0.02 and q8.kl < 1e-6


@pytest.mark.skipif(not model_kv.available(), reason="record-world weights not trained yet")
def test_quality_curve_shows_the_loss_at_low_bits_that_accuracy_hides():
    kv, profile, judge = model_kv.judged_kv(30, 0)
    points = compare.pareto(kv, profile, judge=judge)
    # The trained model is confident (its answers' entropy is about 6e-8 nats), so every KL is small in
    # absolute terms; the law is relative: fp16's rounding is the floor, the lowest bits far above it.
    floor = points.set_index("variant").kl["zlib on fp16"]
    for variant in ("CacheGen (paper)", "CacheGen (artifact)", "quantization only (no AC)"):
        curve = points[points.variant == variant].sort_values("bits_per_value")
        kl = curve.kl.to_numpy()
        assert kl[0] > 1e6 * floor and kl[0] > 100 * kl[-1], variant  # the lowest bits' loss, far above the finest
        assert (np.diff(np.log(kl)) < np.log(2)).all(), variant  # monotone-ish: never doubles with more bits
        assert curve.accuracy.iloc[0] >= 0.99, variant  # while accuracy barely moves
    fixed = points[points.level.isna() & points.variant.str.contains("bit")].sort_values("bits_per_value")
    assert fixed.variant.tolist() == ["2-bit quantization", "4-bit quantization", "8-bit quantization"]
    assert fixed.kl.iloc[0] > 0.05 and fixed.kl.iloc[0] > 1e4 * fixed.kl.iloc[-1]
    assert fixed.accuracy.iloc[0] < 0.99 <= fixed.accuracy.iloc[1]  # 2 bits is where the answers break


@pytest.mark.skipif(not model_kv.available(), reason="record-world weights not trained yet")
def test_measured_levels_are_ordered_by_size_and_loss():
    from kvviz.cachegen import levels

    for sizes in ("synthetic", "model"):
        m = levels.measure(levels.LevelStudy(sizes=sizes, documents=20, chunk_tokens=256))
        bits = [lv.bits_per_value for lv in m.levels]
        assert bits == sorted(bits) and all(1.5 < b < 8 for b in bits), sizes
        assert [lv.kl for lv in m.levels] == sorted((lv.kl for lv in m.levels), reverse=True)
        assert m.quant8.bits_per_value == pytest.approx(8 + 16 / 1024)  # 8 bits + an fp16 scale per 1,024 values
        assert list(m.table.config) == ["level1", "level2", "level3", "quant8"]


@pytest.mark.skipif(not model_kv.available(), reason="record-world weights not trained yet")
def test_record_world_chunks_are_encoded_and_decoded_one_by_one():
    from kvviz.cachegen import levels
    from kvviz.cachegen import streaming as S

    study = levels.LevelStudy.for_stream("model", 9_500, 1_500, documents=21)
    assert (study.chunks, study.documents) == (7, 21)
    m = levels.measure(study)
    assert m.per_chunk.bits_per_value.shape == (7, 4)
    assert np.ptp(m.per_chunk.bits_per_value[:, 1]) > 0  # each chunk's own bitstream, its own size
    assert (np.diff(m.per_chunk.bits_per_value, axis=1) > 0).all()  # level 1 < 2 < 3 < 8-bit in every chunk
    setup = S.StreamSetup(m.levels, m.quant8, per_chunk=m.per_chunk)
    run = S.simulate(setup, S.Bandwidth("chunk", np.full((1, 7), 5.0)), "level2")
    assert run.bits[0].tolist() == pytest.approx(setup.tokens * 65_536 * m.per_chunk.bits_per_value[:, 1])
    assert S.timeline(setup, run).kl.tolist() == m.per_chunk.kl[:, 1].tolist()
    assert levels.LevelStudy.for_stream("synthetic", 9_500, 1_500).chunks == 1

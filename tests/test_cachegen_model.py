"""The record-world model as a codec source: layout round trip and answers over decoded KV."""

from __future__ import annotations

import numpy as np
import pytest

from kvviz.cachegen import compare, model_kv
from kvviz.model import Config, Model, init_params


@pytest.fixture(scope="module")
def random_model():
    return Model(Config(), init_params(Config(), seed=0))


def test_layout_round_trips(random_model):
    kv, ctx = model_kv.record_world_kv(5, 0, random_model)
    assert kv.shape == (4, 2, 5 * 24, 64)
    k, v = model_kv.from_codec(kv, ctx.shape)
    assert np.array_equal(model_kv.to_codec(k, v), kv)
    # token t of document d is row d*24 + t: the first document's K equals its own prefill's K
    from kvviz.blend import full_prefill_kv
    alone = full_prefill_kv(random_model, ctx.docs.tokens[:1])
    assert np.allclose(kv[:, :, :24], model_kv.to_codec(alone.k, alone.v), atol=1e-5)


def test_ablation_scores_answers_over_each_decoded_kv(random_model):
    kv, ctx = model_kv.record_world_kv(20, 0, random_model)
    profile, _ = model_kv.record_world_kv(20, 1, random_model)
    calls = []

    def judge(kv_hat):
        calls.append(kv_hat)
        return model_kv.accuracy(kv_hat, ctx)

    table = compare.ablation(kv, profile, 2, 10, 1.0, check=False, judge=judge)
    assert len(calls) == len(table) and table.accuracy.between(0, 1).all()
    zlib = table.set_index("variant").loc["zlib on fp16", "accuracy"]
    assert zlib == pytest.approx(model_kv.accuracy(kv.astype(np.float16).astype(np.float32), ctx))


@pytest.mark.skipif(not model_kv.available(), reason="record-world weights not trained yet")
def test_trained_model_reads_its_context_and_8_bit_keeps_it():
    kv, ctx = model_kv.record_world_kv(100, 0)
    full = model_kv.accuracy(kv, ctx)
    assert full > 0.9
    q8 = compare.run_quant(kv, 8, 1.0, judge=lambda x: model_kv.accuracy(x, ctx))
    assert q8.accuracy >= full - 0.02

"""The CacheGen codec: the rANS coder round-trips bit for bit, the encoder follows the paper's
and the artifact's rules, and the synthetic KV has the statistics it claims."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz.cachegen import codec, compare, rans
from kvviz.cachegen.codec import ARTIFACT, PAPER, CodecConfig
from kvviz.cachegen.kv import SyntheticKV, locality, profile_context, synthetic_kv
from kvviz.common.errors import InputError


def _random_streams(rng, streams, length, alphabet, skew=0.3):
    p = rng.dirichlet(np.full(alphabet, skew), size=streams)
    u = rng.random((streams, length, 1))
    return np.minimum((u > np.cumsum(p, axis=1)[:, None, :]).sum(axis=2), alphabet - 1)


def _counts(symbols, alphabet):
    s = symbols.shape[0]
    flat = (np.arange(s)[:, None] * alphabet + symbols).ravel()
    return np.bincount(flat, minlength=s * alphabet).reshape(s, alphabet)


# ----------------------------------------------------------------------------- rANS


@settings(max_examples=25)
@given(streams=st.integers(1, 40), length=st.integers(1, 300), alphabet=st.integers(1, 70), seed=st.integers(0, 10_000))
def test_rans_round_trips_bit_for_bit(streams, length, alphabet, seed):
    rng = np.random.default_rng(seed)
    symbols = _random_streams(rng, streams, length, alphabet)
    model = rans.fit_model(_counts(symbols, alphabet))
    dist = np.arange(streams)
    coded = rans.encode(symbols, model, dist)
    assert np.array_equal(rans.decode(coded, model, dist), symbols)


def test_rans_shared_distribution_and_search_decoder(monkeypatch):
    rng = np.random.default_rng(1)
    symbols = _random_streams(rng, 50, 400, 20)
    counts = _counts(symbols, 20).sum(axis=0, keepdims=True)
    model = rans.fit_model(counts)
    dist = np.zeros(50, np.int64)
    coded = rans.encode(symbols, model, dist)
    assert np.array_equal(rans.decode(coded, model, dist), symbols)
    monkeypatch.setattr(rans, "TABLE_LIMIT", 0)  # force the table-free decoder
    assert np.array_equal(rans.decode(coded, model, dist), symbols)


def test_rans_size_is_within_a_few_bytes_of_the_entropy():
    rng = np.random.default_rng(2)
    symbols = _random_streams(rng, 64, 4000, 31)
    counts = _counts(symbols, 31)
    model = rans.fit_model(counts)
    coded = rans.encode(symbols, model, np.arange(64))
    ideal = rans.entropy_bits(counts)
    actual = coded.nbytes * 8
    assert ideal < actual < ideal * 1.005 + 64 * 48  # 32-bit final state + flush per stream
    p = counts / counts.sum(axis=1, keepdims=True)  # −Σ log2 p, symbol by symbol
    assert ideal == pytest.approx(-np.log2(p[np.arange(64)[:, None], symbols]).sum())


def test_rans_uniform_symbols_cost_exactly_their_width():
    rng = np.random.default_rng(3)
    symbols = rng.integers(0, 16, (1, 8000))
    model = rans.Model(np.full((1, 16), 256, np.uint32), 12)
    coded = rans.encode(symbols, model, np.zeros(1, np.int64))
    assert 4 * 8000 <= coded.nbytes * 8 <= 4 * 8000 + 48


def test_fit_model_sums_to_the_scale_and_keeps_every_seen_symbol():
    counts = np.array([[1000000, 1, 0, 3], [0, 0, 0, 0], [5, 5, 5, 5]])
    model = rans.fit_model(counts, 12)
    assert (model.freq.sum(axis=1) == 4096).all()
    assert (model.freq[counts > 0] >= 1).all()
    assert model.freq[0, 2] == 0 and model.freq[1, 0] == 4096
    assert (model.freq[2] == 1024).all()


def test_a_zero_probability_symbol_is_refused():
    model = rans.Model(np.array([[4096, 0]], np.uint32), 12)
    with pytest.raises(ValueError, match="zero probability"):
        rans.encode(np.array([[0, 1, 0]]), model, np.zeros(1, np.int64))


# ----------------------------------------------------------------------------- the encoder


def test_layer_bins_are_the_artifacts_mistral_tables():
    level2 = codec.layer_bins(2, 32)
    assert (level2[:10, 0] == 32).all() and (level2[10:, 0] == 16).all()
    assert (level2[:2, 1] == 32).all() and (level2[2:, 1] == 16).all()
    level1 = codec.layer_bins(1, 32)
    assert (level1[:20, 0] == 16).all() and (level1[20:, 0] == 12).all()
    assert (level1[:2, 1] == 16).all() and (level1[2:, 1] == 12).all()
    assert (codec.layer_bins(3, 32) == 32).all()
    flat = codec.layer_bins(2, 32, by_layer=False)
    assert (flat == 16).all()


def test_quantizer_is_the_artifacts_symmetric_per_token_rule():
    x = np.array([[[[-1.0, 0.5, 0.25, 1.0]]]], np.float32)
    q, m = codec.quantize(x, np.int64(32))  # half = 15, symbols in [0, 30]
    assert m.ravel()[0] == 1.0
    assert q.ravel().tolist() == [0, 23, 19, 30]  # rint(x * 15) + 15; 7.5 rounds to even 8
    back = codec.dequantize(q, m, np.int64(32))
    assert np.abs(back - x).max() <= 0.5 / 15 + 1e-7


SMALL = SyntheticKV(layers=3, tokens=57, channels=8, rho=0.9, outliers=1, seed=4)


@settings(max_examples=12)
@given(
    delta=st.booleans(),
    layer=st.booleans(),
    per_channel=st.booleans(),
    entropy=st.booleans(),
    tables=st.sampled_from(["offline", "shipped"]),
    level=st.sampled_from(codec.LEVELS),
    group=st.integers(2, 12),
)
def test_codec_decodes_exactly_what_it_quantised(delta, layer, per_channel, entropy, tables, level, group):
    kv = synthetic_kv(SMALL)
    cfg = CodecConfig(
        level=level, delta=delta, group=group, layer_bins=layer, per_channel=per_channel, entropy=entropy, tables=tables
    )
    profile = codec.offline_counts(synthetic_kv(profile_context(SMALL)), cfg)
    bs = codec.encode(kv, cfg, profile)
    expected = codec.reconstruct(codec.quantize_kv(kv, cfg), cfg, kv.shape[2])
    assert np.array_equal(codec.decode(bs), expected)
    assert bs.bits_per_value > 0


def test_anchor_tokens_are_8_bit_and_deltas_use_the_reconstructed_anchor():
    kv = synthetic_kv(SMALL)
    cfg = CodecConfig(level=4, group=5)
    qz = codec.quantize_kv(kv, cfg)
    assert qz.anchors.shape == (3, 2, 12, 8) and qz.anchors.max() <= 254
    assert qz.symbols.shape == (3, 2, 57 - 12, 8)
    hat = codec.reconstruct(qz, cfg, 57)
    anchors_only = codec.dequantize(qz.anchors, qz.scales[:, :, ::5], np.int64(256))
    assert np.array_equal(hat[:, :, ::5], anchors_only)


def test_sizes_count_every_part_sent():
    kv = synthetic_kv(SMALL)
    bs = codec.encode(kv, ARTIFACT)
    alphabet = 63  # level 2 keeps 32 bins at most -> 31 symbols
    streams = 3 * 2 * 8
    scales = 3 * 2 * 57 * 2
    tables = streams * (31 + 1) * 2
    assert alphabet and bs.header_bytes == scales + tables  # interleaved: no stream lengths
    assert bs.anchor_bytes == 0
    assert bs.data_bytes == bs.coded.nbytes


def test_encode_refuses_a_bad_tensor():
    with pytest.raises(InputError):
        codec.encode(np.zeros((2, 3, 4, 5)), ARTIFACT)
    with pytest.raises(InputError):
        codec.encode(np.full((1, 2, 4, 3), np.nan), ARTIFACT)
    with pytest.raises(InputError):
        codec.encode(np.zeros((1, 2, 4, 3)), PAPER)  # offline tables need a profile
    with pytest.raises(InputError, match="fp16"):
        codec.encode(np.full((1, 2, 4, 3), 1e5), ARTIFACT)


# ----------------------------------------------------------------------------- synthetic KV


def test_synthetic_kv_has_the_asked_correlation():
    kv = synthetic_kv(SyntheticKV(layers=2, tokens=4000, channels=16, rho=0.8, offset=0.0, outliers=0))
    z = kv - kv.mean(axis=2, keepdims=True)
    lag1 = (z[:, :, 1:] * z[:, :, :-1]).mean() / (z**2).mean()
    assert abs(lag1 - 0.8) < 0.02


def test_delta_variance_matches_the_ar1_formula():
    # Lecture 9 §3.2: at rho = 0.8 with the channel means removed, deltas to the anchor are
    # *larger*: centred/delta = 1 / (2 (1 - mean_k rho^k)) = 0.81 for groups of 10.
    rho, g = 0.8, 10
    expected = 1 / (2 * (1 - np.mean(rho ** np.arange(1, g))))
    kv = synthetic_kv(SyntheticKV(layers=4, tokens=4000, channels=32, rho=rho))
    got = locality(kv, g)
    assert abs(got["centred/delta"] - expected) < 0.03
    assert got["raw/delta"] > got["centred/delta"]


def test_synthetic_kv_rejects_bad_parameters():
    with pytest.raises(InputError, match="rho"):
        synthetic_kv(SyntheticKV(rho=1.0))
    with pytest.raises(InputError, match="limit"):
        synthetic_kv(SyntheticKV(layers=128, tokens=65_536, channels=64))


# ----------------------------------------------------------------------------- comparisons


def test_ablation_shows_the_mechanisms():
    spec = SyntheticKV(layers=4, tokens=400, channels=32, rho=0.97, outliers=2)
    kv, profile = synthetic_kv(spec), synthetic_kv(profile_context(spec))
    table = compare.ablation(kv, profile, level=2).set_index("variant")
    paper = table.iloc[0]
    assert (table["roundtrip"].isin(["exact", "n/a"])).all()
    assert table.loc["one global distribution", "bits_per_value"] > paper["bits_per_value"]
    assert table.loc["without arithmetic coding (fixed width)", "bits_per_value"] > paper["bits_per_value"]
    assert table.loc["without anchor/delta", "rel_error"] > paper["rel_error"]  # rho = 0.97
    assert table.loc["8-bit quantization", "bits_per_value"] == pytest.approx(8 + 16 / 32)
    assert table.loc["zlib on fp16", "bits_per_value"] > 10


def test_layer_weights_run_from_the_sensitivity_down_to_one():
    w = compare.layer_weights(5, 16.0)
    assert w[0] == pytest.approx(16) and w[-1] == pytest.approx(1) and (np.diff(w) < 0).all()
    with pytest.raises(InputError):
        compare.layer_weights(5, 0.5)

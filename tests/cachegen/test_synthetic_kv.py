"""The synthetic KV's token-to-token correlation: an AR(1) drawn without scipy.signal, value for value.

The reference is the filter it replaced, scipy.signal.lfilter([sqrt(1 - rho^2)], [1, -rho]) along the
tokens from the initial state rho * noise_0 (as float32, widened): the page that first drew a synthetic
KV waited for scipy.signal's import, so the same recurrence is now written out, and must draw the same
tensor to the last bit for every shape and correlation.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy.signal import lfilter

from kvviz.cachegen.kv import SyntheticKV, synthetic_kv


def lfilter_kv(spec: SyntheticKV) -> np.ndarray:
    """``synthetic_kv`` as it was drawn with scipy.signal.lfilter."""
    rng = np.random.default_rng(spec.seed)
    shape = (spec.layers, 2, spec.tokens, spec.channels)
    noise = np.random.default_rng([spec.seed, spec.context]).standard_normal(shape, dtype=np.float32)
    zi = (spec.rho * noise[:, :, :1, :]).astype(np.float64)
    z = lfilter([np.sqrt(1.0 - spec.rho**2)], [1.0, -spec.rho], noise, axis=2, zi=zi)[0].astype(np.float32)
    scale = rng.lognormal(0.0, 0.3, (spec.layers, 2, 1, spec.channels)).astype(np.float32)
    offset = (spec.offset * rng.standard_normal((spec.layers, 2, 1, spec.channels))).astype(np.float32)
    if spec.outliers:
        picks = np.argsort(rng.random((spec.layers, 2, spec.channels)), axis=2)[..., : spec.outliers]
        boost = np.ones((spec.layers, 2, spec.channels), np.float32)
        np.put_along_axis(boost, picks, np.float32(spec.outlier_scale), axis=2)
        scale = scale * boost[:, :, None, :]
        offset = offset * boost[:, :, None, :]
    return offset + scale * z


def test_the_default_chunk_is_drawn_as_before():
    spec = SyntheticKV()
    drawn = synthetic_kv(spec)
    assert drawn.dtype == np.float32
    assert np.array_equal(drawn, lfilter_kv(spec))


@settings(max_examples=40)
@given(
    layers=hs.integers(1, 3),
    tokens=hs.integers(2, 70),
    channels=hs.integers(1, 9),
    rho=hs.one_of(hs.just(0.0), hs.floats(0.0, 0.999)),
    seed=hs.integers(0, 2**32 - 1),
    context=hs.integers(0, 5),
)
def test_every_shape_and_correlation_is_drawn_as_before(layers, tokens, channels, rho, seed, context):
    spec = SyntheticKV(layers, tokens, channels, rho, outliers=min(2, channels), seed=seed, context=context)
    assert np.array_equal(synthetic_kv(spec), lfilter_kv(spec))

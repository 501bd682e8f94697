"""A range coder (rANS) that codes thousands of independent streams at once, in numpy.

CacheGen (SIGCOMM'24 §5.2, step 3) entropy-codes the quantized KV symbols losslessly, with one
probability distribution per (layer, channel); the released artifact runs one arithmetic-coder
stream per (layer, channel) on the GPU. This module does the same on the CPU: stream ``s``
codes its own symbol sequence with distribution ``dist[s]``, and every step of the coder advances
all streams together as one vectorised numpy operation, so a 4K-token, 32-layer KV costs 4K
numpy steps rather than 33M Python steps.

The coder is rANS with 32-bit states and 16-bit renormalisation words (Duda 2013; the byte-wise
layout follows the common "rans_word" construction): state ``x`` lives in ``[L, 2**32)`` with
``L = 2**16``; a symbol with frequency ``f`` and cumulative start ``c`` (out of ``2**n``) maps
``x -> (x // f) << n | (x % f) + c``. rANS is last-in first-out, so the encoder walks the symbols
backwards and the decoder forwards. The streams are *interleaved* (Giesen 2014): the bitstream is
every stream's final 32-bit state, then the renormalisation words in the order the decoder needs
them (step by step, stream by stream), so the decoder reads it front to back with one pointer and
needs no per-stream lengths. It round-trips bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RANS_L = 1 << 16  # lower bound of the state interval
WORD_BITS = 16
STATE_WORDS = 2  # the final 32-bit state, as two 16-bit words
TABLE_LIMIT = 1 << 26  # largest slot->symbol decode table (entries) built in memory


@dataclass(frozen=True)
class Model:
    """Quantised distributions: ``freq[d, a]`` sums to ``2**prob_bits`` for every row ``d``."""

    freq: np.ndarray  # [D, A] uint32
    prob_bits: int

    @property
    def cum(self) -> np.ndarray:
        """Cumulative starts, [D, A] uint32."""
        return (np.cumsum(self.freq, axis=1) - self.freq).astype(np.uint32)

    @property
    def alphabet(self) -> int:
        return self.freq.shape[1]


@dataclass(frozen=True)
class Encoded:
    """The interleaved bitstream: ``2 * streams`` state words, then the renormalisation words."""

    words: np.ndarray  # uint16
    streams: int
    length: int  # symbols per stream

    @property
    def nbytes(self) -> int:
        """Bytes of the coded data: final states and renormalisation words."""
        return int(self.words.size) * 2


def prob_bits_for(alphabet: int) -> int:
    """Precision of the quantised probabilities: 32 slots a symbol on average (10 bits for the
    31-symbol alphabet of 32 bins), which keeps the decoder's slot table small enough for the
    cache; the price is a few tenths of a percent over the entropy."""
    return int(min(16, max(10, np.ceil(np.log2(max(alphabet, 2))) + 5)))


def fit_model(counts: np.ndarray, prob_bits: int | None = None) -> Model:
    """Quantise symbol counts ``[D, A]`` to frequencies summing to ``2**prob_bits`` per row.

    Every symbol that occurs gets a frequency of at least 1 (so it stays codable); the rest of the
    range is shared in proportion to the counts and the rounding remainder goes to the commonest
    symbol. A row with no counts becomes a point mass on symbol 0.
    """
    counts = np.asarray(counts, dtype=np.int64)
    d, a = counts.shape
    bits = prob_bits_for(a) if prob_bits is None else prob_bits
    scale = 1 << bits
    if a > scale:
        raise ValueError(f"alphabet {a} does not fit {bits}-bit probabilities")
    present = counts > 0
    total = counts.sum(axis=1, keepdims=True)
    spare = scale - present.sum(axis=1, keepdims=True)
    freq = present + (counts * spare) // np.maximum(total, 1)
    empty = total[:, 0] == 0
    freq[empty, 0] = scale
    rest = scale - freq.sum(axis=1)
    freq[np.arange(d), np.argmax(counts, axis=1)] += rest
    return Model(freq.astype(np.uint32), bits)


def _tables(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat per-(distribution, symbol) frequency, cumulative start and encoder renorm bound."""
    f = model.freq.ravel().astype(np.float64)
    c = model.cum.ravel().astype(np.float64)
    return f, c, f * float(1 << (32 - model.prob_bits))


# The coder runs in float64: every state, quotient and product stays below 2**53, so floor(x / f)
# and the rest are exact integers, and float division is several times faster than int64 division.


def encode(symbols: np.ndarray, model: Model, dist: np.ndarray) -> Encoded:
    """Code ``symbols[s, t]`` (S streams of equal length) with distribution ``dist[s]`` each."""
    return encode_rows(np.ascontiguousarray(np.asarray(symbols).T), model, dist)


def encode_rows(rows: np.ndarray, model: Model, dist: np.ndarray) -> Encoded:
    """``encode`` for time-major input: ``rows[t, s]`` is stream s's t-th symbol."""
    length, n_streams = rows.shape
    itype = np.int32 if model.freq.size < 2**31 else np.int64
    base = (np.asarray(dist, dtype=np.int64) * model.alphabet).astype(itype)
    freq, cum, bound = _tables(model)
    scale, word = float(1 << model.prob_bits), float(1 << WORD_BITS)
    x = np.full(n_streams, float(RANS_L))
    emitted = np.zeros((length, n_streams), dtype=bool)
    words = np.zeros((length, n_streams), dtype=np.uint16)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = _encode_steps(rows, base, freq, cum, bound, x, words, emitted, scale, word)
        if not np.all(np.isfinite(x)):  # a zero frequency divides by zero and poisons the state
            raise ValueError("a symbol has zero probability in its stream's distribution")
    high = np.floor(x / word)
    head = np.stack([high, x - high * word], axis=1).astype(np.uint16).ravel()
    return Encoded(np.concatenate([head, words[emitted]]), n_streams, length)


def _encode_steps(rows, base, freq, cum, bound, x, words, emitted, scale, word) -> np.ndarray:
    """The encoder's loop, last symbol first; fills ``words``/``emitted`` and returns the states.

    The word emitted before coding symbol t is the one the decoder reads after decoding symbol t,
    so storing it in row t puts every word where the decoder's step t will look for it. The
    arithmetic is in place on preallocated buffers: the loop is bound by numpy calls.
    """
    high, tmp, q = (np.empty_like(x) for _ in range(3))
    out = np.empty(x.shape, bool)
    inv_word = 1.0 / word
    for t in range(rows.shape[0] - 1, -1, -1):
        idx = base + rows[t]
        f = freq.take(idx)
        np.greater_equal(x, bound.take(idx), out=out)
        np.multiply(x, inv_word, out=high)
        np.floor(high, out=high)
        np.multiply(high, word, out=tmp)
        np.subtract(x, tmp, out=tmp)
        words[t] = tmp
        emitted[t] = out
        np.copyto(x, high, where=out)
        np.divide(x, f, out=q)
        np.floor(q, out=q)
        np.subtract(scale, f, out=tmp)
        tmp *= q
        x += tmp
        x += cum.take(idx)
    return x


def _decode_table(model: Model) -> np.ndarray | None:
    """slot -> symbol for every distribution, or None when it would be too large."""
    d, a = model.freq.shape
    if d << model.prob_bits > TABLE_LIMIT:
        return None
    return np.repeat(np.tile(np.arange(a, dtype=np.uint16), d), model.freq.ravel())


def decode(encoded: Encoded, model: Model, dist: np.ndarray) -> np.ndarray:
    """Invert ``encode``: the symbols ``[S, T]`` (uint16), exactly."""
    return decode_rows(encoded, model, dist).T


def decode_rows(encoded: Encoded, model: Model, dist: np.ndarray) -> np.ndarray:
    """Invert ``encode_rows``: the symbols ``[T, S]`` (uint16), exactly."""
    n, n_streams = model.prob_bits, encoded.streams
    dist = np.asarray(dist, dtype=np.int64)
    itype = np.int32 if max(model.freq.size, dist.max(initial=0) + 1 << n) < 2**31 else np.int64
    base = (dist * model.alphabet).astype(itype)
    freq, cum, _ = _tables(model)
    lookup = _decode_table(model)
    cum_rows = model.cum[dist].astype(np.float64) if lookup is None else None
    words = np.concatenate([encoded.words, np.zeros(n_streams, np.uint16)]).astype(np.float64)
    scale, word = float(1 << n), float(1 << WORD_BITS)
    x = words[0 : 2 * n_streams : 2] * word + words[1 : 2 * n_streams : 2]
    ptr = STATE_WORDS * n_streams
    out = np.empty((encoded.length, n_streams), dtype=np.uint16)
    lookup_base = (dist << n).astype(itype)
    high, slot, tmp = (np.empty_like(x) for _ in range(3))
    inv_scale = 1.0 / scale
    for t in range(encoded.length):
        np.multiply(x, inv_scale, out=high)
        np.floor(high, out=high)
        np.multiply(high, scale, out=slot)
        np.subtract(x, slot, out=slot)
        if lookup is not None:
            s = lookup.take(lookup_base + slot.astype(itype))
        else:
            s = (cum_rows[:, 1:] <= slot[:, None]).sum(axis=1)
        out[t] = s
        idx = base + s
        np.multiply(freq.take(idx), high, out=x)
        x += slot
        x -= cum.take(idx)
        need = x < RANS_L
        take = np.cumsum(need)
        take += ptr - 1
        np.multiply(x, word, out=tmp)
        tmp += words.take(take)
        np.copyto(x, tmp, where=need)
        ptr += int(take[-1] - ptr + 1)
    return out


def entropy_bits(counts: np.ndarray) -> float:
    """−Σ log2 p of the symbols a histogram counts, under the histogram itself (the entropy bound)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log2(np.where(counts > 0, counts, 1) / np.maximum(total, 1)), 0.0)
    return float(-terms.sum())


def ideal_bits(symbols: np.ndarray, counts: np.ndarray, dist: np.ndarray) -> float:
    """−Σ log2 p of the symbols under the empirical distributions ``counts[dist[s]]``."""
    counts = np.asarray(counts, dtype=np.float64)
    p = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    with np.errstate(divide="ignore"):
        logp = np.where(p > 0, np.log2(np.where(p > 0, p, 1)), 0.0)
    return float(-logp[np.asarray(dist)[:, None], symbols].sum())

"""Prefix chain hashing of token blocks (Mooncake v3 §4 / FAST'25 §3; vLLM's prefix caching).

A prompt is cut into blocks of ``block_size`` tokens and block k is named by
h_1 = H(block_1), h_k = H(h_{k-1} + block_k). Two prompts share the k-th hash exactly when their
first k blocks are equal, so one comparison decides "is the whole prefix the same" and the
hash serves both lookup and de-duplication. Only full blocks get a hash: a partial last block
may still grow, and its KV cannot be shared as a unit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from kvviz.common.errors import InputError
from kvviz.common.jit import frozen, helper, kernel

_ROOT = b"kvviz-chain-root"


def _digest(parent: bytes, block: np.ndarray) -> bytes:
    return hashlib.blake2b(parent + block.tobytes(), digest_size=8).digest()


def chain_block_hashes(tokens: Sequence[int] | np.ndarray, block_size: int = 512) -> list[int]:
    """Chained hashes of the full blocks of ``tokens``, as unsigned 64-bit integers.

    ``len(result) == len(tokens) // block_size``; the hash of block k depends on blocks 1..k.
    """
    if block_size <= 0:
        raise InputError(f"block size must be a positive integer, got {block_size}", field="block_size")
    arr = np.asarray(tokens, dtype=np.int64)
    if arr.ndim != 1:
        raise InputError("tokens must be a flat sequence of integers", field="tokens")
    hashes: list[int] = []
    parent = _ROOT
    for k in range(len(arr) // block_size):
        parent = _digest(parent, arr[k * block_size : (k + 1) * block_size])
        hashes.append(int.from_bytes(parent, "little"))
    return hashes


def remap_ids(hashes: Sequence[int], table: dict[int, int]) -> list[int]:
    """Replace each hash by a small integer id, in order of first appearance (as Mooncake's
    released traces do); ``table`` carries the mapping across requests and is updated."""
    return [table.setdefault(h, len(table)) for h in hashes]


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@helper
def _mix(z):  # splitmix64's finaliser: a bijection of 64-bit words that spreads every input bit
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def _rechain(ids, offsets, out):
    for r in range(len(offsets) - 1):
        h = _GOLDEN
        for k in range(offsets[r], offsets[r + 1]):
            h = _mix(_mix(h) + np.uint64(ids[k]) + _GOLDEN)
            out[k] = h


def rechain(ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Chain per-block ids into prefix ids: within each request, c_1 = H(id_1) and
    c_k = H(c_{k-1}, id_k) (uint64), so equal chained ids mean equal prefixes.

    Traces such as Qwen-Bailian's hash each block on its own; there an equal id at position k
    does not mean the k−1 blocks before it match, and a prefix cache could not serve it. The
    ids are already hashes, so a 64-bit mixer (splitmix64's) is enough to combine them.
    """
    out = np.empty(len(ids), np.uint64)
    _rechain(frozen(ids, np.int64).view(np.uint64), frozen(offsets, np.int64), out)
    return out

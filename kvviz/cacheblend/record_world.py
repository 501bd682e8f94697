"""The record world: documents of random key -> value records, and questions about them.

The lecture notes' lecture 27 §0.4 (their demo ``blend_world.py``, not part of this repository): a
document is ``k1 v1 k2 v2 ... k12 v12`` with a fresh mapping in every document, and the question ``? k``
asks for the value of one key. Nothing in the weights can know the answer: the model must read it from
the context (an induction head: an early layer lets each value remember "the key before me", a later
layer matches it).

Tokens: ``?`` (id 0), 26 keys ``A``..``Z`` (ids 1..26), 26 values ``0``..``25`` (ids 27..52).
Every document uses 12 distinct keys and 12 distinct values, so guessing among the values in
the context is right 1/12 of the time.

Chunked reuse (§5.2): cutting a document into chunks of ``chunk_len`` tokens puts some values
at the start of a chunk (odd ``chunk_len`` cuts records: the key ends one chunk and its value
starts the next); those values never saw their key when their chunk was precomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.common.errors import require

N_KEYS = 26
N_VALUES = 26
QUERY = 0
KEY0 = 1
VALUE0 = KEY0 + N_KEYS
VOCAB = VALUE0 + N_VALUES
N_RECORDS = 12
QUESTION_LEN = 2  # "?" and the key


@dataclass(frozen=True)
class Documents:
    """``n`` documents: ``tokens`` [n, 2·records], with ``keys``/``values`` [n, records] as token ids."""

    tokens: np.ndarray
    keys: np.ndarray
    values: np.ndarray

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def n_records(self) -> int:
        return self.keys.shape[1]


def sample_documents(n: int, seed: int | np.random.Generator = 0, n_records: int = N_RECORDS) -> Documents:
    """``n`` fresh documents with distinct keys and distinct values in each (non-repeating)."""
    require(
        1 <= n_records <= min(N_KEYS, N_VALUES),
        f"records per document must be 1..{min(N_KEYS, N_VALUES)}",
        field="n_records",
    )
    rng = np.random.default_rng(seed)
    keys = KEY0 + np.argsort(rng.random((n, N_KEYS)), axis=1)[:, :n_records]
    values = VALUE0 + np.argsort(rng.random((n, N_VALUES)), axis=1)[:, :n_records]
    tokens = np.empty((n, 2 * n_records), dtype=np.int64)
    tokens[:, 0::2], tokens[:, 1::2] = keys, values
    return Documents(tokens, keys.astype(np.int64), values.astype(np.int64))


def with_questions(docs: Documents, asked: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Documents followed by questions ``? k v`` about records ``asked`` [n, q].

    Returns ``tokens`` [n, T], the positions whose next-token prediction is an answer [q], and
    the answers [n, q]. The last answer is not appended (nothing predicts after it).
    """
    n, q = asked.shape
    rows = np.arange(n)[:, None]
    ask_keys, answers = docs.keys[rows, asked], docs.values[rows, asked]
    qa = np.stack([np.full_like(ask_keys, QUERY), ask_keys, answers], axis=2).reshape(n, 3 * q)
    tokens = np.concatenate([docs.tokens, qa[:, :-1]], axis=1)
    answer_at = docs.tokens.shape[1] + 1 + 3 * np.arange(q)
    return tokens, answer_at, answers


def _documents_with_repeats(rng: np.random.Generator, batch: int, n_records: int) -> Documents:
    """Documents whose records draw keys, with replacement, from a small pool of 1..R keys with
    fixed values, so later records repeat earlier ones (always with the same value)."""
    pool = KEY0 + np.argsort(rng.random((batch, N_KEYS)), axis=1)
    value_of = VALUE0 + np.argsort(rng.random((batch, N_VALUES)), axis=1)
    size = rng.integers(1, n_records + 1, size=(batch, 1))
    pick = (rng.random((batch, n_records)) * size).astype(np.int64)
    rows = np.arange(batch)[:, None]
    keys, values = pool[rows, pick], value_of[rows, pick]
    tokens = np.empty((batch, 2 * n_records), dtype=np.int64)
    tokens[:, 0::2], tokens[:, 1::2] = keys, values
    return Documents(tokens, keys, values)


def training_batch(
    rng: np.random.Generator,
    batch: int,
    n_questions: int = 4,
    n_records: int = N_RECORDS,
    repeat_share: float = 0.5,
    distinct_questions: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """A training batch: fresh documents, each followed by ``n_questions`` questions.

    With ``distinct_questions`` a document's questions ask different records (at most
    ``n_records``), so the last of all 12 could be answered by elimination; otherwise each
    question asks a record drawn independently, and a record may be asked twice.
    A share ``repeat_share`` of the documents repeat records (see ``_documents_with_repeats``);
    the rest are non-repeating like the evaluation documents. Returns ``tokens`` [B, T] and
    ``targets`` [B, T]: the token to predict after each position, or -1 where nothing can be
    predicted. Targets are the answers and, inside a document, every value whose key appeared
    before (an induction target: copy what followed this key last time).
    """
    n_repeat = int(round(repeat_share * batch))
    plain = sample_documents(batch - n_repeat, rng, n_records)
    rep = _documents_with_repeats(rng, n_repeat, n_records)
    docs = Documents(
        *(
            np.concatenate([a, b])
            for a, b in zip((plain.tokens, plain.keys, plain.values), (rep.tokens, rep.keys, rep.values))
        )
    )
    asked = (
        np.argsort(rng.random((batch, n_records)), axis=1)[:, :n_questions]
        if distinct_questions
        else rng.integers(0, n_records, size=(batch, n_questions))
    )
    tokens, answer_at, answers = with_questions(docs, asked)
    targets = np.full(tokens.shape, -1, dtype=np.int64)
    targets[:, answer_at] = answers
    seen_before = np.triu(docs.keys[:, :, None] == docs.keys[:, None, :], 1).any(axis=1)  # [B, R]
    key_pos = 2 * np.arange(n_records)
    targets[:, key_pos] = np.where(seen_before, docs.values, -1)
    return tokens, targets


def check_chunk_len(chunk_len: int) -> None:
    require(chunk_len >= 1, f"chunk length must be at least 1 token, got {chunk_len}", field="chunk_len")


def chunk_starts(n_tokens: int, chunk_len: int) -> np.ndarray:
    """Positions where a chunk of ``chunk_len`` tokens begins."""
    check_chunk_len(chunk_len)
    return np.arange(0, n_tokens, chunk_len)


def chunk_ids(n_tokens: int, chunk_len: int) -> np.ndarray:
    """The chunk each token belongs to."""
    check_chunk_len(chunk_len)
    return np.arange(n_tokens) // chunk_len


def cut_records(n_records: int, chunk_len: int) -> np.ndarray:
    """Which records are cut: the value (position 2i+1) starts a chunk, away from its key."""
    check_chunk_len(chunk_len)
    return (2 * np.arange(n_records) + 1) % chunk_len == 0


def token_text(token: int) -> str:
    """How a token is written: ``?``, a key letter or a value number."""
    if token == QUERY:
        return "?"
    if KEY0 <= token < VALUE0:
        return chr(ord("A") + token - KEY0)
    return str(token - VALUE0)


def is_value(tokens: np.ndarray) -> np.ndarray:
    return np.asarray(tokens) >= VALUE0

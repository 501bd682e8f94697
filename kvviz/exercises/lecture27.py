"""Lecture 27's ten exercises (KV cache as a new AI memory: CacheGen, CacheBlend and LMCache), each answered by kvviz.

The numbers come from the core the pages use: KV bytes per token (``kvviz.common.hardware``), KV size
(``kvviz.ledger.ledger``), the entropy bound of CacheGen's coder (``kvviz.cachegen.rans.entropy_bits``), the
record world's cut records and the trained model's answers (``kvviz.cacheblend.record_world``,
``kvviz.cacheblend.blend``), and CacheBlend's loading controller (``kvviz.cacheblend.blend.plan``).
"""

from __future__ import annotations

import math

import numpy as np

from kvviz.cacheblend import blend
from kvviz.cacheblend.model import load_model
from kvviz.cacheblend.record_world import N_RECORDS, cut_records, sample_documents
from kvviz.cachegen.rans import entropy_bits
from kvviz.common import hardware as hw
from kvviz.common.budget import GIB
from kvviz.exercises.exercise import Exercise, Part
from kvviz.ledger import ledger

EVAL_DOCUMENTS, EVAL_SEED = 200, 0


def kv_size() -> dict[str, float]:
    m = hw.model("llama-3.1-70b")
    return {
        "per_token_bytes": m.kv_bytes_per_token,
        "kib": m.kv_bytes_per_token / hw.KIB,
        "ctx_gib": ledger.kv_bytes(m, 32_768) / GIB,
    }


def fetch_or_compute() -> dict[str, float]:
    m, tokens, recompute, ratio = hw.model("llama-3.1-70b"), 16_000, 0.97, 3
    kv_bytes = ledger.kv_bytes(m, tokens)
    gb_s = kv_bytes / hw.GB / ratio / recompute
    return {
        "kv_gb": kv_bytes / hw.GB,
        "kv_gib": kv_bytes / GIB,
        "compressed_gb": kv_bytes / hw.GB / ratio,
        "compressed_gib": kv_bytes / GIB / ratio,
        "gb_s": gb_s,
        "gbit_s": 8 * gb_s,
    }


def entropy() -> dict[str, float]:
    probabilities = np.array([[0.7, 0.12, 0.12, 0.03, 0.03]])
    return {"bits": entropy_bits(probabilities * 100) / 100, "fixed_bits": math.ceil(math.log2(probabilities.shape[1]))}


def cut_records_six() -> dict[str, float]:
    model, docs = load_model(), sample_documents(EVAL_DOCUMENTS, EVAL_SEED)
    s = blend.setup(model, docs, 6)
    reused, _, _ = blend.method_kv(model, s, "full_reuse")
    correct = blend.answer(model, reused, docs) == docs.values
    return {
        "records": N_RECORDS,
        "cut_six": int(cut_records(N_RECORDS, 6).sum()),
        "cut_five": int(cut_records(N_RECORDS, 5).sum()),
        "reuse_accuracy": 100 * blend.accuracy_row(correct, s.cut)["acc_all"],
        "documents": EVAL_DOCUMENTS,
    }


def controller() -> dict[str, float]:
    layers, load, prefill = 32, 0.010, 0.020
    result = blend.plan(load, prefill, layers)
    return {"ratio": 100 * result.ratio, "ttft_ms": 1e3 * result.ttft_blend, "full_ms": 1e3 * result.ttft_full}


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        27,
        1,
        "KV bytes per token",
        "LLaMA-3.1-70B has 80 layers, 8 KV head groups and head dimension 128. How many bytes of KV does a token "
        "take (BF16)? How big is a 32K-token context, in GiB?",
        "ledger",
        {"ledger_view": "Size", "ledger_model": hw.MODEL_TITLES["llama-3.1-70b"], "ledger_context": "32768"},
        "Every layer keeps a key and a value vector per KV head: layers × 2 × KV heads × head dim × bytes.",
        "2 × 80 × 8 × 128 × 2 = {per_token_bytes} bytes = {kib} KiB per token; 32K tokens take {ctx_gib} GiB.",
        (Part("kib", "KV per token", "KiB"), Part("ctx_gib", "A 32K-token context", "GiB")),
        kv_size,
    ),
    Exercise(
        27,
        2,
        "Load or compute",
        "LLaMA-3.1-70B recomputes 16K tokens in about 0.97 s (the lecture's script). With the KV compressed 3×, "
        "what is the lowest bandwidth at which fetching beats computing, in Gb/s?",
        "ledger",
        {
            "ledger_view": "Load or recompute",
            "ledger_lr": "One context, every link",
            "ledger_model": hw.MODEL_TITLES["llama-3.1-70b"],
            "ledger_context": "16000",
        },
        "Fetching wins when the compressed KV arrives in less time than the recompute takes.",
        "The KV is 16,000 × 327,680 bytes = {kv_gb} GB = {kv_gib} GiB; compressed 3×, {compressed_gb} GB = "
        "{compressed_gib} GiB must arrive within 0.97 s: {gb_s} GB/s = {gbit_s} Gb/s.",
        (Part("gbit_s", "The lowest bandwidth", "Gb/s"),),
        fetch_or_compute,
    ),
    Exercise(
        27,
        3,
        "Anchors",
        "Why does CacheGen make every token of a group refer to the same anchor token, rather than to the token "
        "before it?",
        "cachegen",
        {"cachegen_view": "Codec"},
        "Think about what a decoder on a GPU must wait for in each scheme.",
        "The lecture's points are beside the view.",
        points=(
            "With one anchor, each token of the group is encoded and decoded independently of the others, so a GPU "
            "decodes the whole group in parallel.",
            "Referring to the previous token chains the tokens: decoding must go one by one, and an error carries "
            "along the chain and grows.",
        ),
    ),
    Exercise(
        27,
        4,
        "Entropy",
        "A channel's quantised values are distributed as {0: 0.7, ±1: 0.12 each, ±2: 0.03 each}. What is its "
        "entropy? With a fixed-length code, how many bits does each value need at least?",
        "cachegen",
        {"cachegen_view": "Codec"},
        "H = −Σ p log₂ p over the five symbols; a fixed-length code needs enough bits to name all five.",
        "H = −(0.7 log₂ 0.7 + 2 × 0.12 log₂ 0.12 + 2 × 0.03 log₂ 0.03) = {bits} bits; a fixed-length code for 5 "
        "symbols needs {fixed_bits} bits. An arithmetic (range) coder, as CacheGen's, comes close to {bits}.",
        (
            Part("bits", "The entropy", "bits per value", 0.02),
            Part("fixed_bits", "The bits of a fixed-length code", "bits", 0),
        ),
        entropy,
    ),
    Exercise(
        27,
        5,
        "Moving KV by RoPE",
        "KV computed in advance at position 0 is placed at position 1000. What must be done to K and to V? Why "
        "does V not move?",
        "cacheblend",
        {"cacheblend_view": "The model"},
        "Which of K and V goes through the rotary position embedding?",
        "The lecture's points are beside the view.",
        points=(
            "K is rotated by a further 1000·θ per frequency: RoPE rotations add, so a key computed at position 0 "
            "rotated by 1000 positions equals the key at position 1000.",
            "V never goes through RoPE: it does not depend on position and stays as it is.",
        ),
    ),
    Exercise(
        27,
        6,
        "Cut records",
        "In the record world, with an even chunk length of 6, how many records are cut? What is full reuse's "
        "accuracy then?",
        "cacheblend",
        {"cacheblend_view": "Accuracy vs ratio", "cacheblend_chunk": "6"},
        "A record is a key at an even position followed by its value; a chunk boundary cuts a record only when the "
        "value starts a chunk.",
        "With chunks of 6 every boundary falls on an even position (a key), so of the {records} records {cut_six} "
        "are cut (at 5 there are {cut_five}), and full reuse answers {reuse_accuracy}% of the questions on "
        "{documents} fresh documents, as full prefill does. Where the boundaries cut dependencies decides what "
        "reuse loses; real text has dependencies everywhere, so any cut breaks some.",
        (Part("cut_six", "The records cut", "records", 0), Part("reuse_accuracy", "Full reuse's accuracy", "%", 0.02)),
        cut_records_six,
    ),
    Exercise(
        27,
        7,
        "The free layer-0 deviation",
        "Why can CacheBlend compute every token's attention deviation at layer 0 for free? Can it do the same at "
        "layer 1?",
        "cacheblend",
        {"cacheblend_view": "One document"},
        "What do layer 0's K and V depend on?",
        "The lecture's points are beside the view.",
        points=(
            "Layer 0's K and V depend only on the token and its position, so the precomputed ones are already "
            "the right ones.",
            "With that one K and V, attention under two masks (own chunk only, and everything before) gives the "
            "precomputed output and the full-prefill output; their difference is the deviation.",
            "Layer 1's input already depends on the context: its right K and V need layer 0's true output first, "
            "so only the selected tokens can be recomputed there.",
        ),
    ),
    Exercise(
        27,
        8,
        "The recompute ratio",
        "A model has 32 layers; reading one layer's KV from the SSD takes 10 ms and fully prefilling one layer "
        "20 ms. What recompute ratio does CacheBlend's controller pick? What is the time to first token (ignoring "
        "the question's own compute)?",
        "cacheblend",
        {"cacheblend_view": "Loading controller"},
        "The controller makes recompute hide under loading: r × prefill ≈ load, never below 15%.",
        "r × 20 ms = 10 ms gives r = {ratio}% (above the 15% floor). Each layer costs max(10, r × 20) ms, so the "
        "time to first token is 32 × 10 = {ttft_ms} ms, against {full_ms} ms for a full prefill.",
        (Part("ratio", "The recompute ratio", "%"), Part("ttft_ms", "The time to first token", "ms")),
        controller,
    ),
    Exercise(
        27,
        9,
        "LMCache's own process",
        "Besides fewer copies, what does LMCache gain by running as a separate service process instead of a KV "
        "library inside each inference process? What does it cost?",
        "ledger",
        {"ledger_view": "Tiers"},
        "Think of who else could use a KV store that lives outside the engine, and what crossing a process costs.",
        "The lecture's points are beside the view.",
        points=(
            "Gains: KV work takes no time from the inference process; upgrading the engine leaves the KV service "
            "alone.",
            "Different engines and instances share one copy of the KV; researchers write plug-ins in the KV "
            "service without changing the engine.",
            "Costs: inter-process communication and synchronisation, and an interface agreed with the engine "
            "(zero copy needs shared memory or direct GPU access).",
            "One more service to operate and make fault tolerant.",
        ),
    ),
    Exercise(
        27,
        10,
        "The narrow waist",
        "Give an example of the narrow waist (the serving API) blocking a KV optimisation from being used, and "
        "sketch an API extension that could help.",
        "eviction",
        {},
        "What does an application know about its prompts that the API cannot tell the cache?",
        "The lecture's points are beside the view.",
        points=(
            "A RAG application knows which documents many requests will reuse and which user inputs are one-off, "
            "but the API passes only tokens, so the backend's cache can only guess with LRU (the lecture's script: "
            "45% against 99%).",
            "Extensions: mark reusable segments and how long to keep them; explicit warm-up and release calls; "
            "pass documents by id instead of text, so the backend looks up their KV.",
            "The hard part is getting every backend to support it and every application to change.",
        ),
    ),
)

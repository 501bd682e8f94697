"""Lecture 9's eight exercises (context management: Mooncake, CacheGen and Strata), each answered by kvviz.

Every number the worked answers quote is computed here by the core the pages use: KV bytes per token
(``kvviz.common.hardware``), the break-even bandwidth and load times (``kvviz.ledger.ledger``), chained
block hashes (``kvviz.traces.hashing``), CacheGen's context sizes (``kvviz.cachegen.levels``), Little's
law (``kvviz.strata.io``), the Conductor's Algorithm 1 (``kvviz.mooncake.placement``) and Strata's
delay-hit deferral on SGLang's tree (``kvviz.radix.scheduler``).
"""

from __future__ import annotations

from kvviz.cachegen.levels import context_mb
from kvviz.common import hardware as hw
from kvviz.common.budget import GIB
from kvviz.exercises.exercise import Exercise, Part
from kvviz.ledger import ledger
from kvviz.mooncake.overload.config import POLICY_LABELS as OVERLOAD_POLICIES
from kvviz.mooncake.placement import cache_aware_choice, kvcentric_choice
from kvviz.mooncake.prefill import PrefillModel
from kvviz.radix.inflight import StrataRadixCache
from kvviz.radix.request import Request
from kvviz.radix.scheduler import Scheduler, SchedulerConfig
from kvviz.strata.io import littles_law
from kvviz.traces.hashing import chain_block_hashes


def _link(gb_s: float) -> hw.LinkSpec:
    """A link that delivers ``gb_s`` GB/s: the exercises give effective bandwidths."""
    return hw.LinkSpec(f"{gb_s} GB/s", gb_s, 1.0)


def breakeven() -> dict[str, float]:
    q, compute, tokens = hw.model("qwen2.5-14b"), hw.Compute(hw.gpu("h100")), 8_000
    per_token = ledger.recompute_seconds_per_token(q, compute, tokens)
    return {
        "kv_kib": q.kv_bytes_per_token / hw.KIB,
        "prefill_ms": 1e3 * hw.prefill_seconds(q, compute, tokens),
        "per_token_us": 1e6 * per_token,
        "breakeven": ledger.breakeven_bytes_s(q, compute, tokens) / hw.GB,
        "ssd_ms": 1e3 * ledger.load_seconds(ledger.kv_bytes(q, tokens), _link(5.6)),
        "mla_breakeven": 70e3 / per_token / hw.GB,
    }


def _shared_blocks(a: list[int], b: list[int]) -> int:
    """Leading blocks whose chained hashes agree: what B can reuse of A."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def chained() -> dict[str, float]:
    block = 512
    system, doc_d, doc_e = list(range(1_200)), list(range(10_000, 13_000)), list(range(20_000, 23_000))
    q1, q2 = list(range(30_000, 30_080)), list(range(40_000, 40_150))
    a = chain_block_hashes(system + doc_d + q1, block)
    b = chain_block_hashes(system + doc_d + q2, block)
    e = chain_block_hashes(system + doc_e + q2, block)
    a_tokens = len(system) + len(doc_d) + len(q1)
    return {
        "a_tokens": a_tokens,
        "a_blocks": len(a),
        "a_tail": a_tokens - block * len(a),
        "b_reuse": _shared_blocks(a, b),
        "e_reuse": _shared_blocks(a, e),
        "third_system": len(system) - 2 * block,
    }


def cachegen_sums() -> dict[str, float]:
    tokens, recompute = 9_600, 1.51
    values = {"fp16": 16, "q8": 8, "cg": 2.3}
    out: dict[str, float] = {"recompute_s": recompute}
    for name, bits in values.items():
        out[f"{name}_mb"] = context_mb(bits, "mistral-7b", tokens)
        nbytes = out[f"{name}_mb"] * 1e6
        out[f"{name}_s"] = ledger.load_seconds(nbytes, _link(3 / 8))
        out[f"{name}_10_s"] = ledger.load_seconds(nbytes, _link(10 / 8))
    return out


def littles() -> dict[str, float]:
    pcie = 64.0
    one = littles_law(1, 64e3, 4e-6) / hw.GB
    two = littles_law(2, 64e3, 4e-6) / hw.GB
    kernel = littles_law(1_000, 128, 1e-6) / hw.GB
    return {"one": one, "one_share": 100 * one / pcie, "two": two, "two_share": 100 * two / pcie, "kernel": kernel}


def kvcentric() -> dict[str, float]:
    block = 512
    per_block = PrefillModel(overhead_s=0.0, per_token_s=0.1 / block, per_token2_s=0.0)
    own, queue, length = [4, 18], [0.5, 3.0], 20 * block

    def fetch(seconds_per_block: float) -> float:
        return kvcentric_choice(own, queue, length, block, per_block, 1.0, seconds_per_block).ttft_s

    return {
        "a_local": cache_aware_choice(own[:1], queue[:1], length, block, per_block).ttft_s,
        "a_fetch": fetch(0.002),
        "to_b": cache_aware_choice(own[1:], queue[1:], length, block, per_block).ttft_s,
        "a_fetch_slow": fetch(0.15),
    }


def _document_computed(deferral: bool, doc_tokens: int) -> int:
    """Document tokens prefilled when three questions on one new document arrive together."""
    doc = tuple(range(doc_tokens))
    scheduler = Scheduler(StrataRadixCache(), SchedulerConfig(deferral=deferral))
    scheduler.round([Request(f"q{i}", doc + (doc_tokens + i,) * 10, generates=1) for i in range(3)])
    while not scheduler.idle:
        scheduler.round()
    return scheduler.totals["computed"] - 3 * 10


def delay_hits() -> dict[str, float]:
    doc_tokens, recompute = 30_000, 2.0
    without = _document_computed(False, doc_tokens) / doc_tokens
    deferred = _document_computed(True, doc_tokens) / doc_tokens
    return {
        "times_without": without,
        "gpu_without": without * recompute,
        "times_with": deferred,
        "saved": (without - deferred) * recompute,
    }


def agent() -> dict[str, float]:
    m, tokens, pcie = hw.model("llama-3-8b"), 1_000_000, hw.LINKS["pcie5-x16"]
    nbytes = ledger.kv_bytes(m, tokens)
    return {
        "kv_gib": nbytes / GIB,
        "pcie_gb_s": pcie.effective_bytes_s / hw.GB,
        "load_s": ledger.load_seconds(nbytes, pcie),
    }


LOAD_ONE_CONTEXT = {"ledger_view": "Load or recompute", "ledger_lr": "One context, every link"}

EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        9,
        1,
        "Break-even bandwidth",
        "Qwen2.5-14B keeps 192 KiB of KV per token and prefills 8,000 tokens in 351 ms on one H100. "
        "(a) What is its break-even bandwidth? (b) Is KV on an NVMe SSD (5.6 GB/s effective) worth loading? "
        "(c) And for an MLA model with only 70 KB of KV per token and the same compute?",
        "ledger",
        LOAD_ONE_CONTEXT
        | {
            "ledger_model": hw.MODEL_TITLES["qwen2.5-14b"],
            "ledger_gpu": hw.GPU_TITLES["h100"],
            "ledger_context": "8000",
        },
        "Loading pays when moving a token's KV takes less time than recomputing it: divide the KV bytes per token "
        "by the recompute time per token.",
        "Recomputing takes {prefill_ms} ms / 8,000 = {per_token_us} µs per token, and a token's KV is {kv_kib} KiB, "
        "so the break-even bandwidth is {breakeven} GB/s. (b) From the SSD the 8,000 tokens' KV loads in "
        "{ssd_ms} ms against {prefill_ms} ms to recompute: a little faster, and with the SSD's seek and small-read "
        "overheads about even. (c) 70 KB per token needs only {mla_breakeven} GB/s: the SSD is far above it, so "
        "smaller KV makes slower storage tiers worth using.",
        (
            Part("breakeven", "(a) the break-even bandwidth", "GB/s"),
            Part("ssd_ms", "(b) the time to load the 8,000 tokens' KV from the SSD", "ms"),
            Part("mla_breakeven", "(c) the MLA model's break-even bandwidth", "GB/s"),
        ),
        breakeven,
    ),
    Exercise(
        9,
        2,
        "Chained hashing",
        "Blocks are 512 tokens. Request A is a system prompt (1,200 tokens) + document D (3,000 tokens) + "
        "question 1 (80 tokens); request B is the system prompt + document D + question 2 (150 tokens). (a) How "
        "many full blocks does A have? (b) How many of A's blocks can B reuse? (c) And if B is the system prompt + "
        "document E + a question?",
        "prefix_cache",
        {"prefix_view": "Worked example", "prefix_engine": "vLLM"},
        "A block's hash covers its parent's hash too, so two requests share blocks only up to the first block "
        "whose tokens differ; a partial last block is not cached.",
        "(a) A has {a_tokens} tokens: {a_blocks} full blocks (the last {a_tail} tokens do not fill a block and are not "
        "cached). (b) A and B agree on their first 4,200 tokens, which cover all {b_reuse} blocks: B reuses "
        "{b_reuse}. (c) Only the first 1,200 tokens agree: {e_reuse} blocks. The third block holds the last "
        "{third_system} tokens of the system prompt and the start of the document, so its hash differs, and every "
        "later hash with it.",
        (
            Part("a_blocks", "(a) A's full blocks", "blocks", 0),
            Part("b_reuse", "(b) the blocks B reuses", "blocks", 0),
            Part("e_reuse", "(c) the blocks reused with document E", "blocks", 0),
        ),
        chained,
    ),
    Exercise(
        9,
        3,
        "CacheGen's sums",
        "Mistral-7B keeps 65,536 KV values per token; the context is 9,600 tokens, the network 3 Gb/s, and an A40 "
        "recomputes the whole context in about 1.51 s. (a) How big is the KV in FP16, with 8-bit quantisation and "
        "with CacheGen (about 2.3 bits per value), and how long does each take to send? (b) Which gives the "
        "shortest time to first token? (c) And at 10 Gb/s?",
        "cachegen",
        {"cachegen_view": "Codec"},
        "Size = tokens × values per token × bits per value; time = size ÷ bandwidth (3 Gb/s is 0.375 GB/s).",
        "(a) FP16: {fp16_mb} MB, {fp16_s} s; 8-bit: {q8_mb} MB, {q8_s} s; CacheGen: {cg_mb} MB, {cg_s} s. "
        "(b) CacheGen ({cg_s} s plus a small decoding cost) beats recomputing ({recompute_s} s), which beats 8-bit "
        "({q8_s} s) and FP16 ({fp16_s} s): KV not compressed enough loses to sending the text. (c) At 10 Gb/s: "
        "FP16 {fp16_10_s} s, 8-bit {q8_10_s} s, CacheGen {cg_10_s} s — all beat recomputing, and the faster the "
        "network, the less compression gains (the paper's Figure 11 sees the same above 20 Gb/s).",
        (
            Part("fp16_mb", "(a) the FP16 KV", "MB"),
            Part("fp16_s", "(a) the time to send it in FP16", "s"),
            Part("q8_s", "(a) the time to send it in 8 bits", "s"),
            Part("cg_s", "(a) the time to send it with CacheGen", "s"),
            Part("cg_10_s", "(c) CacheGen's time at 10 Gb/s", "s"),
        ),
        cachegen_sums,
    ),
    Exercise(
        9,
        4,
        "Little's law",
        "Estimate with X = C · S / L: (a) each cudaMemcpyAsync moves 64 KB with 4 µs latency and only one is in "
        "flight: what throughput, and what share of PCIe 5.0 (64 GB/s)? (b) With two in flight? (c) A GPU kernel "
        "with 1,000 threads, each moving 128 bytes per access at 1 µs latency?",
        "strata",
        {"strata_view": "Page size", "strata_flight": "1"},
        "Throughput is what is in flight divided by how long each piece takes: concurrency × size ÷ latency.",
        "(a) 64 KB / 4 µs = {one} GB/s, {one_share}% of the link (Strata measured 22%, the same order). "
        "(b) {two} GB/s, {two_share}%. (c) 1,000 × 128 B / 1 µs = {kernel} GB/s, above PCIe's peak, so the link "
        "caps it near its peak: high concurrency lets small pieces fill the link — GPU-assisted I/O (Strata "
        "reaches about 50 GB/s with two thread blocks).",
        (
            Part("one", "(a) the throughput with one copy in flight", "GB/s"),
            Part("one_share", "(a) its share of PCIe 5.0", "%"),
            Part("two", "(b) the throughput with two in flight", "GB/s"),
            Part("kernel", "(c) the kernel's throughput by Little's law", "GB/s"),
        ),
        littles,
    ),
    Exercise(
        9,
        5,
        "The KVCache-centric choice",
        "A request has 20 blocks. Instance A holds 4 of them locally and has a 0.5 s queue; instance B holds 18 "
        "and has a 3 s queue. Each missed block takes 0.1 s to prefill, and fetching a block from another machine "
        "0.002 s. Compare the time to first token of three choices: A computes from its own blocks, A fetches 14 "
        "blocks from B and then computes, or the request goes to B.",
        "cluster",
        {"cluster_view": "Scheduling"},
        "Each choice costs its queue, plus any fetch, plus the blocks it still has to prefill.",
        "A alone: 0.5 + 16 × 0.1 = {a_local} s. A fetching from B: 0.5 + 14 × 0.002 + 2 × 0.1 = {a_fetch} s. "
        "B: 3 + 2 × 0.1 = {to_b} s. The Conductor fetches, and the 14 blocks now live on A too: the hot prefix "
        "has a second copy (hot-spot migration). If fetching slows down (a congested network, 0.15 s a block), "
        "fetching costs {a_fetch_slow} s, worse than A computing alone — why Mooncake finds transfer time the "
        "hardest to predict and sets a threshold.",
        (
            Part("a_local", "A computing alone", "s"),
            Part("a_fetch", "A fetching 14 blocks from B", "s"),
            Part("to_b", "Sending the request to B", "s"),
        ),
        kvcentric,
    ),
    Exercise(
        9,
        6,
        "Delay hits",
        "A new 30,000-token document is asked about by 3 requests within 10 ms; recomputing it takes 2 s. "
        "(a) If the three requests go into the same batch or two adjacent ones, how many times is this prefill "
        "computed in the worst case? (b) How much does Strata's deferral save, and what does it cost?",
        "radix",
        {"radix_source": "Preset", "radix_preset": "Delay hits (Strata)"},
        "All three are scheduled before the first one's KV exists, so each misses the cache.",
        "(a) {times_without} times ({gpu_without} s of GPU time), and in one batch they hold three copies in GPU "
        "memory. (b) Strata hangs an in-flight node for the document in the radix tree; the later two match it, "
        "are deferred to the next round (at the head of the queue) and then hit the first one's KV: the document "
        "is computed {times_with} time, saving {saved} s of GPU time. The cost is one batch of extra wait for "
        "the later two; Strata defers only when the match runs over more than 100 tokens, so a short shared "
        "prefix never delays a request.",
        (
            Part("times_without", "(a) the times the document is computed without deferral", "times", 0),
            Part("saved", "(b) the GPU time deferral saves", "s"),
        ),
        delay_hits,
    ),
    Exercise(
        9,
        7,
        "Why early rejection oscillates",
        "Explain in the language of control systems why early rejection makes the load oscillate. Besides "
        "Mooncake's system-level prediction, what else could damp the oscillation?",
        "cluster",
        {"cluster_view": "Overload", "cluster_policy": OVERLOAD_POLICIES["early"]},
        "Look at when the decode load is observed and when the requests admitted on it reach decode.",
        "The lecture's points are beside the view.",
        points=(
            "It is a feedback loop with delay: the control (how many requests to accept) acts on an observation "
            "(the decode load) that lags the state it changes by one prefill.",
            "The loop gain is high: decode full means reject everything, decode free means accept everything. "
            "Delay plus high gain oscillates.",
            "Predict: use the load at the moment the request will enter decode instead of the load now "
            "(Mooncake's answer) — it compensates for the delay.",
            "Lower the gain: not all-or-nothing, but an acceptance probability that follows the load smoothly, "
            "or some headroom kept in decode.",
            "Shorten the delay: faster prefill and shorter queues; and predict output lengths so the decode "
            "load is forecast better.",
            "In the simulation the ideal prediction (output lengths known) wastes least, yet completes fewer "
            "requests than no early rejection: what matters is where the bottleneck is.",
        ),
    ),
    Exercise(
        9,
        8,
        "A million-token agent",
        "A coding agent works all day on one repository (about 1 million tokens), hundreds of steps, each "
        "appending a few hundred tokens. With this lecture's tools: where does its KV live? Should each step "
        "load it again? What page size? Can it be compressed?",
        "ledger",
        {"ledger_view": "Size", "ledger_model": hw.MODEL_TITLES["llama-3-8b"], "ledger_context": "1000000"},
        "Size the KV first (Llama-3-8B), then compare it with one GPU's memory and with the time to bring it back "
        "over PCIe.",
        "At Llama-3-8B's KV, a million tokens take {kv_gib} GiB: no single GPU holds it. Bringing it back over PCIe "
        "5.0 ({pcie_gb_s} GB/s effective) takes {load_s} s, so no step should reload it.",
        (Part("kv_gib", "The KV of a million tokens", "GiB"), Part("load_s", "The time to load it over PCIe 5.0", "s")),
        agent,
        points=(
            "It does not fit one GPU: split it over several GPUs (sharded KV) or keep it in CPU memory.",
            "Keep it on the GPUs across steps and load only what was swapped out: long context plus a short "
            "question is loading-bound, so it needs large or GPU-assisted copies overlapped layer by layer.",
            "The shared prefix is the whole repository, so the page size barely changes the hit rate: large "
            "pages, or a page-first CPU layout, copy more efficiently.",
            "Compress it (CacheGen) to move it between machines or into cold storage; the copy that attention "
            "reads stays in the model's own format.",
            "Better still, read less: sparse attention reads only the relevant part, or the repository is "
            "distilled into a smaller representation.",
        ),
    ),
)

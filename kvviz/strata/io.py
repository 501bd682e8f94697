"""Strata's I/O ledger: fragmented copies, the loading-bound prefill, and balanced batching.

Follows Strata (Xie et al., arXiv 2508.18572: §3.1-§3.2, §4.2-§4.3) and lecture 9 §4:

* Little's law for copies, ``X = C · S / L`` (§3.1): a copy of ``S`` bytes costs a fixed overhead
  ``L0`` plus ``S / B``, so one stream reaches ``eff(S) = (S/B) / (L0 + S/B)`` of the link. ``L0`` is
  fitted to the paper's two points (22% of PCIe 5.0 and ~5% on GH200 for Llama-3.1-8B, page 32,
  layer-first copies of one layer's K or V). It is a model fitted to two numbers, not a measurement.
* Layouts (§4.2.1): layer-first copies one page of one layer's K (or V) at a time; page-first keeps a
  page's layers together on the host, one copy per page; GPU-assisted I/O (§4.2) is a copy kernel,
  flat at ~50 GB/s whatever the page size.
* Loading-bound prefill (§3.2, §4.3.2): with layer-by-layer overlap a batch takes
  ``max(load + compute/L, load/L + compute)``; the part above its compute is the stall.
* Balanced batching (§4.3.2, Algorithm 1): walk the queue in order, defer a request that would make
  the batch's load/compute token ratio exceed a threshold, add bundle hits (requests on the same
  context load it once), then fill the batch from the deferred list; every round restarts at the head.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from kvviz.common import paper
from kvviz.common.errors import require
from kvviz.common.hardware import GB, KIB, Compute, ModelSpec, prefill_seconds

LAYOUTS = ("layer-first DMA", "page-first DMA", "GPU-assisted")
GPU_IO_GB_S = 50.0  # Strata §4.2: 2 blocks × 1024 threads reach ~50 GB/s (text also says 48)
PAPER_POINTS = (  # (platform, link GB/s, share of peak) for 64 KiB layer-first slices
    ("PCIe 5.0 x16 (H200 node)", 64.0, 0.22),
    ("GH200 NVLink-C2C", 384.0, 0.05),
)
PAPER_SLICE_BYTES = 64 * KIB  # Llama-3.1-8B, page 32: one layer's K (or V), the copy the two points measure
PAPER_BURST_TOTAL_S = (4.14, 2.72)  # lecture 9 §4.3: FCFS and balanced batching, batches of 2
PAPER_BURST_STALL_S = (1.59, 0.18)
STRATA_THRESHOLD = 100.0  # §4.3.2: load/compute ratio where stalls start on the paper's testbed


def littles_law(concurrency: float, size_bytes: float, latency_s: float) -> float:
    """Throughput (bytes/s) of ``concurrency`` copies in flight, each ``size_bytes`` taking ``latency_s``."""
    require(
        concurrency > 0 and size_bytes > 0 and latency_s > 0,
        "concurrency, transfer size and latency must all be > 0",
        field="littles_law",
    )
    return concurrency * size_bytes / latency_s


def copy_efficiency(size_bytes: float, link_bytes_s: float, overhead_s: float, concurrency: int = 1) -> float:
    """Share of the link that ``concurrency`` streams of ``size_bytes`` copies reach (capped at 1)."""
    require(link_bytes_s > 0, "link bandwidth must be > 0", field="link_gb_s")
    require(overhead_s >= 0, "per-copy overhead must be ≥ 0", field="overhead_us")
    wire = size_bytes / link_bytes_s
    return min(1.0, concurrency * wire / (overhead_s + wire))


def fit_overhead(points: Iterable[tuple[float, float, float]]) -> float:
    """The per-copy overhead (s) that best fits ``(size_bytes, link_bytes_s, efficiency)`` points.

    Least squares on the relative error of the efficiency, so a 5% point counts as much as a 22% one.
    """
    pts = list(points)
    require(len(pts) >= 1, "need at least one point to fit", field="points")
    for s, b, e in pts:
        require(s > 0 and b > 0 and 0 < e < 1, f"bad fit point {(s, b, e)}", field="points")

    def loss(l0_us: float) -> float:
        return sum(((copy_efficiency(s, b, l0_us * 1e-6) - e) / e) ** 2 for s, b, e in pts)

    return minimize_scalar(loss, bounds=(1e-3, 1e3), method="bounded", options={"xatol": 1e-6}).x * 1e-6


def paper_overhead_us() -> float:
    """The per-copy overhead (µs) fitted to Strata's two points, for its 64 KiB copies."""
    return fit_overhead([(PAPER_SLICE_BYTES, b * GB, e) for _, b, e in PAPER_POINTS]) * 1e6


def slice_bytes(m: ModelSpec, page_tokens: int) -> float:
    """One layer-first copy: one page of one layer's K (or V; for MLA the shared latent)."""
    return page_tokens * m.kv_heads * m.head_dim * m.bytes_per_value


def transfer_plan(m: ModelSpec, tokens: int, page_tokens: int, layout: str) -> tuple[int, float]:
    """(number of copies, bytes per copy) to move ``tokens`` tokens of KV in ``layout``."""
    require(
        page_tokens >= 1 and float(page_tokens).is_integer(),
        f"page size must be ≥ 1 token, got {page_tokens}",
        field="page_tokens",
    )
    require(layout in LAYOUTS, f"layout must be one of {', '.join(LAYOUTS)}", field="layout")
    pages = math.ceil(tokens / page_tokens)
    if layout == "layer-first DMA":
        per_layer = 1 if m.attention == "MLA" else 2
        return pages * m.layers * per_layer, slice_bytes(m, page_tokens)
    return pages, page_tokens * m.kv_bytes_per_token


@dataclass(frozen=True)
class IOPath:
    """A CPU→GPU path: link peak, the fitted per-copy overhead, copies in flight, the copy-kernel rate."""

    link_gb_s: float = 64.0
    overhead_us: float = 3.6
    concurrency: int = 1
    gpu_io_gb_s: float = GPU_IO_GB_S

    def __post_init__(self):
        require(self.link_gb_s > 0, f"link bandwidth must be > 0 GB/s, got {self.link_gb_s}", field="link_gb_s")
        require(self.overhead_us >= 0, f"per-copy overhead must be ≥ 0 µs, got {self.overhead_us}", field="overhead_us")
        require(self.concurrency >= 1, f"copies in flight must be ≥ 1, got {self.concurrency}", field="concurrency")
        require(
            self.gpu_io_gb_s > 0, f"copy-kernel bandwidth must be > 0 GB/s, got {self.gpu_io_gb_s}", field="gpu_io_gb_s"
        )

    def bandwidth(self, m: ModelSpec, page_tokens: int, layout: str) -> float:
        """Effective bytes/s for KV in ``layout`` with pages of ``page_tokens``."""
        peak = self.link_gb_s * GB
        if layout == "GPU-assisted":
            return min(peak, self.gpu_io_gb_s * GB)
        _, size = transfer_plan(m, page_tokens, page_tokens, layout)
        return peak * copy_efficiency(size, peak, self.overhead_us * 1e-6, self.concurrency)


def page_sweep(m: ModelSpec, io: IOPath, tokens: int, pages: Sequence[int]) -> pd.DataFrame:
    """For each page size and layout: copy size, copies, time to load ``tokens`` tokens, share of peak."""
    rows = []
    for p in pages:
        for layout in LAYOUTS:
            n, size = transfer_plan(m, tokens, int(p), layout)
            bw = io.bandwidth(m, int(p), layout)
            rows.append(
                {
                    "page tokens": int(p),
                    "layout": layout,
                    "copy KiB": size / KIB,
                    "copies": n,
                    "load ms": tokens * m.kv_bytes_per_token / bw * 1e3,
                    "effective GB/s": bw / GB,
                    "share of peak": bw / (io.link_gb_s * GB),
                }
            )
    return pd.DataFrame(rows)


def size_for_share(share: float, link_gb_s: float, overhead_us: float) -> float:
    """Copy size (bytes) one stream needs to reach ``share`` of the link: ``L0·B·share/(1-share)``."""
    require(0 < share < 1, f"share must be in (0, 1), got {share}", field="share")
    return overhead_us * 1e-6 * link_gb_s * GB * share / (1 - share)


# ---- the loading-bound prefill --------------------------------------------------------------------


def batch_time(load_s: float, compute_s: float, layers: int) -> tuple[float, float]:
    """(time, stall) of a batch whose load is overlapped with compute layer by layer."""
    if load_s <= 0:
        return compute_s, 0.0
    t = max(load_s + compute_s / layers, load_s / layers + compute_s)
    return t, t - compute_s


def loading_curve(
    m: ModelSpec, compute: Compute, new_tokens: int, ratios: Sequence[float], paths: dict[str, float]
) -> pd.DataFrame:
    """Compute time and load time (per named path, bytes/s) against load/compute token ratio."""
    rows = []
    for r in ratios:
        cached = r * new_tokens
        row = {
            "ratio": float(r),
            "cached tokens": cached,
            "compute ms": prefill_seconds(m, compute, new_tokens, cached) * 1e3,
        }
        for name, bw in paths.items():
            load = cached * m.kv_bytes_per_token / bw
            total, stall = batch_time(load, row["compute ms"] / 1e3, m.layers)
            row[f"{name} load ms"] = load * 1e3
            row[f"{name} stall %"] = 100 * stall / total
        rows.append(row)
    return pd.DataFrame(rows)


def knee_ratio(m: ModelSpec, compute: Compute, new_tokens: int, load_bytes_s: float) -> float:
    """Load/compute token ratio at which loading the context takes as long as computing the new tokens.

    Compute grows linearly in the cached length ``c = r·n`` (attention to the context), so does the
    load; the two lines cross once, or never (``inf``) if compute grows faster.
    """
    n = float(new_tokens)
    base = prefill_seconds(m, compute, n, 0)
    slope_compute = prefill_seconds(m, compute, n, n) - base  # per unit of r
    slope_load = n * m.kv_bytes_per_token / load_bytes_s
    return base / (slope_load - slope_compute) if slope_load > slope_compute else math.inf


# ---- balanced batching ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PrefillJob:
    """A request as the loading-bound prefill sees it: no tokens, only how many to load from host
    memory and how many to compute, when it arrives, and the context it shares (if any)."""

    rid: int
    kind: str  # a label for the timeline ("long doc + question", "fresh prompt")
    arrival_s: float
    cached_tokens: int  # context already in host memory, to load
    new_tokens: int  # tokens to prefill
    context_id: str | None = None  # requests on the same context load it once per batch (bundle hits)


def burst_example(
    doc_tokens: int = 28_672,
    question_tokens: int = 256,
    fresh_tokens: int = 3_584,
    per_burst: int = 8,
    bursts: int = 2,
    gap_s: float = 0.0,
) -> list[PrefillJob]:
    """Lecture 9 §4.3's burst: ``per_burst`` questions on long cached documents, then as many fresh long
    prompts, repeated ``bursts`` times, ``gap_s`` apart. Every document is different (no bundle hits)."""
    for v, name in (
        (doc_tokens, "doc_tokens"),
        (question_tokens, "question_tokens"),
        (fresh_tokens, "fresh_tokens"),
        (per_burst, "per_burst"),
        (bursts, "bursts"),
    ):
        require(v >= 1 and float(v).is_integer(), f"{name} must be a whole number ≥ 1, got {v}", field=name)
    require(gap_s >= 0, f"gap must be ≥ 0 s, got {gap_s}", field="gap_s")
    out: list[PrefillJob] = []
    for b in range(bursts):
        for _ in range(per_burst):
            out.append(
                PrefillJob(len(out), "long doc + question", b * gap_s, doc_tokens, question_tokens, f"doc{len(out)}")
            )
        for _ in range(per_burst):
            out.append(PrefillJob(len(out), "fresh prompt", b * gap_s, 0, fresh_tokens))
    return out


@dataclass(frozen=True)
class Batch:
    index: int
    start_s: float
    load_s: float
    compute_s: float
    time_s: float
    stall_s: float
    requests: tuple[PrefillJob, ...]

    @property
    def end_s(self) -> float:
        return self.start_s + self.time_s


@dataclass(frozen=True)
class Schedule:
    policy: str
    batches: tuple[Batch, ...] = field(default_factory=tuple)

    @property
    def total_s(self) -> float:
        return self.batches[-1].end_s if self.batches else 0.0

    @property
    def stall_s(self) -> float:
        return sum(b.stall_s for b in self.batches)


def _load_tokens(batch: Sequence[PrefillJob]) -> int:
    seen, total = set(), 0
    for r in batch:
        if r.context_id is None or r.context_id not in seen:
            total += r.cached_tokens
        if r.context_id is not None:
            seen.add(r.context_id)
    return total


def _ratio(batch: Sequence[PrefillJob]) -> float:
    new = sum(r.new_tokens for r in batch)
    return _load_tokens(batch) / new if new else math.inf


def _bundle(r: PrefillJob, queue: Sequence[PrefillJob], taken: set[int]) -> list[PrefillJob]:
    return [q for q in queue if q.context_id is not None and q.context_id == r.context_id and q.rid not in taken]


def pick_balanced(queue: Sequence[PrefillJob], batch_size: int, threshold: float) -> list[PrefillJob]:
    """One round of balanced batching over the FIFO ``queue`` (Strata Algorithm 1, paraphrased)."""
    batch, taken, deferred = [], set(), []

    def add(r: PrefillJob) -> None:
        for q in [r] + _bundle(r, queue, taken | {r.rid}):
            if len(batch) < batch_size and q.rid not in taken:
                batch.append(q)
                taken.add(q.rid)

    add(queue[0])
    for r in queue[1:]:
        if len(batch) >= batch_size:
            break
        if r.rid in taken:
            continue
        group = [r] + _bundle(r, queue, taken | {r.rid})
        if _ratio(batch + group[: batch_size - len(batch)]) > threshold:
            deferred.append(r)
        else:
            add(r)
    for r in deferred:
        if len(batch) >= batch_size:
            break
        if r.rid not in taken:
            add(r)
    return batch


def schedule(
    requests: Sequence[PrefillJob],
    m: ModelSpec,
    compute: Compute,
    load_bytes_s: float,
    policy: str = "balanced",
    batch_size: int = 2,
    threshold: float = 10.0,
) -> Schedule:
    """Run the queue to empty, one prefill batch at a time, with FCFS or balanced batching."""
    require(policy in ("fcfs", "balanced"), f"policy must be 'fcfs' or 'balanced', got {policy!r}", field="policy")
    require(batch_size >= 1, f"batch size must be ≥ 1, got {batch_size}", field="batch_size")
    require(threshold > 0, f"threshold must be > 0, got {threshold}", field="threshold")
    require(load_bytes_s > 0, "load bandwidth must be > 0", field="load_gb_s")
    pending = sorted(requests, key=lambda r: (r.arrival_s, r.rid))
    t, batches = 0.0, []
    while pending:
        t = max(t, pending[0].arrival_s)
        queue = [r for r in pending if r.arrival_s <= t]
        chosen = queue[:batch_size] if policy == "fcfs" else pick_balanced(queue, batch_size, threshold)
        load = _load_tokens(chosen) * m.kv_bytes_per_token / load_bytes_s
        comp = sum(prefill_seconds(m, compute, r.new_tokens, r.cached_tokens) for r in chosen)
        time_s, stall = batch_time(load, comp, m.layers)
        batches.append(Batch(len(batches), t, load, comp, time_s, stall, tuple(chosen)))
        t += time_s
        ids = {r.rid for r in chosen}
        pending = [r for r in pending if r.rid not in ids]
    return Schedule(policy, tuple(batches))


def schedule_frame(s: Schedule) -> pd.DataFrame:
    """One row per batch: start, load, compute, time and stall (seconds), and what it held."""
    return pd.DataFrame(
        [
            {
                "policy": s.policy,
                "batch": b.index,
                "start s": b.start_s,
                "load s": b.load_s,
                "compute s": b.compute_s,
                "time s": b.time_s,
                "stall s": b.stall_s,
                "load/compute tokens": _ratio(b.requests),
                "requests": ", ".join(r.kind.split(" + ")[0] for r in b.requests),
            }
            for b in s.batches
        ]
    )


def log_ratios(lo: float = 1, hi: float = 1000, n: int = 61) -> np.ndarray:
    return np.geomspace(lo, hi, n)


def paper_rows(
    m: ModelSpec, overhead_us: float, knee: float, fcfs: Schedule | None = None, balanced: Schedule | None = None
) -> list[dict[str, str]]:
    """Strata's numbers (§3.1, §4.3.2) and lecture 9 §4's beside this model's.

    With the fitted overhead, the 22% and 5% rows are calibrations (L0 is fitted to them); the
    burst's totals are calibrations too (``burst_example``'s lengths were chosen to land near them).
    """
    pcie = IOPath(64.0, overhead_us).bandwidth(m, 32, "layer-first DMA") / (64 * GB)
    gh = IOPath(384.0, overhead_us).bandwidth(m, 32, "layer-first DMA") / (384 * GB)
    page1 = IOPath(64.0, overhead_us).bandwidth(m, 1, "layer-first DMA") / (64 * GB)
    lo, hi = size_for_share(0.75, 64, overhead_us), size_for_share(0.80, 64, overhead_us)
    fitted = abs(overhead_us - paper_overhead_us()) < 0.01 and slice_bytes(m, 32) == PAPER_SLICE_BYTES

    def share_row(quantity: str, reported: str, target: float, sim: float) -> dict[str, str]:
        if fitted:
            return paper.calibrated(
                quantity, reported, f"{sim:.1%}", f"L0 = {overhead_us:.2f} µs is fitted to 22% and 5%"
            )
        return paper.close(quantity, reported, f"{sim:.1%}", (target, sim), 0.1)

    rows = [
        share_row(f"{m.name}, page 32, layer-first copies: share of PCIe 5.0", "≈ 22%", 0.22, pcie),
        share_row("…on GH200 (NVLink-C2C, 384 GB/s)", "≈ 5%", 0.05, gh),
        paper.check("…at page 1", "< 1% (course notes: CS349D lecture 9 §4)", f"{page1:.2%}", page1 < 0.01, "below 1%"),
        paper.check(
            "Copy size for 75–80% of PCIe 5.0",
            "1–2 MB (0.95–1.91 MiB)",
            f"{lo / KIB**2:.2f}–{hi / KIB**2:.2f} MiB",
            lo <= 2e6 and hi >= 1e6,
            "the range overlaps 0.95–1.91 MiB",
        ),
        paper.check(
            "Loading-bound knee, GPU-assisted I/O (Qwen2.5-14B, H200, 256 new tokens)",
            "between 10 and 20 (paper GPU); Strata uses 100 on real hardware",
            f"{knee:.1f}",
            10 <= knee <= 20,
            "within 10–20",
        ),
    ]
    if fcfs is not None and balanced is not None:
        rows += [
            paper.calibrated(
                "Burst, batch of 2: FCFS / balanced total",
                " / ".join(f"{t} s" for t in PAPER_BURST_TOTAL_S),
                f"{fcfs.total_s:.2f} s / {balanced.total_s:.2f} s",
                "the notes give no request lengths; 28,672-token documents, 256-token questions and "
                "3,584-token fresh prompts were chosen to land near these totals",
            ),
            paper.close(
                "Burst, batch of 2: FCFS / balanced time stalled on loading",
                " / ".join(f"{t} s" for t in PAPER_BURST_STALL_S),
                f"{fcfs.stall_s:.2f} s / {balanced.stall_s:.2f} s",
                list(zip(PAPER_BURST_STALL_S, (fcfs.stall_s, balanced.stall_s), strict=True)),
                0.1,
            ),
        ]
    return rows

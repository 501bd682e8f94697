"""A tiered KV cache for multi-turn chat: GPU HBM, then CPU DRAM, then SSD (LMCache-style).

Follows lecture 27 §6.3 (code 05: many users in multi-turn sessions on one GPU; GPU-only LRU vs
adding CPU DRAM and SSD, and slow vs fast CPU reads). Each user's history is one cache entry that
grows every turn. A single GPU serves prefills first-come first-served: a request finds its user's
history in the fastest tier that holds it, loads it (``bytes ÷ read bandwidth``, not overlapped),
then computes the rest on the paper GPU (:func:`kvviz.common.hardware.prefill_seconds`). Decoding is not
simulated: replies appear when the prefill ends, and their KV is stored with the history.

Two ways lower tiers are filled:

* ``spill`` — a tier holds what the tier above evicted (a victim cache; tiers add up);
* ``write-through`` — every new KV is also written to every lower tier (LMCache stores each chunk
  to all its backends), so a lower tier only helps if it is larger than the GPU's share.

Each tier evicts least-recently-used entries. Capacities are in GiB (memory counts in binary units
on every page) and read bandwidths in GB/s; the notes' decimal capacities (58 GB of KV room, a 50 GB
CPU tier, a 500 GB SSD) are the defaults rounded to GiB (54, 47 and 466 GiB).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kvviz.common import paper
from kvviz.common.budget import GIB
from kvviz.common.errors import require
from kvviz.common.hardware import GB, Compute, ModelSpec, prefill_seconds
from kvviz.common.numbers import readable

FILL_MODES = ("spill", "write-through")
MAX_REQUESTS = 20_000


@dataclass(frozen=True)
class ChatLoad:
    """Users in multi-turn sessions: arrivals are Poisson at ``rate_per_s``; each user's turns in order."""

    users: int = 200
    turns: int = 12
    rate_per_s: float = 10.0
    first_tokens: int = 1_000  # a per-user system prompt / document in the first turn
    user_tokens: int = 200
    reply_tokens: int = 480
    jitter: float = 0.5  # lengths drawn uniformly within ±jitter of the mean
    seed: int = 0

    def __post_init__(self):
        for name in ("users", "turns", "user_tokens"):
            v = getattr(self, name)
            require(v >= 1 and float(v).is_integer(), f"{name} must be a whole number ≥ 1, got {v}", field=name)
        require(
            self.users * self.turns <= MAX_REQUESTS,
            f"users × turns must be ≤ {MAX_REQUESTS:,}, got {self.users * self.turns:,}",
            field="users",
        )
        require(self.rate_per_s > 0, f"request rate must be > 0 per second, got {self.rate_per_s}", field="rate_per_s")
        require(self.first_tokens >= 0 and self.reply_tokens >= 0, "token counts must be ≥ 0", field="reply_tokens")
        require(0 <= self.jitter < 1, f"jitter must be in [0, 1), got {self.jitter}", field="jitter")


@dataclass(frozen=True)
class TierSetup:
    """One cache configuration: capacities in GiB (0 = no such tier) and read bandwidths in GB/s."""

    name: str
    gpu_gib: float = 54.0
    cpu_gib: float = 0.0
    cpu_read_gb_s: float = 50.0
    ssd_gib: float = 0.0
    ssd_read_gb_s: float = 5.6
    fill: str = "spill"

    def __post_init__(self):
        require(self.gpu_gib > 0, f"{self.name}: GPU KV room must be > 0 GiB, got {self.gpu_gib}", field="gpu_gib")
        require(self.cpu_gib >= 0 and self.ssd_gib >= 0, f"{self.name}: capacities must be ≥ 0 GiB", field="cpu_gib")
        require(self.cpu_read_gb_s > 0, f"{self.name}: CPU read bandwidth must be > 0 GB/s", field="cpu_read_gb_s")
        require(self.ssd_read_gb_s > 0, f"{self.name}: SSD read bandwidth must be > 0 GB/s", field="ssd_read_gb_s")
        require(self.fill in FILL_MODES, f"fill must be one of {', '.join(FILL_MODES)}", field="fill")


def default_setups(
    gpu_gib: float = 54.0,
    cpu_gib: float = 47.0,
    slow_gb_s: float = 10.0,
    fast_gb_s: float = 50.0,
    ssd_gib: float = 466.0,
    ssd_gb_s: float = 5.6,
    fill: str = "spill",
) -> list[TierSetup]:
    """The notes' ladder: GPU only; + CPU with slow reads; + CPU with fast reads; + CPU (fast) + SSD."""
    cpu, slow, fast, ssd = (readable(v) for v in (cpu_gib, slow_gb_s, fast_gb_s, ssd_gib))
    return [
        TierSetup("GPU only (LRU)", gpu_gib, fill=fill),
        TierSetup(f"+ CPU {cpu} GiB, {slow} GB/s", gpu_gib, cpu_gib, slow_gb_s, fill=fill),
        TierSetup(f"+ CPU {cpu} GiB, {fast} GB/s", gpu_gib, cpu_gib, fast_gb_s, fill=fill),
        TierSetup(f"+ CPU (fast) + SSD {ssd} GiB", gpu_gib, cpu_gib, fast_gb_s, ssd_gib, ssd_gb_s, fill=fill),
    ]


def requests(load: ChatLoad) -> pd.DataFrame:
    """The request stream: arrival, user, turn, prompt tokens, reply tokens (deterministic in ``seed``)."""
    rng = np.random.default_rng(load.seed)
    n = load.users * load.turns
    arrival = np.cumsum(rng.exponential(1 / load.rate_per_s, n))
    users = rng.permutation(np.repeat(np.arange(load.users), load.turns))

    def draw(mean: int) -> np.ndarray:
        return np.maximum(0, np.rint(mean * rng.uniform(1 - load.jitter, 1 + load.jitter, n))).astype(np.int64)

    user_msg, reply, first = np.maximum(draw(load.user_tokens), 1), draw(load.reply_tokens), draw(load.first_tokens)
    turn = np.zeros(n, dtype=np.int64)
    prompt = np.zeros(n, dtype=np.int64)
    history = np.zeros(load.users, dtype=np.int64)
    seen = np.zeros(load.users, dtype=np.int64)
    for i, u in enumerate(users):
        turn[i] = seen[u] + 1
        prompt[i] = history[u] + user_msg[i] + (first[i] if seen[u] == 0 else 0)
        history[u] = prompt[i] + reply[i]
        seen[u] += 1
    return pd.DataFrame({"arrival s": arrival, "user": users, "turn": turn, "prompt": prompt, "reply": reply})


class _LRU:
    """One tier: user → stored tokens, least recently used first."""

    def __init__(self, capacity_bytes: float):
        self.capacity, self.used, self.entries = capacity_bytes, 0.0, OrderedDict()

    def pop(self, user: int, per_token: float) -> int:
        tokens = self.entries.pop(user, 0)
        self.used -= tokens * per_token
        return tokens

    def put(self, user: int, tokens: int, per_token: float) -> list[tuple[int, int]]:
        """Store (replacing any older copy); return the evicted entries, oldest first."""
        self.pop(user, per_token)
        if tokens * per_token > self.capacity:
            return []
        evicted = []
        while self.used + tokens * per_token > self.capacity:
            victim, vt = self.entries.popitem(last=False)
            self.used -= vt * per_token
            evicted.append((victim, vt))
        self.entries[user] = tokens
        self.used += tokens * per_token
        return evicted


def simulate(m: ModelSpec, compute: Compute, load: ChatLoad, setup: TierSetup) -> pd.DataFrame:
    """Replay the chat load through one tier setup; one row per request with its TTFT and hit tier."""
    reqs = requests(load)
    per_token = m.kv_bytes_per_token
    tiers = [("GPU", _LRU(setup.gpu_gib * GIB), None)]
    if setup.cpu_gib > 0:
        tiers.append(("CPU", _LRU(setup.cpu_gib * GIB), setup.cpu_read_gb_s * GB))
    if setup.ssd_gib > 0:
        tiers.append(("SSD", _LRU(setup.ssd_gib * GIB), setup.ssd_read_gb_s * GB))
    free_at = 0.0
    out = {k: np.zeros(len(reqs)) for k in ("start s", "hit tokens", "load s", "compute s")}
    where = np.empty(len(reqs), dtype=object)
    for i, (arrival, user, prompt, reply) in enumerate(
        zip(reqs["arrival s"], reqs["user"], reqs["prompt"], reqs["reply"], strict=True)
    ):
        start = max(arrival, free_at)
        hit, tier_name, load_s = 0, "miss", 0.0
        for name, lru, read in tiers:
            if user in lru.entries:
                hit, tier_name = min(int(lru.entries[user]), int(prompt)), name
                load_s = 0.0 if read is None else hit * per_token / read
                if setup.fill == "spill":
                    lru.pop(user, per_token)
                break
        comp = prefill_seconds(m, compute, prompt - hit, hit)
        free_at = start + load_s + comp
        _store(tiers, setup.fill, int(user), int(prompt + reply), per_token)
        out["start s"][i], out["hit tokens"][i], out["load s"][i], out["compute s"][i] = start, hit, load_s, comp
        where[i] = tier_name
    reqs = reqs.assign(**out, tier=where)
    reqs["TTFT s"] = reqs["start s"] + reqs["load s"] + reqs["compute s"] - reqs["arrival s"]
    return reqs


def _store(tiers: list, fill: str, user: int, tokens: int, per_token: float) -> None:
    if fill == "write-through":
        for _, lru, _ in tiers:
            lru.put(user, tokens, per_token)
        return
    for _, lru, _ in tiers[1:]:
        lru.pop(user, per_token)  # exclusive tiers: the fresh copy lives on the GPU only
    spilled = [(user, tokens)]
    for _, lru, _ in tiers:
        nxt = []
        for u, t in spilled:
            nxt.extend(lru.put(u, t, per_token))
        spilled = nxt
        if not spilled:
            break


def summarize(name: str, run: pd.DataFrame) -> dict:
    """Token shares served by each tier, TTFT percentiles and how busy the GPU was."""
    total = run["prompt"].sum()
    share = {f"{t} hit %": 100 * run.loc[run["tier"] == t, "hit tokens"].sum() / total for t in ("GPU", "CPU", "SSD")}
    busy = (run["load s"] + run["compute s"]).sum()
    span = (run["start s"] + run["load s"] + run["compute s"]).max() - run["arrival s"].min()
    ttft = run["TTFT s"]
    late = run.tail(max(1, len(run) // 8))
    late_span = max(late["arrival s"].iloc[-1] - late["arrival s"].iloc[0], 1e-9)
    return {
        "setup": name,
        **share,
        "recomputed %": 100 - sum(share.values()),
        "mean TTFT s": ttft.mean(),
        "p50 TTFT s": ttft.median(),
        "p90 TTFT s": ttft.quantile(0.9),
        "GPU busy %": 100 * busy / span,
        "last 1/8: TTFT s": late["TTFT s"].mean(),
        "last 1/8: offered load": (late["load s"] + late["compute s"]).sum() / late_span,
    }


def ttft_over_time(runs: pd.DataFrame, bins: int = 24) -> pd.DataFrame:
    """Mean TTFT per setup in ``bins`` equal windows of arrival time (where a queue builds up, it shows)."""
    edges = np.linspace(runs["arrival s"].min(), runs["arrival s"].max(), bins + 1)
    window = pd.cut(runs["arrival s"], edges, include_lowest=True, labels=(edges[:-1] + edges[1:]) / 2)
    out = runs.assign(t=window.astype(float)).groupby(["setup", "t"], sort=False, observed=True)["TTFT s"].mean()
    return out.reset_index()


def ttft_by_source(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean TTFT (s) per setup by where the user's history was found (queueing included), and request counts."""
    order = [t for t in ("GPU", "CPU", "SSD", "miss") if t in set(runs["tier"])]
    mean = runs.pivot_table(index="setup", columns="tier", values="TTFT s", aggfunc="mean", sort=False)
    count = runs.pivot_table(index="setup", columns="tier", values="TTFT s", aggfunc="count", sort=False)
    out = mean[order].round(3).astype(object)
    for t in order:
        out[t] = [f"{v:.3f} s ({int(n)})" if pd.notna(v) else "–" for v, n in zip(mean[t], count[t], strict=True)]
    return out.reset_index()


def compare(
    m: ModelSpec, compute: Compute, load: ChatLoad, setups: list[TierSetup]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every setup; return the summary table and all runs (long form, with a ``setup`` column)."""
    runs = [simulate(m, compute, load, s).assign(setup=s.name) for s in setups]
    summary = pd.DataFrame([summarize(s.name, r) for s, r in zip(setups, runs, strict=True)])
    return summary, pd.concat(runs, ignore_index=True)


def total_kv_gib(m: ModelSpec, load: ChatLoad) -> float:
    """KV of every user's full history at the end of the run, GiB (the notes: 241 GB = 224 GiB)."""
    reqs = requests(load)
    last = reqs.groupby("user").last()
    return float((last["prompt"] + last["reply"]).sum() * m.kv_bytes_per_token / GIB)


NOTES_TOTAL_GB = 241
"""The notes' KV of 200 users × 12 turns of Llama-3-8B, decimal GB."""


def paper_rows(summary: pd.DataFrame, total_gib: float) -> list[dict[str, str]]:
    """Lecture 27 §6.3 (code 05 and the LMCache slides) beside this run (rows in default_setups order)."""
    s = summary.set_index("setup")
    gpu_only, slow, fast = s.iloc[0], s.iloc[1], s.iloc[2]
    ratio = slow["mean TTFT s"] / fast["mean TTFT s"]
    rows = [
        paper.close(
            "All users' KV (200 users × 12 turns, Llama-3-8B)",
            f"{NOTES_TOTAL_GB} GB = {readable(NOTES_TOTAL_GB * GB / GIB)} GiB",
            f"{readable(total_gib)} GiB",
            (NOTES_TOTAL_GB * GB / GIB, total_gib),
            0.05,
        ),
        paper.check(
            "GPU only (LRU, ~58 GB = 54 GiB of KV room)",
            "others' KV is evicted; recompute fills the GPU; queue explodes",
            f"{gpu_only['recomputed %']:.0f}% of tokens recomputed; in the last 1/8 of the run the GPU is offered "
            f"{gpu_only['last 1/8: offered load']:.2f}× its capacity and mean TTFT reaches "
            f"{gpu_only['last 1/8: TTFT s']:.1f} s",
            gpu_only["recomputed %"] > 50
            and gpu_only["last 1/8: offered load"] > 1
            and gpu_only["last 1/8: TTFT s"] > 5 * fast["last 1/8: TTFT s"],
            "over half the tokens recomputed, offered load > 1 and late TTFT > 5× the fast CPU tier's",
        ),
        paper.close(
            "Same CPU tier (50 GB = 46.6 GiB): slow (10 GB/s) vs fast (50 GB/s) reads",
            "mean TTFT 5× apart",
            f"{ratio:.1f}× apart",
            (5, ratio),
            0.4,
        ),
    ]
    if len(s) > 3:
        ssd = s.iloc[3]
        rows.append(
            paper.check(
                "Adding an SSD tier",
                "hit rate and TTFT improve further",
                f"recomputed {fast['recomputed %']:.0f}% → {ssd['recomputed %']:.0f}%; mean TTFT "
                f"{fast['mean TTFT s']:.2f} → {ssd['mean TTFT s']:.2f} s",
                ssd["mean TTFT s"] < 0.95 * fast["mean TTFT s"] and ssd["recomputed %"] < fast["recomputed %"],
                "fewer tokens recomputed and mean TTFT at least 5% lower",
            )
        )
    return rows

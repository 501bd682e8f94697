"""Timings of the ledger page's computations (prints numbers; not a test)."""

import time

import numpy as np

from kvviz.common import hardware as hw
from kvviz.ledger import ledger, tiers
from kvviz.strata import io as sio


def timed(label: str, fn, repeat: int = 3) -> None:
    best = min(_once(fn) for _ in range(repeat))
    print(f"{label:<55s} {best * 1e3:9.1f} ms")


def _once(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    m, c = hw.model("llama-3-8b"), hw.Compute(hw.gpu("h100"))
    q, h200 = hw.model("qwen2.5-14b"), hw.Compute(hw.gpu("h200"))
    contexts = np.unique(np.r_[np.geomspace(256, 1_048_576, 49).astype(int), 2 ** np.arange(8, 21)])
    timed("break-even curves, 7 models x 57 contexts", lambda: ledger.breakeven_table(hw.MODELS.values(), c, contexts))
    timed("20-turn chat, 8 links", lambda: ledger.multi_turn_ttft(m, c, ledger.Chat(), hw.LINKS))
    timed("page sweep, 11 page sizes x 3 layouts", lambda: sio.page_sweep(m, sio.IOPath(), 8192, 2 ** np.arange(11)))
    timed("overhead fit to the two paper points", lambda: sio.fit_overhead([(65536, 64e9, 0.22), (65536, 384e9, 0.05)]))
    knee = sio.knee_ratio(q, h200, 256, 50e9)
    timed(
        "balanced + FCFS schedules of the 32-request burst",
        lambda: [sio.schedule(sio.burst_example(), q, h200, 50e9, p, 2, knee) for p in ("fcfs", "balanced")],
    )
    load = tiers.ChatLoad()
    timed("tiered cache: 200 users x 12 turns, one setup", lambda: tiers.simulate(m, c, load, tiers.TierSetup("g")), 2)
    timed(
        "tiered cache: the 4-setup ladder (cached on the page)",
        lambda: tiers.compare(m, c, load, tiers.default_setups()),
        1,
    )
    big = tiers.ChatLoad(users=2000, turns=10, rate_per_s=50)
    timed(
        "tiered cache: 2,000 users x 10 turns, one setup",
        lambda: tiers.simulate(m, c, big, tiers.default_setups()[3]),
        1,
    )

"""What a page or the CLI shows of streamed runs: one trace's per-chunk timeline, each policy's
violation rate, quality and TTFT, and where in the bandwidth range each policy fails."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kvviz.cachegen.streaming.bandwidth import Bandwidth
from kvviz.cachegen.streaming.setup import StreamSetup
from kvviz.cachegen.streaming.transfer import Run


def timeline(setup: StreamSetup, run: Run, trace: int = 0) -> pd.DataFrame:
    """The per-chunk table of one trace: start, end, configuration, size, bandwidth seen."""
    names = np.array(setup.config_names)
    return pd.DataFrame(
        {
            "policy": run.policy,
            "chunk": np.arange(setup.n_chunks),
            "tokens": setup.tokens,
            "start_s": run.start[trace],
            "end_s": run.end[trace],
            "config": names[run.config[trace]],
            "MB": run.bits[trace] / 8e6,
            "gbps_seen": run.seen_gbps[trace],
            "estimate_gbps": run.estimate_gbps[trace],
            "quality": setup.quality[np.arange(setup.n_chunks), run.config[trace]],
            "kl": setup.kl[np.arange(setup.n_chunks), run.config[trace]],
        }
    )


def summary(runs: list[Run]) -> pd.DataFrame:
    """Per policy over its K traces: SLO-violation rate, mean quality, mean and p95 TTFT."""
    return pd.DataFrame(
        [
            {
                "policy": r.policy,
                "violation_rate": float(1 - r.met.mean()),
                "mean_quality": float(r.quality.mean()),
                "mean_ttft_s": float(r.ttft.mean()),
                "p95_ttft_s": float(np.percentile(r.ttft, 95)),
            }
            for r in runs
        ]
    )


def by_mean_bandwidth(runs: list[Run], bw: Bandwidth, bins: int = 8) -> pd.DataFrame:
    """Violation rate and mean quality per policy, with the traces grouped by the mean bandwidth
    their chunks see (equal-count groups): where in the bandwidth range each policy fails."""
    n = runs[0].config.shape[1]
    mean = bw.gbps[:, :n].mean(axis=1)
    groups = min(bins, bw.traces)
    edges = np.quantile(mean, np.linspace(0, 1, groups + 1))
    group = np.clip(np.searchsorted(edges, mean, side="right") - 1, 0, groups - 1)
    rows = []
    for run in runs:
        for g in range(groups):
            pick = group == g
            if pick.any():
                rows.append(
                    {
                        "policy": run.policy,
                        "mean_gbps": float(mean[pick].mean()),
                        "traces": int(pick.sum()),
                        "violation_rate": float(1 - run.met[pick].mean()),
                        "mean_quality": float(run.quality[pick].mean()),
                    }
                )
    return pd.DataFrame(rows)

"""How strongly the prefill load swings in a run, and how it moves against the decode load."""

from __future__ import annotations

import numpy as np
import pandas as pd


def lagged_correlation(x: np.ndarray, y: np.ndarray, max_lag: int) -> tuple[float, int]:
    """The most negative correlation of x(t + k) with y(t) over lags |k| <= max_lag samples, and its k."""
    best, best_k = 0.0, 0
    for k in range(-max_lag, max_lag + 1):
        a, b = (x[k:], y[: len(y) - k]) if k >= 0 else (x[: len(x) + k], y[-k:])
        if len(a) > 2 and a.std() > 0 and b.std() > 0:
            c = float(np.corrcoef(a, b)[0, 1])
            if c < best:
                best, best_k = c, k
    return best, best_k


def oscillation(loads: pd.DataFrame, warmup_share: float = 0.1, max_lag_s: float = 30.0) -> dict:
    """How strongly the prefill load swings: its std, dominant period and amplitude, and the
    anti-phase with decode load: the most negative correlation of prefill load (lagged by up to
    ``max_lag_s`` either way) with decode load, and that lag (positive: prefill trails decode).
    The first ``warmup_share`` of the samples is skipped."""
    pre = loads["prefill_load"].to_numpy()
    dec = loads["decode_load"].to_numpy()
    skip = int(len(pre) * warmup_share)
    pre, dec = pre[skip:], dec[skip:]
    if len(pre) < 8:
        return {
            "prefill_load_std": 0.0,
            "decode_load_std": 0.0,
            "period_s": 0.0,
            "amplitude": 0.0,
            "anti_phase_corr": 0.0,
            "anti_phase_lag_s": 0.0,
        }
    step = float(loads["time_s"].iloc[1] - loads["time_s"].iloc[0])
    spectrum = np.abs(np.fft.rfft(pre - pre.mean())) * 2 / len(pre)
    k = int(np.argmax(spectrum[1:])) + 1
    corr, lag = lagged_correlation(pre, dec, min(int(max_lag_s / step), len(pre) // 4))
    return {
        "prefill_load_std": round(float(pre.std()), 4),
        "decode_load_std": round(float(dec.std()), 4),
        "period_s": round(len(pre) * step / k, 1),
        "amplitude": round(float(spectrum[k]), 4),
        "anti_phase_corr": round(corr, 3),
        "anti_phase_lag_s": round(lag * step, 1),
    }

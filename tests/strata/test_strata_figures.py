"""Strata's figures: the loading-bound prefill's knees labelled where a curve cannot strike them through."""

from __future__ import annotations

from kvviz.common import hardware as hw
from kvviz.strata import figures as figs
from kvviz.strata import io as sio
from tests.ledger.test_ledger_figures import assert_labels_on_boxes

H100 = hw.Compute(hw.GPUS["h100"], hw.DEFAULT_MFU)


def _loading():
    m = hw.MODELS["llama-3-8b"]
    paths = {"GPU-assisted": 50 * hw.GB, "DMA page 32": sio.IOPath(64, 3.4).bandwidth(m, 32, "layer-first DMA")}
    knees = {k: sio.knee_ratio(m, H100, 256, v) for k, v in paths.items()}
    return figs.fig_loading(sio.loading_curve(m, H100, 256, sio.log_ratios(), paths), knees, 256)


def test_loading_labels_sit_on_a_box_and_log_axes_carry_magnitudes():
    assert_labels_on_boxes(_loading())


def test_knee_labels_stack():
    heights = [a.y for a in _loading().layout.annotations]
    assert len(heights) == 3 and len(set(heights)) == 3  # two knees and Strata's 100


def test_timeline_has_a_load_and_a_compute_lane_per_policy():
    m = hw.MODELS["llama-3-8b"]
    burst = sio.burst_example(per_burst=2, bursts=1)
    runs = [sio.schedule(burst, m, H100, 50 * hw.GB, policy) for policy in ("fcfs", "balanced")]
    fig = figs.fig_timeline(runs)
    assert list(fig.layout.yaxis.categoryarray) == [
        "Balanced · compute",
        "Balanced · load",
        "FCFS · compute",
        "FCFS · load",
    ]
    assert sum(len(t.x) for t in fig.data if t.name.startswith("compute")) == 4  # 2 policies × 2 batches of 2

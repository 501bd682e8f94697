"""The cluster and its admission knobs: pool sizes, SLOs, the decode cost model, the threshold and
the predictor's uniform decode time, where a prefill runs, and the admission policies by name.

The paper gives no threshold or t_d; the threshold defaults to 1 (load = SLO) and t_d (None) to
the mean output length times the TBT of a full batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from kvviz.common.errors import require
from kvviz.mooncake.prefill import PrefillModel

POLICIES: tuple[str, ...] = ("baseline", "early", "predict", "oracle")
POLICY_LABELS = {
    "baseline": "Baseline",
    "early": "Early rejection",
    "predict": "Early rejection + prediction",
    "oracle": "Oracle (true output lengths)",
}
POLICY_SHORT = {"baseline": "Baseline", "early": "Early", "predict": "Prediction", "oracle": "Oracle"}
"""A policy's name where room is short (a figure's axis, a table's column header)."""
PLACEMENTS: tuple[str, ...] = ("balance", "kvcentric")
PLACEMENT_LABELS = {"balance": "Load balancing", "kvcentric": "KVCache-centric"}
"""Where a prefill runs: the instance whose queue clears first, or Algorithm 1 over the instances'
caches (a trace with block ids only)."""


MAX_BATCH = 10_000


@dataclass(frozen=True)
class ClusterConfig:
    """Pool sizes, SLOs, the decode cost model and the admission knobs."""

    prefill_instances: int = 6
    decode_instances: int = 2
    batch_limit: int = 16  # requests per decode batch (KV memory)
    ttft_slo_s: float = 20.0
    tbt_slo_s: float = 0.1
    tbt_base_s: float = 0.02  # TBT(b) = base + per_request * b
    tbt_per_request_s: float = 0.005
    threshold: float = 1.0  # admit while load <= threshold
    t_d_s: float | None = None  # uniform decode time of the predictor; None: auto
    sample_s: float = 1.0  # load sampling step of the timeline
    window_s: float = 10.0  # counting window of the timeline
    placement: str = "balance"
    cache_blocks: int = 6000  # per prefill instance, with KVCache-centric placement
    prefill: PrefillModel = field(default_factory=PrefillModel)

    def validate(self) -> None:
        for name, label in (
            ("prefill_instances", "prefill instances"),
            ("decode_instances", "decode instances"),
            ("batch_limit", "decode batch limit"),
        ):
            require(1 <= getattr(self, name) <= MAX_BATCH, f"{label} must be in 1..10,000", field=name)
        for name, label in (
            ("ttft_slo_s", "the TTFT SLO"),
            ("tbt_slo_s", "the TBT SLO"),
            ("threshold", "the rejection threshold"),
            ("sample_s", "the sampling step"),
            ("window_s", "the timeline window"),
        ):
            require(getattr(self, name) > 0, f"{label} must be positive", field=name)
        require(
            self.tbt_base_s >= 0 and self.tbt_per_request_s >= 0 and self.tbt_base_s + self.tbt_per_request_s > 0,
            "TBT(b) = base + per_request * b needs non-negative terms, not both zero",
            field="tbt_base_s",
        )
        require(self.t_d_s is None or self.t_d_s > 0, "t_d must be positive", field="t_d_s")
        require(
            self.placement in PLACEMENTS, f"unknown placement; choose one of {', '.join(PLACEMENTS)}", field="placement"
        )
        require(
            1 <= self.cache_blocks <= 10_000_000, "cache capacity must be 1..10,000,000 blocks", field="cache_blocks"
        )
        require(
            self.decode_load(1) <= self.threshold,
            f"a decode instance cannot run even one request within the TBT SLO: TBT(1) = "
            f"{self.tbt(1) * 1000:.0f} ms against an SLO of {self.tbt_slo_s * 1000:.0f} ms (x threshold "
            f"{self.threshold:g}); raise the TBT SLO or the threshold",
            field="tbt_slo_s",
        )
        self.prefill.validate()

    def tbt(self, b: float) -> float:
        return self.tbt_base_s + self.tbt_per_request_s * b

    def decode_load(self, b: float) -> float:
        """Load of a decode instance running a batch of ``b``."""
        return max(self.tbt(b) / self.tbt_slo_s, b / self.batch_limit)

    def tbt_batch(self) -> int:
        """Largest batch whose TBT stays within threshold x the TBT SLO (at least 1), whatever the
        batch limit: a limit above it changes nothing."""
        if self.tbt_per_request_s == 0:
            return MAX_BATCH
        b = max(
            1, min(MAX_BATCH, math.floor((self.threshold * self.tbt_slo_s - self.tbt_base_s) / self.tbt_per_request_s))
        )
        while b < MAX_BATCH and self.tbt(b + 1) / self.tbt_slo_s <= self.threshold:
            b += 1
        while b > 1 and self.tbt(b) / self.tbt_slo_s > self.threshold:
            b -= 1
        return b

    def max_batch(self) -> int:
        """Largest batch whose load is within the threshold (at least 1)."""
        b = self.batch_limit
        while b > 1 and self.decode_load(b) > self.threshold:
            b -= 1
        return b


def with_defaults(config: ClusterConfig, **changes) -> ClusterConfig:
    """A copy of ``config`` with some fields changed (validated)."""
    new = replace(config, **changes)
    new.validate()
    return new

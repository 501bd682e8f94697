"""The prefill-time predictor f(len, prefix) of Algorithm 1, and the prefill instance it models.

The paper fits a polynomial offline; here f is linear (weights) plus quadratic (attention) in the
tokens computed, with the coefficients of :func:`kvviz.common.hardware.prefill_seconds` (one cost
model), plus a fixed overhead per request.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvviz.common import hardware as hw
from kvviz.common.errors import require

# One prefill instance of the cluster: a 70B model on 8 A100/A800 at 50% MFU (an assumption: the
# paper gives no MFU), plus a fixed 20 ms per request.
CLUSTER_MODEL = hw.model("llama-3.1-70b")
CLUSTER_COMPUTE = hw.Compute(hw.gpu("a100"), mfu=0.5, n_gpus=8)
OVERHEAD_S = 0.02
_PER_TOKEN_S, _PER_TOKEN2_S = hw.prefill_coefficients(CLUSTER_MODEL, CLUSTER_COMPUTE)


@dataclass(frozen=True)
class PrefillModel:
    """f(len, prefix): seconds to prefill tokens prefix..len on one instance.

    ``overhead_s + per_token_s·(len − prefix) + per_token2_s·(len² − prefix²)``; ``for_hardware``
    takes the two coefficients from :func:`kvviz.common.hardware.prefill_coefficients`, so f is the paper
    GPU's prefill time plus the overhead. The defaults are CLUSTER_MODEL on CLUSTER_COMPUTE.
    """

    overhead_s: float = OVERHEAD_S
    per_token_s: float = _PER_TOKEN_S
    per_token2_s: float = _PER_TOKEN2_S

    @classmethod
    def for_hardware(cls, m: hw.ModelSpec, compute: hw.Compute, overhead_s: float = OVERHEAD_S) -> PrefillModel:
        """f for model ``m`` on ``compute``: the paper GPU's prefill time plus ``overhead_s``."""
        return cls(overhead_s, *hw.prefill_coefficients(m, compute))

    def time(self, length, prefix=0):
        """Prefill seconds for ``length`` tokens of which the first ``prefix`` are cached."""
        if isinstance(length, (int, float)) and isinstance(prefix, (int, float)):
            prefix = min(prefix, length)
            return (
                self.overhead_s
                + self.per_token_s * (length - prefix)
                + self.per_token2_s * (length * length - prefix * prefix)
            )
        length = np.asarray(length, dtype=np.float64)
        prefix = np.minimum(np.asarray(prefix, dtype=np.float64), length)
        t = self.overhead_s + self.per_token_s * (length - prefix) + self.per_token2_s * (length**2 - prefix**2)
        return float(t) if t.ndim == 0 else t

    def validate(self) -> None:
        for name in ("overhead_s", "per_token_s", "per_token2_s"):
            require(getattr(self, name) >= 0, f"{name} must be >= 0", field=name)
        require(
            self.per_token_s + self.per_token2_s > 0,
            "the prefill model must cost something per token",
            field="per_token_s",
        )

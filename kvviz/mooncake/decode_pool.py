"""The decode side of Algorithm 1: each decode instance's TBT from its batch and KV load, and the
continuous batches the admitted requests decode in.

One decode step of a batch of ``b`` requests whose prompts hold ``kv`` tokens of KV takes
``TBT(b, kv) = base_s + per_request_s·b + per_kv_token_s·kv``: a decode step is memory-bound, so it
reads the weights once (the base) and every cached token's KV (the KV term), and computes a token
per request (the batch term). ``for_hardware`` takes the three from the model and GPU (one cost
model). The KV counted is the prompts': outputs are short beside them (182 tokens against 8,590 on
average in Mooncake's trace), and counting what is known on arrival keeps the prediction exact.

Algorithm 1 picks the decode instance by load balancing: the one whose predicted TBT is lowest once
the request is counted on it. A request counts on its instance from its admission (its prefill may
still be running) until its last token. The batch decoding on an instance is always among the
requests counted on it, so when every admission checks the counted requests plus itself against the
TBT SLO, no decode step is ever slower than the SLO.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from kvviz.common import hardware as hw
from kvviz.common.errors import require

DECODE_OVERHEAD_S = 0.01  # scheduling and kernel launches per step (an assumption)
HBM_EFFICIENCY = 0.8  # share of the HBM bandwidth a decode step achieves (the links' 0.8)


@dataclass(frozen=True)
class DecodeModel:
    """TBT(b, kv): seconds per output token of a batch of ``b`` requests holding ``kv`` prompt tokens."""

    base_s: float = 0.02
    per_request_s: float = 1e-4
    per_kv_token_s: float = 2.5e-8

    @classmethod
    def for_hardware(
        cls,
        m: hw.ModelSpec,
        compute: hw.Compute,
        overhead_s: float = DECODE_OVERHEAD_S,
        hbm_efficiency: float = HBM_EFFICIENCY,
    ) -> DecodeModel:
        """The weights read once per step, a token's FLOPs per request, the KV read per token."""
        bytes_s = compute.gpu.hbm_tb_s * 1e12 * compute.n_gpus * hbm_efficiency
        weights = m.params_b * 1e9 * m.bytes_per_value
        return cls(
            overhead_s + weights / bytes_s, 2 * m.params_b * 1e9 / compute.flops_per_s, m.kv_bytes_per_token / bytes_s
        )

    def tbt(self, batch: int, kv_tokens: float) -> float:
        return self.base_s + self.per_request_s * batch + self.per_kv_token_s * kv_tokens

    def validate(self) -> None:
        for name in ("base_s", "per_request_s", "per_kv_token_s"):
            value = getattr(self, name)
            require(math.isfinite(value) and value >= 0, f"{name} must be a finite number >= 0", field=name)
        require(self.base_s + self.per_request_s > 0, "a decode step must take some time", field="base_s")


class _Instance:
    """One decode instance: the requests counted on it, and the batch decoding now.

    The batch advances on a virtual token clock ``v`` (tokens each member has produced since the
    clock started); ``done`` holds (virtual finish, request), so the head finishes first.
    """

    __slots__ = ("counted", "counted_kv", "b", "kv", "v", "last", "done", "peak_tbt_s")

    def __init__(self):
        self.counted, self.counted_kv = 0, 0.0
        self.b, self.kv, self.v, self.last, self.peak_tbt_s = 0, 0.0, 0.0, 0.0, 0.0
        self.done: list[tuple[float, int]] = []

    def advance(self, t: float, model: DecodeModel) -> None:
        if self.b and t > self.last:
            self.v += (t - self.last) / model.tbt(self.b, self.kv)
        self.last = max(self.last, t)

    def next_finish(self, model: DecodeModel) -> float:
        return self.last + (self.done[0][0] - self.v) * model.tbt(self.b, self.kv) if self.b else math.inf


class DecodePool:
    """Decode instances running continuous batches, driven in time order by the Conductor's replay.

    ``choose`` is Algorithm 1's decode pick; ``admit`` counts a request on its instance and has it
    join the batch when its prefill ends; ``advance`` runs every join and finish up to a time.
    Per request it records when decoding started and ended (NaN if never admitted).
    """

    def __init__(self, instances: int, model: DecodeModel, n_requests: int):
        self.model = model
        self.instances = [_Instance() for _ in range(instances)]
        self.next_at = [math.inf] * instances  # each instance's next finish, kept current
        self.joins: list[tuple[float, int, int]] = []  # (prefill end, request, instance)
        self.prompt: dict[int, float] = {}
        self.output: dict[int, int] = {}
        self.start_s = np.full(n_requests, np.nan)
        self.end_s = np.full(n_requests, np.nan)

    def choose(self, prompt_tokens: int) -> tuple[int, float]:
        """The instance with the lowest predicted TBT once this request is counted on it, and that TBT."""
        tbt = self.model.tbt
        tbts = [tbt(inst.counted + 1, inst.counted_kv + prompt_tokens) for inst in self.instances]
        best = min(tbts)
        return tbts.index(best), best

    def admit(self, d: int, r: int, join_s: float, prompt_tokens: int, output_tokens: int) -> None:
        inst = self.instances[d]
        inst.counted += 1
        inst.counted_kv += prompt_tokens
        self.prompt[r], self.output[r] = prompt_tokens, max(1, output_tokens)
        heapq.heappush(self.joins, (join_s, r, d))

    def advance(self, t: float) -> None:
        """Every join and finish at or before ``t``, in time order (a join first on a tie)."""
        while True:
            join = self.joins[0][0] if self.joins else math.inf
            finish = min(self.next_at)
            first = join if join <= finish else finish
            if first > t or first == math.inf:
                return
            if join <= finish:
                self._join(*heapq.heappop(self.joins))
            else:
                self._finish(self.next_at.index(finish), finish)

    def drain(self) -> None:
        self.advance(math.inf)

    def _join(self, t: float, r: int, d: int) -> None:
        inst = self.instances[d]
        inst.advance(t, self.model)
        heapq.heappush(inst.done, (inst.v + self.output[r], r))
        inst.b += 1
        inst.kv += self.prompt[r]
        inst.peak_tbt_s = max(inst.peak_tbt_s, self.model.tbt(inst.b, inst.kv))
        self.start_s[r] = t
        self.next_at[d] = inst.next_finish(self.model)

    def _finish(self, d: int, t: float) -> None:
        """The head of ``done`` finishes now, exactly (the clock snaps to its entry), with every
        member whose entry is not later."""
        inst = self.instances[d]
        inst.advance(t, self.model)
        inst.v = max(inst.v, inst.done[0][0])
        while inst.done and inst.done[0][0] <= inst.v:
            _, r = heapq.heappop(inst.done)
            inst.b -= 1
            inst.kv -= self.prompt[r]
            inst.counted -= 1
            inst.counted_kv -= self.prompt.pop(r)
            self.end_s[r] = t
        self.next_at[d] = inst.next_finish(self.model)

    def tbt_s(self) -> np.ndarray:
        """Each request's mean time between tokens while decoding (NaN if never admitted)."""
        out = np.array([self.output.get(r, 1) for r in range(len(self.start_s))], dtype=np.float64)
        return (self.end_s - self.start_s) / out

    @property
    def peak_tbt_s(self) -> float:
        """The slowest step any decode instance took."""
        return max((inst.peak_tbt_s for inst in self.instances), default=0.0)

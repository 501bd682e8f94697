"""What one view of CacheGen streaming is computed from, as small frozen values (SIGCOMM'24 §5.3).

The page's controls become a ``StreamInputs``: the bandwidth source (``BandwidthSpec``), the
context, the chunk, the SLO and how text is recomputed. Everything a view shows follows from it
deterministically, so it is the key of every cached result and figure: a few numbers and
strings to hash on each rerun, never the bandwidth arrays or the runs themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kvviz.cachegen import levels
from kvviz.cachegen import streaming as S


@dataclass(frozen=True)
class BandwidthSpec:
    """A bandwidth source by name (``kvviz.cachegen.streaming.make_bandwidth``): K random traces,
    the step trace, or an uploaded ``time_s, gbps`` CSV (at most 1 MiB of bytes, cheap to hash)."""

    kind: str
    traces: int
    persistence: float = 0.9
    seed: int = 0
    csv: bytes | None = field(default=None, repr=False)
    csv_name: str = ""

    @property
    def random(self) -> bool:
        """Whether the source draws random traces (so K and the seed matter)."""
        return self.kind in ("persistent", "iid")

    def make(self, chunks: int) -> S.Bandwidth:
        """The traces, ``chunks`` values each for a per-chunk source."""
        return S.make_bandwidth(
            self.kind, self.traces, chunks, self.persistence, self.seed, self.csv, self.csv_name or "uploaded trace"
        )


@dataclass(frozen=True)
class StreamInputs:
    """The streaming views' inputs: level sizes from ``sizes``, a ``context``-token context in
    ``chunk``-token chunks, the SLO, text recompute (``prefill`` or ``fixed``), the bandwidth."""

    sizes: str
    context: int
    chunk: int
    slo: float
    recompute: str
    bandwidth: BandwidthSpec

    @property
    def study(self) -> levels.LevelStudy:
        return levels.LevelStudy.for_stream(self.sizes, self.context, self.chunk)

    def setup(self, measured: levels.Measured) -> S.StreamSetup:
        """The stream over the measured levels (validated: bad numbers raise ``InputError``)."""
        setup = S.StreamSetup(
            measured.levels,
            measured.quant8,
            context_tokens=self.context,
            chunk_tokens=self.chunk,
            slo_s=self.slo,
            recompute=self.recompute,
            per_chunk=measured.per_chunk,
        )
        setup.validate()
        return setup

    @property
    def n_chunks(self) -> int:
        return -(-self.context // self.chunk)

    def make_bandwidth(self) -> S.Bandwidth:
        return self.bandwidth.make(self.n_chunks)

    def at_slo(self, slo: float) -> StreamInputs:
        return replace(self, slo=float(slo))

    def settings(self, **extra: object) -> dict[str, object]:
        """Every input by the name its control shows, for a downloaded table's header."""
        bw = self.bandwidth
        out: dict[str, object] = {"bandwidth trace": bw.kind}
        if bw.kind == "persistent":
            out["persistence"] = bw.persistence
        if bw.random:
            out |= {"random traces (K)": bw.traces, "trace seed": bw.seed}
        out |= {
            "SLO (s)": self.slo,
            "context (tokens)": self.context,
            "chunk (tokens)": self.chunk,
            "level sizes encoded from": levels.SIZE_SOURCES[self.sizes],
            "text recompute": self.recompute,
        }
        return out | extra

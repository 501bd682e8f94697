"""Measured CacheGen levels for the streaming tests: the codec's sizes and the record-world model's
answers, computed once per test process (a few CPU seconds) on few documents."""

from __future__ import annotations

from dataclasses import replace

from kvviz.cachegen import levels
from kvviz.cachegen import streaming as S

STUDY = levels.LevelStudy(documents=20)


def measured() -> levels.Measured:
    return levels.measure(STUDY)


def real_setup(**changes) -> S.StreamSetup:
    """The paper's setting (Mistral-7B, 9,500 tokens in 1,500-token chunks, SLO 1 s) with measured levels."""
    m = measured()
    return replace(S.StreamSetup(m.levels, m.quant8), **changes)

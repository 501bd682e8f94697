"""Strata (arXiv 2508.18572): fragmented KV I/O, the loading-bound prefill and balanced batching (``io``),
and the Strata page's figures (``figures``).

Strata's in-flight radix nodes and its delay-hit deferral run on SGLang's tree and scheduler, so they
live beside them: ``kvviz.radix.inflight`` and ``kvviz.radix.scheduler``.
"""

"""Strata (arXiv 2508.18572): fragmented KV I/O, in-flight radix nodes and delay-hit scheduling."""

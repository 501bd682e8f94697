"""Mooncake: the Conductor's KVCache-centric scheduling (``conductor``, its notes in ``notes``),
overload-oriented admission (``overload``), and the cluster page's figures."""

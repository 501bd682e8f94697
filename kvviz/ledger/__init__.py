"""The KV ledger: KV size, load or recompute, what keeping it costs, storage tiers; notes and figures."""

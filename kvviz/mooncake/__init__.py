"""Mooncake: the Conductor's KVCache-centric scheduling and overload-oriented admission, the cluster page's notes and figures."""

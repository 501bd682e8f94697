"""Mooncake: the Conductor's scheduling with admission (``conductor``, over ``prefill``'s predictor,
``placement``'s four placements and ``decode_pool``'s TBT; its notes in ``notes``), overload-oriented
admission (``overload``), and the cluster page's figures."""

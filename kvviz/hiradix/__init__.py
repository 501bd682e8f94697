"""The compiled engine under every radix replay: SGLang 0.5.23's radix tree as arrays.

- :mod:`kvviz.hiradix.tree`: the array radix tree and the steps that serve one request
  (``new_tree``, ``match_length``, ``start``, ``evict_leaf``, ``drop_edge``, ``finish``, ``serve``);
- :mod:`kvviz.hiradix.keys`: the eviction keys, named as the object model
  (``kvviz.radix.radix_cache.STRATEGY``) names them;
- :mod:`kvviz.hiradix.heap`: the indexed heap of evictable leaves (the tree's and HiCache's tiers);
- :mod:`kvviz.hiradix.lists`: the linked queues, shared with the block-cache policies of
  ``kvviz.eviction`` and vLLM's block pool;
- :mod:`kvviz.hiradix.ids`: block ids numbered densely, as every compiled replay indexes them.

The prefix replay (``kvviz.prefix_cache``) and the tiered replay (``kvviz.tiers.cache``) run on
it. Importing this package imports nothing else: each module is imported where it is used.
"""

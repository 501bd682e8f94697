"""kvviz: simulations and models of how LLM KV caches behave.

The core never imports Streamlit; the app (``app.py``, ``pages/``, ``ui/``) sits on top of it. One package
per mechanism, each holding its model, its notes and paper rows, and its figures: ``traces`` (formats,
ingest, the library, the workload generator, hashing, reuse distance), ``eviction`` (block replay, the
policies, SHARDS), ``radix`` (SGLang's RadixCache and HiCache, events, scripted scenarios, scheduling),
``prefix_cache`` (trace-scale prefix caches), ``strata``, ``mooncake``, ``cachegen``, ``cacheblend`` and
``ledger``. ``common`` holds what every page shares (errors, arguments, budgets, the hardware and cost
model, paper rows, the figure style); ``commands`` and ``cli`` are the command line.
"""

__version__ = "0.1.0"

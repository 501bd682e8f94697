"""kvviz: simulations and models of how LLM KV caches behave.

The core never imports streamlit; the app (``app.py``, ``pages/``, ``ui/``) sits on top of it.
One module per mechanism: ``trace`` (request traces), ``hashing`` (prefix chain hashing),
``workload`` (synthetic traces), ``reuse`` (reuse and stack distances), ``style`` (figure
look), ``catalog`` (the page map), and the per-page mechanisms added by later issues.
"""

__version__ = "0.1.0"

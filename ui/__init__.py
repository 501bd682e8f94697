"""The dashboard's views: ``ui.kit`` (what every page shares: the frame, links, keys, presenter mode,
errors, tables, trace sources, uploads, long work, the server's start) and one package per page, named
as the page file in ``pages/`` is (``ui.tiers`` for ``pages/tiers.py``), holding the views and cached
work that would make the page long.

This package is the only place besides ``app.py`` and ``pages/`` that imports streamlit;
``kvviz/`` (the core) never does.
"""

"""Streamlit helpers shared by the pages: the frame, teaching sections and trace sources.

This package is the only place besides ``app.py`` and ``pages/`` that imports streamlit;
``kvviz/`` (the core) never does.
"""

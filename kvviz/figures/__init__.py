"""Figure builders, one module per page: plain functions that take results and return plotly
figures, so they are testable without a browser. Pages style them with ``ui.frame.figure``."""

"""A trace served by a cluster: instances with their own radix caches, behind a router.

``instance`` is each instance's cache (the one place the cluster uses the compiled radix engine),
``routers`` the routing rules as their sources decide, ``simulate`` the run over time and its summary.
"""

from kvviz.cluster.engines import ENGINES, parse_engine
from kvviz.cluster.routers import ROUTER_RULES, ROUTERS, RouterKnobs, parse_router
from kvviz.cluster.simulate import (
    REFERENCE,
    SUMMARY_COLUMNS,
    ClusterConfig,
    ClusterRun,
    compare,
    cost,
    reference_row,
    run,
    shared_hits,
    summary_row,
)

__all__ = [
    "ENGINES",
    "REFERENCE",
    "ROUTERS",
    "ROUTER_RULES",
    "SUMMARY_COLUMNS",
    "ClusterConfig",
    "ClusterRun",
    "RouterKnobs",
    "compare",
    "parse_engine",
    "cost",
    "parse_router",
    "reference_row",
    "run",
    "shared_hits",
    "summary_row",
]

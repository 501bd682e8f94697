"""Overload-oriented admission in a disaggregated cluster (Mooncake arXiv v3 §7, Table 3, Figs. 9-10).

``config`` holds the cluster, where prefills are placed and the admission policies,
``arrivals`` the offered requests (Poisson or a trace's) and each pool's capacity, ``simulation``
the event simulation of one policy and its work estimate, ``stats`` the swing of the prefill load
against the decode load, and ``report`` the overload view's tables, paper rows and prose.
"""

from kvviz.mooncake.overload.arrivals import (
    MAX_ARRIVALS,
    Arrivals,
    Capacity,
    capacity,
    poisson_arrivals,
    poisson_rate,
    trace_arrivals,
)
from kvviz.mooncake.overload.config import (
    PLACEMENT_LABELS,
    PLACEMENTS,
    POLICIES,
    POLICY_LABELS,
    POLICY_SHORT,
    ClusterConfig,
    with_defaults,
)
from kvviz.mooncake.overload.report import (
    display_table,
    overload_notes,
    overload_paper_note,
    paper_rows,
    prediction_effect,
    summary_table,
)
from kvviz.mooncake.overload.simulation import (
    ARRIVALS_PER_S,
    COMPLETED,
    MAX_SAMPLES,
    MAX_WINDOWS,
    REJECTED_AFTER_PREFILL,
    REJECTED_EARLY,
    SAMPLES_PER_S,
    OverloadResult,
    auto_t_d,
    compare,
    cost,
    simulate,
    steps,
)
from kvviz.mooncake.overload.stats import lagged_correlation, oscillation

__all__ = [
    "ARRIVALS_PER_S",
    "COMPLETED",
    "MAX_ARRIVALS",
    "MAX_SAMPLES",
    "PLACEMENTS",
    "PLACEMENT_LABELS",
    "MAX_WINDOWS",
    "POLICIES",
    "POLICY_LABELS",
    "POLICY_SHORT",
    "REJECTED_AFTER_PREFILL",
    "REJECTED_EARLY",
    "SAMPLES_PER_S",
    "Arrivals",
    "Capacity",
    "ClusterConfig",
    "OverloadResult",
    "auto_t_d",
    "capacity",
    "compare",
    "cost",
    "display_table",
    "lagged_correlation",
    "oscillation",
    "overload_notes",
    "overload_paper_note",
    "paper_rows",
    "poisson_arrivals",
    "poisson_rate",
    "prediction_effect",
    "simulate",
    "steps",
    "summary_table",
    "trace_arrivals",
    "with_defaults",
]

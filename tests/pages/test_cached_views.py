"""AppTest: every view with a cached function of its own survives a rerun and a second visitor.

Streamlit replays a cached function's elements on a cache hit; one that drew a progress bar or took
an element from an earlier run fails exactly then: on the rerun of the same session, or for the next
visitor, who gets the cached result. Each view is run, rerun, then opened by a second session of
the same server process (the caches are the process's), which must show the same key numbers. The
browser test (tests/e2e/test_links_browser.py) does the same through the real server for one view
per page.
"""

from __future__ import annotations

import pytest

from tests.conftest import open_page

LIGHT_CACHEGEN = {"cachegen_k": "100"}
VIEWS = [  # (page, URL query): every page, and each view with a cached function of its own
    ("home", {}),
    ("trace", {"trace_source": "Example"}),
    ("trace", {"trace_source": "Synthetic", "trace_requests": "500"}),
    ("eviction", {"eviction_source": "Example", "eviction_points": "6"}),
    ("radix", {}),
    ("ledger", {}),
    ("ledger", {"ledger_view": "Tiers"}),
    ("strata", {}),
    ("cluster", {"cluster_minutes": "5", "cluster_seeds": "1"}),
    ("cluster", {"cluster_view": "Scheduling", "cluster_source": "Example"}),
    ("cachegen", LIGHT_CACHEGEN),
    ("cachegen", {"cachegen_bw": "Step", **LIGHT_CACHEGEN}),
    ("cachegen", {"cachegen_sizes": "Record-world KV", **LIGHT_CACHEGEN}),
    ("cachegen", {"cachegen_view": "Violation vs SLO", **LIGHT_CACHEGEN}),
    ("cachegen", {"cachegen_view": "Violation vs SLO", "cachegen_against": "Mean bandwidth", **LIGHT_CACHEGEN}),
    ("cachegen", {"cachegen_view": "Violation vs SLO", "cachegen_against": "Persistence", **LIGHT_CACHEGEN}),
    (
        "cachegen",
        {"cachegen_view": "Codec", "cachegen_layers": "4", "cachegen_tokens": "256", "cachegen_channels": "32"},
    ),
    ("cachegen", {"cachegen_view": "Codec", "cachegen_kvsource": "Record-world model", "cachegen_docs": "40"}),
    ("cacheblend", {}),
    ("cacheblend", {"cacheblend_view": "Accuracy vs ratio"}),
    ("prefix_cache", {}),
    ("tiers", {"tiers_requests": "300"}),
]


def key_numbers(at) -> list[str]:
    """What a viewer reads off the page: its text, metric values, static tables and figures."""
    return (
        [m.value for m in at.markdown]
        + [m.value for m in at.metric]
        + [t.value.to_csv() for t in at.table]
        + [f.proto.spec for f in at.get("plotly_chart")]
    )


def problems(at) -> list[str]:
    return [e.value for e in at.exception] + [e.value for e in at.error]


@pytest.mark.parametrize(
    ("stem", "query"), VIEWS, ids=[stem + "?" + "&".join(f"{k}={v}" for k, v in q.items()) for stem, q in VIEWS]
)
def test_view_survives_rerun_and_a_second_visitor(stem: str, query: dict[str, str]):
    at = open_page(stem, query, timeout=180)
    assert not problems(at)
    first = key_numbers(at)
    assert first, "the view shows nothing to compare"
    at.run()
    assert not problems(at)
    assert key_numbers(at) == first
    second = open_page(stem, query, timeout=180)
    assert not problems(second)
    assert key_numbers(second) == first

"""CSV downloads carry their settings (kvviz.common.export) and every glossary term is defined."""

import io

import pandas as pd

from kvviz.common import export, glossary


def test_table_csv_heads_the_table_with_page_trace_and_settings():
    table = pd.DataFrame({"step": [1, 2], "text": ["# not a comment", "b,c"]})
    data = export.table_csv(table, "radix", {"script": "line 1\nline 2", "seed": 3}, trace="day.jsonl")
    lines = data.decode().splitlines()
    assert lines[:4] == ["# kvviz: Radix tree & HiCache", "# trace: day.jsonl", "# script: line 1 line 2", "# seed: 3"]
    back = pd.read_csv(io.BytesIO(data), skiprows=export.settings_lines(data))
    pd.testing.assert_frame_equal(back, table)


def test_file_name_is_lower_case_words():
    assert export.file_name("cluster", "Timeline, per instance") == "kvviz-cluster-timeline-per-instance.csv"


def test_every_term_has_a_definition():
    for term, text in glossary.TERMS.items():
        assert glossary.define(term).startswith(f"**{term}**: ") and len(text) > 40

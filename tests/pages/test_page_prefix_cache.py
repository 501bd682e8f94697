"""The Prefix-cache replay page in AppTest: every view on the bundled example and on an uploaded trace."""

from __future__ import annotations

import json

import pytest

from kvviz.traces.workload import WorkloadConfig, generate
from tests.conftest import LENGTHS_ONLY, assert_clean, open_page, open_with_session_trace

pytestmark = pytest.mark.shared_caches

EXAMPLE = {"prefix_source": "Example", "prefix_points": "6", "prefix_range": ["100", "10k"]}


def _paper(at):
    return at.table[-1].value


@pytest.mark.parametrize(
    ("view", "charts"), [("Curves", 2), ("Worked example", 1), ("Per request", 1), ("Over time", 2), ("Prefix tree", 1)]
)
def test_every_view_opens_clean_on_the_example(view, charts):
    at = open_page("prefix_cache", {**EXAMPLE, "prefix_view": view}, timeout=180)
    assert_clean(at)
    assert len(at.get("plotly_chart")) == charts
    assert "What to notice" in [h.value for h in at.subheader]
    if view in ("Curves", "Worked example"):
        paper = _paper(at)
        assert set(paper["status"]) <= {"agrees", "differs", "input"}
        assert "7 / 2" in paper["this simulation"].tolist()


def test_curves_view_table_and_controls_in_the_url():
    at = open_page(
        "prefix_cache", {**EXAMPLE, "prefix_policies": ["LRU", "MRU"], "prefix_model": "llama-2-7b"}, timeout=180
    )
    assert_clean(at)
    assert at.multiselect(key="prefix_policies").value == ["LRU", "MRU"]
    table = next(df.value for df in at.dataframe if "share of ceiling" in df.value.columns)
    assert set(table["policy"]) == {"LRU", "MRU"} and set(table["share of ceiling"]) == {"80%", "90%", "95%"}
    assert any("MiB of Llama 2 7B KV" in c.value for c in at.caption)  # the link named it by its id
    assert at.selectbox(key="prefix_model").value == "Llama 2 7B" and at.query_params["prefix_model"] == "Llama 2 7B"
    assert at.get("download_button")


def test_worked_example_steps_from_the_url():
    at = open_page("prefix_cache", {"prefix_view": "Worked example", "prefix_step": "2"})
    assert_clean(at)
    assert at.slider(key="prefix_step").value == 2
    assert len(at.dataframe[0].value) == 2
    assert any("7 prefix hits" in m.value for m in at.markdown)


def test_worked_example_steps_with_buttons_and_plays_from_the_start():
    at = open_page("prefix_cache", {"prefix_view": "Worked example"})
    assert_clean(at)
    step = lambda: at.slider(key="prefix_step").value  # noqa: E731
    assert step() == 0 and any("Empty caches" in m.value for m in at.markdown)
    at.button(key="prefix_step_next").click().run()
    assert step() == 1 and any("After request 1: A·B·C" in m.value for m in at.markdown)
    at.button(key="prefix_step_prev").click().run()
    at.button(key="prefix_step_prev").click().run()
    assert step() == 0  # no step before the first
    at.slider(key="prefix_step").set_value(5).run()
    at.button(key="prefix_step_next").click().run()
    assert step() == 5  # nor after the last
    at.toggle(key="prefix_step_play").set_value(True).run()
    assert step() == 0 and at.toggle(key="prefix_step_play").value  # Play at the end starts again
    assert_clean(at)


def test_play_ticks_move_the_step_before_it_is_drawn_and_stop_at_the_end():
    """A tick of Play that falls due in a rerun caused by ▶ used to set the slider after it was drawn,
    and the view crashed; the step now moves at the start of the next run."""
    at = open_page("prefix_cache", {"prefix_view": "Worked example"})
    at.toggle(key="prefix_step_play").set_value(True).run()
    at.session_state["prefix_step_last_tick"] = -1e9  # the interval has passed
    at.button(key="prefix_step_next").click().run()
    assert_clean(at)
    assert at.slider(key="prefix_step").value == 2  # ▶, then the tick that was due
    at.slider(key="prefix_step").set_value(4).run()
    for expected in (5, 5):
        at.session_state["prefix_step_last_tick"] = -1e9
        at.run()
        assert at.slider(key="prefix_step").value == expected
    assert not at.toggle(key="prefix_step_play").value  # stopped at the last step
    assert_clean(at)


def uploaded(stem: str, data: bytes, query: dict[str, str], block_size: int = 512):
    """The app with ``data`` as this session's uploaded trace, switched to ``pages/<stem>.py``."""
    spec = {"kind": "upload", "data": data, "block_size": block_size, "name": "mine.jsonl"}
    return open_with_session_trace(stem, spec, query, timeout=180)


def qwen_chats(chats: int = 40, turns: int = 4) -> bytes:
    """A Qwen-Bailian-style trace (16-token blocks, seconds, chat_id and turn): each turn re-sends the history."""
    lines = []
    for c in range(chats):
        for t in range(1, turns + 1):
            ids = [10_000 * c + k for k in range(6 * t)]
            lines.append(
                json.dumps(
                    {
                        "chat_id": c,
                        "parent_chat_id": -1,
                        "timestamp": 0.5 * (c + 40 * t),
                        "input_length": 16 * len(ids),
                        "output_length": 8,
                        "type": "text",
                        "turn": t,
                        "hash_ids": ids,
                    }
                )
            )
    return "\n".join(sorted(lines, key=lambda x: json.loads(x)["timestamp"])).encode()


def test_an_uploaded_trace_per_request_and_over_time():
    trace = generate(WorkloadConfig(requests=250, seed=5))
    at = uploaded("prefix_cache", trace.to_jsonl().encode(), {"prefix_view": "Per request"})
    assert_clean(at)
    assert any(f"{len(trace.blocks):,} block accesses" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 1
    at.segmented_control(key="prefix_view").set_value("Over time").run()
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 2


def test_a_chat_trace_with_turns_gets_the_by_turn_view():
    at = uploaded("prefix_cache", qwen_chats(), {"prefix_view": "Per request", "prefix_range": ["100", "1k"]}, 16)
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 2
    notes = [m.value for m in at.markdown if "Turn 1 has" in m.value]
    assert notes and "turn 4" in notes[0]


def test_a_trace_without_block_ids_is_an_error_message():
    at = open_with_session_trace("prefix_cache", LENGTHS_ONLY)
    assert_clean(at)
    assert at.error and "no block ids" in at.error[0].value


def test_no_policy_and_garbage_url_values_open_clean():
    at = open_page(
        "prefix_cache", {**EXAMPLE, "prefix_policies": ["NOPE"], "prefix_points": "many", "prefix_view": "Nowhere"}
    )
    assert_clean(at)
    at.multiselect(key="prefix_policies").set_value([]).run()
    assert_clean(at)
    assert any("Pick at least one" in i.value for i in at.info)


def test_the_curves_from_a_request_sample_say_so_and_their_ceiling_error():
    at = open_page("prefix_cache", {**EXAMPLE, "prefix_sample": "50%", "prefix_range": ["100", "20k"]}, timeout=180)
    assert_clean(at)
    note = next(c.value for c in at.caption if c.value.startswith("**Sampled**"))
    assert "kept whole, grouped by where they leave the" in note and "infinite-cache ceiling" in note
    assert "may be off by up to" in note
    assert len(at.get("plotly_chart")) == 2


def test_an_empty_view_or_sample_in_the_url_opens_the_default():
    """``prefix_view=`` leaves Streamlit's required control unset (it returns None): the page shows the first view."""
    at = open_page("prefix_cache", {"prefix_view": "", "prefix_sample": ""})
    assert_clean(at)
    assert _paper(at) is not None

"""AppTest: the radix page opens clean, steps, follows URL parameters, and reports bad input."""

from __future__ import annotations

import json
import re
from typing import NamedTuple

import pandas as pd
import pytest

from tests.conftest import assert_clean, open_page, shown
from tests.pages.test_presenter import opened_with
from ui.radix.stepped import presenter_columns

pytestmark = pytest.mark.shared_caches

CARD = re.compile(r"(.+): \*\*([\d,]+)\*\*")


class Card(NamedTuple):
    label: str
    value: str
    help: str


def texts(at) -> str:
    """The page's markdown as a viewer reads it (user words are shown escaped)."""
    return shown(" ".join(m.value for m in at.markdown))


def cards(at) -> list[Card]:
    """The metric cards beside the tree, one line each: "label: **value**" with its help."""
    return [Card(*m.groups(), e.proto.help) for e in at.markdown if (m := CARD.fullmatch(e.value))]


def card(at, label: str) -> Card:
    return next(c for c in cards(at) if c.label == label)


def test_opens_on_the_sglang_example_with_tree_and_totals():
    at = open_page("radix")
    assert "On this script deferral saves nothing" in texts(at)  # the claim follows its numbers
    assert_clean(at)
    assert "Step 0 of 9" in texts(at)
    assert len(at.get("plotly_chart")) == 2
    labels = [c.label for c in cards(at)]
    assert labels == ["On GPU now", "Cache hits this step", "Evicted this step", "Redundant so far"]
    assert cards(at)[0].value == "0" and "of 120 tokens" in cards(at)[0].help
    assert not at.error


def test_step_from_the_url_and_buttons():
    at = open_page("radix", {"radix_step": "6"})
    assert_clean(at)
    assert "Step 6 of 9" in texts(at) and "R6 shot" in texts(at)
    at.button(key="radix_step_next").click().run()
    assert "Step 7 of 9" in texts(at)
    at.button(key="radix_step_prev").click().run()
    at.button(key="radix_step_prev").click().run()
    assert "Step 5 of 9" in texts(at)


def test_choosing_a_preset_brings_its_settings():
    at = open_page("radix", {"radix_step": "2"})
    at.selectbox(key="radix_preset").select("Delay hits (Strata)").run()
    assert_clean(at)
    assert at.number_input(key="radix_device").value == 1024
    assert at.slider(key="radix_step").value == 0  # a new script starts at its beginning
    at.slider(key="radix_step").set_value(1).run()
    assert "deferred (delay hit)" in texts(at)
    assert "Deferral avoids recomputing" in texts(at)
    assert card(at, "Redundant so far").value == "0"


def test_deferral_off_in_the_url_recomputes_the_document():
    at = open_page(
        "radix",
        {
            "radix_preset": "Delay hits (Strata)",
            "radix_cache": "HiRadixCache",
            "radix_device": "1024",
            "radix_strata": "false",
            "radix_step": "1",
        },
    )
    assert_clean(at)
    assert "300 of them were in flight: **recomputed**" in texts(at)


def test_typed_script_and_its_errors():
    at = open_page("radix", {"radix_source": "Type"})
    assert_clean(at)
    at.text_area(key="radix_text").input("a b c => d\n& a b c => e\nevict x").run()
    assert_clean(at)
    assert at.error and "line 3" in at.error[0].value
    at.text_area(key="radix_text").input("insert 1 2 3\nunlock 1 2 3").run()
    assert_clean(at)
    assert at.error and "holds no lock" in at.error[0].value
    at.text_area(key="radix_text").input("").run()
    assert at.error and "no steps" in at.error[0].value


def test_a_typed_script_is_shown_as_text_not_markdown():
    at = open_page("radix", {"radix_source": "Type"})
    at.text_area(key="radix_text").input("insert ![x](http://host/p.png) b c").run()
    at.slider(key="radix_step").set_value(1).run()
    assert_clean(at)
    raw = " ".join(m.value for m in at.markdown)
    assert "![x](http" not in raw and "![x](http://host/p.png)" in shown(raw)


def test_page_larger_than_capacity_is_a_clear_error():
    at = open_page("radix", {"radix_page": "128"})
    assert_clean(at)
    assert at.error and "smaller than one page" in at.error[0].value


def test_invalid_url_values_are_ignored():
    at = open_page("radix", {"radix_step": "banana", "radix_policy": "random", "radix_device": "-5"})
    assert_clean(at)
    assert "Step 0 of 9" in texts(at)


def test_trace_source_without_a_session_trace_says_how_to_load_one():
    at = open_page("radix", {"radix_source": "Trace"})
    assert_clean(at)
    assert at.info and "Trace" in at.info[0].value


def test_text_dump_and_requests_views():
    at = open_page("radix", {"radix_view": "Text dump", "radix_step": "3"})
    assert_clean(at)
    assert at.code and "root  device=" in at.code[0].value
    at = open_page("radix", {"radix_view": "Requests"})
    assert_clean(at)
    assert any("device_hit" in d.value.columns for d in at.dataframe)


def test_a_link_to_a_preset_opens_with_its_settings_unless_the_link_overrides_them():
    at = open_page("radix", {"radix_preset": "HiCache tiers", "radix_write": "write back"})
    assert_clean(at)
    assert at.number_input(key="radix_device").value == 80
    assert at.selectbox(key="radix_write").value == "write back"
    assert cards(at)[1].label == "On CPU now"


def test_policies_are_offered_in_words_and_a_link_with_their_codes_opens_the_same_view():
    worded = open_page("radix", {"radix_preset": "HiCache tiers", "radix_write": "write back", "radix_policy": "LFU"})
    coded = open_page("radix", {"radix_preset": "HiCache tiers", "radix_write": "write_back", "radix_policy": "lfu"})
    assert_clean(coded)
    assert coded.selectbox(key="radix_write").options == ["write through", "selective write through", "write back"]
    assert coded.selectbox(key="radix_policy").options == ["LRU", "LFU", "FIFO", "MRU", "FILO", "priority", "SLRU"]
    assert (coded.selectbox(key="radix_write").value, coded.selectbox(key="radix_policy").value) == (
        "write back",
        "LFU",
    )
    assert coded.query_params["radix_write"] == "write back"
    assert texts(coded) == texts(worded)


def test_replays_the_session_trace_with_block_ids_as_tokens():
    from ui.kit.traces import SESSION_KEY

    at = open_page("radix", {"radix_source": "Trace", "radix_n": "20"})
    at.session_state[SESSION_KEY] = {"kind": "example"}
    at.run()
    assert_clean(at)
    assert not at.error and "blocks" in " ".join(c.value for c in at.caption)
    assert "R1" in texts(at) or at.slider(key="radix_step").max >= 1
    at.slider(key="radix_step").set_value(3).run()
    assert_clean(at)
    assert "Step 3 of" in texts(at)


def test_legacy_hit_counts_toggle():
    at = open_page("radix", {"radix_legacy": "true", "radix_view": "Text dump", "radix_step": "3"})
    assert_clean(at)
    assert "hits 0," in at.code[0].value and "hits 1," not in at.code[0].value


def test_coming_back_from_another_page_keeps_usable_settings():
    at = open_page("radix")
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/radix.py").run()
    assert_clean(at)
    assert at.number_input(key="radix_device").value == 120 and not at.error


def test_a_long_trace_is_viewed_a_window_of_trees_at_a_time():
    from ui.kit.traces import SESSION_KEY

    at = open_page("radix", {"radix_source": "Trace", "radix_n": "1000", "radix_view": "Text dump"})
    at.session_state[SESSION_KEY] = {"kind": "example"}
    at.run()
    assert_clean(at)
    last = int(at.slider(key="radix_step").max)
    assert last > 100  # beyond one window of 25 trees
    at.slider(key="radix_step").set_value(last - 1).run()
    assert_clean(at)
    assert f"Step {last - 1} of {last}" in texts(at) and at.code[0].value.startswith("root")


def test_every_step_says_what_the_cache_did_with_the_presets_caption():
    at = open_page("radix", {"radix_step": "3"})
    assert_clean(at)
    said = texts(at)
    assert "*(4) a new chat session shares only the system prompt: the edge splits*" in said  # the caption
    assert "**R3 chat2**: split 'You are a … : Hello !' at token 8" in said
    assert "**R3 chat2**: matched 8 of 20 tokens on the GPU" in said
    at.slider(key="radix_step").set_value(7).run()
    said = texts(at)
    assert "evicted leaf 'Assistant : Roses … I have .' (25 tokens, least recently used)" in said
    evicted = card(at, "Evicted this step")
    assert evicted.value == "58" and "So far: 104 from the GPU" in evicted.help  # 58 this step, cumulative beside


def test_an_eviction_that_frees_nothing_says_why():
    at = open_page("radix", {"radix_source": "Type", "radix_cache": "RadixCache", "radix_device": "32"})
    at.text_area(key="radix_text").input("insert 1 2 3\nlock 1 2 3\n# nothing can go\nevict 2").run()
    at.slider(key="radix_step").set_value(3).run()
    assert_clean(at)
    assert (
        "asked to free 2 tokens, freed 0: every leaf is locked (a running request or a pending copy holds it)"
        in texts(at)
    )
    assert "*nothing can go*" in texts(at)


def test_the_typed_script_is_in_the_url_and_the_request_table_downloads():
    at = open_page(
        "radix", {"radix_source": "Type", "radix_text": "a b c => d\n& a b c => e", "radix_view": "Requests"}
    )
    assert_clean(at)
    assert at.text_area(key="radix_text").value == "a b c => d\n& a b c => e"
    assert len(at.dataframe[0].value) == 2
    button = at.get("download_button")[0]
    assert "Download per-request table (CSV)" in button.proto.label


def test_controls_that_cannot_matter_are_disabled_with_a_reason():
    at = open_page("radix")  # the SGLang example runs on the RadixCache
    for key in ("radix_host", "radix_write"):
        widget = at.number_input(key=key) if key == "radix_host" else at.selectbox(key=key)
        assert widget.disabled and widget.help.startswith("Not used here: only the HiRadixCache")
    assert at.toggle(key="radix_ack").disabled and "lock count" in at.toggle(key="radix_ack").help
    assert not at.toggle(key="radix_strata").disabled


def test_the_toggles_default_is_the_presets_so_off_goes_into_the_url():
    at = open_page("radix", {"radix_strata": "false"})  # a copied link with deferral turned off
    assert_clean(at)
    strata, ack = at.toggle(key="radix_strata"), at.toggle(key="radix_ack")
    assert strata.value is False and ack.value is True
    assert strata.proto.default and ack.proto.default  # the SGLang preset's: off differs, so it is written
    at.selectbox(key="radix_preset").select("Delay hits (Strata)").run()
    assert at.toggle(key="radix_strata").value is True  # a new preset brings its own settings


def test_hicache_tiers_with_a_gpu_larger_than_the_cpu_replays():
    """A reviewer's link that crashed the page (a CPU copy cut off from the tree, then evicted)."""
    at = open_page("radix", {"radix_preset": "HiCache tiers", "radix_device": "120", "radix_host": "64"})
    assert_clean(at)
    assert not at.error and not at.exception


def test_acknowledgements_off_stall_the_tiers_preset_as_an_outcome_with_its_cause():
    at = open_page("radix", {"radix_preset": "HiCache tiers", "radix_ack": "false"})
    assert_clean(at)
    assert not at.error
    (box,) = at.info
    assert box.value.startswith("**The simulation stalls here.** 64 of the GPU's 80 tokens are locked")
    assert "2 copies to CPU memory that nobody acknowledged" in box.value
    assert "Acknowledge transfers every round" in box.value


def test_the_request_table_reads_its_counts_under_short_headers_and_a_projector_shows_those_that_count():
    at = opened_with({"radix_view": "Requests", "radix_preset": "HiCache tiers"}, "radix")
    table = at.dataframe[0]
    config = json.loads(table.proto.columns)
    assert (config["device_hit"]["label"], config["host_hit"]["label"]) == ("GPU hit", "CPU hit")
    assert config["device_hit"]["help"] == "Prompt tokens already in GPU memory when the request started."
    assert list(table.proto.column_order) == []  # on a laptop, every column
    at = opened_with({"presenter": "1", "radix_view": "Requests", "radix_preset": "HiCache tiers"}, "radix")
    assert_clean(at)
    table = at.dataframe[0]
    assert list(table.proto.column_order) == ["request", "prompt", "device_hit", "host_hit", "loaded", "computed"]
    assert [c.value for c in at.caption if "CSV" in c.value] == [
        "Not shown here, in the CSV: each request's status; in flight, deferred, zero for every request."
    ]
    assert len(table.value.columns) == 9  # the download keeps them all


def test_a_projector_shows_at_most_three_counts_besides_the_prompt_and_what_was_computed():
    counts = {c: [0, 1] for c in ("device_hit", "host_hit", "loaded", "in_flight", "deferrals")}
    requests = pd.DataFrame({"request": ["R1", "R2"], "prompt": [4, 4], **counts, "computed": [4, 3], "status": "x"})
    shown, zero, more = presenter_columns(requests)
    assert shown == ["request", "prompt", "device_hit", "host_hit", "loaded", "computed"]
    assert (zero, more) == ([], ["in_flight", "deferrals"])
    assert presenter_columns(requests.assign(host_hit=0))[:2] == (
        ["request", "prompt", "device_hit", "loaded", "in_flight", "computed"],
        ["host_hit"],
    )

"""AppTest: every radix preset, chosen in the sidebar, opens at its first step and steps forward clean.

The browser test (tests/e2e/test_radix_browser.py) chooses one preset through the real select box;
this file walks all of them through the same widgets without drawing.
"""

from __future__ import annotations

import pytest

from kvviz.radix.presets import PRESETS
from tests.conftest import assert_clean, open_page, shown

pytestmark = pytest.mark.shared_caches


@pytest.mark.parametrize("key", list(PRESETS))
def test_every_preset_opens_and_steps(key: str):
    at = open_page("radix")
    preset = PRESETS[key]
    if at.selectbox(key="radix_preset").value != preset.title:
        at.selectbox(key="radix_preset").select(preset.title).run()
    assert_clean(at)
    assert not at.error
    for step in (0, 1, 2):
        if step:
            at.button(key="radix_step_next").click().run()
        text = shown(" ".join(m.value for m in at.markdown))
        assert f"Step {step} of" in text, (key, step)
        assert_clean(at)
    assert len(at.get("plotly_chart")) == 2

"""One upload limit, one unit, everywhere it is stated; the decompression limits with it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from kvviz.traces import MIB, UPLOAD_LIMIT_MIB, UPLOADS
from kvviz.traces.source import MAX_RATIO, RATIO_ALLOWANCE

ROOT = Path(__file__).resolve().parents[2]


def test_upload_limit_is_the_same_in_config_readme_docs_and_code():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == UPLOAD_LIMIT_MIB >= 200
    assert UPLOADS.file_bytes == UPLOAD_LIMIT_MIB * MIB
    for doc in ("README.md", "docs/traces.md"):
        text = (ROOT / doc).read_text()
        assert f"{UPLOAD_LIMIT_MIB} MiB" in text and f"{UPLOAD_LIMIT_MIB} MB" not in text
    page = (ROOT / "ui" / "kit" / "traces.py").read_text()
    assert "max_upload_size=UPLOAD_LIMIT_MIB" in page
    assert "UPLOADS.describe()" in page or "UPLOAD_LIMIT_MIB} MiB" in page


def test_the_limits_table_states_the_code_s_numbers():
    text = (ROOT / "docs" / "traces.md").read_text()
    for stated in (
        f"{UPLOADS.requests:,}",
        f"{UPLOADS.block_ids:,}",
        f"{UPLOADS.text_bytes // 2**30} GiB",
        f"{MAX_RATIO['gzip']}×",
        f"{MAX_RATIO['zstd']}×",
        f"{RATIO_ALLOWANCE // MIB} MiB",
    ):
        assert stated in text, stated

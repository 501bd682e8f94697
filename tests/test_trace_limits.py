"""One upload limit, one unit, everywhere it is stated."""

from __future__ import annotations

import tomllib
from pathlib import Path

from kvviz.traces import MIB, UPLOAD_LIMIT_MIB, UPLOADS

ROOT = Path(__file__).resolve().parents[1]


def test_upload_limit_is_the_same_in_config_readme_docs_and_code():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == UPLOAD_LIMIT_MIB >= 200
    assert UPLOADS.file_bytes == UPLOAD_LIMIT_MIB * MIB
    for doc in ("README.md", "docs/traces.md"):
        text = (ROOT / doc).read_text()
        assert f"{UPLOAD_LIMIT_MIB} MiB" in text and f"{UPLOAD_LIMIT_MIB} MB" not in text
    page = (ROOT / "ui" / "traces.py").read_text()
    assert "UPLOAD_LIMIT_MIB} MiB" in page and "max_upload_size=UPLOAD_LIMIT_MIB" in page

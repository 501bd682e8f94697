"""``pip install .`` gives a working ``kvviz``: checked from pyproject.toml without building anything.

The console script must name a callable, every file the package reads at run time must be declared
package data (found through the package, not through the checkout), and the dependencies must be
the pins of requirements.txt and cover every third-party module kvviz/ imports.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import tomllib
from fnmatch import fnmatch
from importlib import metadata, resources
from pathlib import Path

from kvviz.cacheblend import model

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PROJECT["tool"]["setuptools"]


def _pins(lines: list[str]) -> dict[str, str]:
    """``{normalised name: version}`` of ``name==version`` requirement lines (comments dropped)."""
    pins = {}
    for line in lines:
        requirement = line.split("#")[0].strip()
        if requirement and not requirement.startswith("-"):
            name, version = requirement.split("==")
            pins[re.sub(r"[-_.]+", "-", name.strip()).lower()] = version.strip()
    return pins


def _third_party_imports() -> set[str]:
    """Top-level names of the modules kvviz/ imports (lazily too) that are neither stdlib nor kvviz."""
    names = set()
    for path in (ROOT / "kvviz").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"kvviz"}


def test_the_console_script_names_the_cli_main():
    assert PROJECT["project"]["scripts"] == {"kvviz": "kvviz.cli:main"}
    module, function = PROJECT["project"]["scripts"]["kvviz"].split(":")
    assert callable(getattr(importlib.import_module(module), function))
    assert resources.files("kvviz").joinpath("__main__.py").is_file()  # python -m kvviz


def test_only_the_core_is_packaged():
    assert SETUPTOOLS["packages"]["find"] == {"include": ["kvviz*"]}


def test_every_data_file_in_the_package_is_declared():
    declared = SETUPTOOLS["package-data"]
    data = [
        path.relative_to(ROOT)
        for path in (ROOT / "kvviz").rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    ]
    assert data, "kvviz ships its model weights"
    for path in data:
        package = ".".join(path.parent.parts)
        owners = [name for name in declared if package == name or package.startswith(name + ".")]
        assert any(
            fnmatch(str(path.relative_to(Path(*name.split(".")))), pattern)
            for name in owners
            for pattern in declared[name]
        ), f"{path} is not declared package data"


def test_the_shipped_weights_are_found_through_the_package():
    found = resources.files("kvviz.cacheblend").joinpath("data", "record_world.npz")
    assert found.is_file() and Path(str(found)) == model.WEIGHTS


def test_dependencies_are_requirements_pins():
    declared = _pins(PROJECT["project"]["dependencies"])
    pinned = _pins((ROOT / "requirements.txt").read_text().splitlines())
    assert declared == {name: pinned[name] for name in declared}


def test_extras_are_requirements_dev_pins():
    """An optional extra (``pip install .[ray]``) carries the pin the tests run with."""
    dev = _pins((ROOT / "requirements-dev.txt").read_text().splitlines())
    for extra in PROJECT["project"]["optional-dependencies"].values():
        assert _pins(extra) == {name: dev[name] for name in _pins(extra)}


def test_every_third_party_import_is_a_dependency():
    extras = [pin for extra in PROJECT["project"]["optional-dependencies"].values() for pin in extra]
    declared = set(_pins(PROJECT["project"]["dependencies"])) | set(_pins(extras))
    providers = metadata.packages_distributions()
    for name in sorted(_third_party_imports()):
        dists = {re.sub(r"[-_.]+", "-", dist).lower() for dist in providers.get(name, [name])}
        assert dists & declared, f"kvviz imports {name}, which no dependency in pyproject.toml provides"
    assert "streamlit" not in declared  # the dashboard's, never the core's

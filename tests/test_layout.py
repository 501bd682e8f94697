"""The core's shape: each mechanism in its own package, layered so nothing imports back up or in a circle.

Layers, from the bottom: ``kvviz.common`` (what every page shares), ``kvviz.traces``, the mechanism
packages (which may use one another, as a prefix cache uses SGLang's radix cache, but never in a circle),
then the command line (``kvviz.commands``, ``kvviz.cli``, and ``kvviz.precompile``, which runs commands).
The core never imports the UI or Streamlit.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "kvviz"
TOP = ("kvviz.cli", "kvviz.commands", "kvviz.__main__", "kvviz.precompile")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """Every module ``path`` imports, at module level or inside a function, resolved to absolute names
    (``from package import module`` names the module, not the package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return found


def _edges() -> set[tuple[str, str]]:
    """(importer, imported) for every import between two core modules."""
    modules = {_module(p): p for p in CORE.rglob("*.py")}
    return {
        (name, target)
        for name, path in modules.items()
        for target in _imports(path, name, set(modules))
        if target in modules and target != name
    }


def _circles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The groups of nodes that reach each other (strongly connected components larger than one)."""
    nodes = sorted({n for edge in edges for n in edge})
    index = {n: i for i, n in enumerate(nodes)}
    rows, cols = zip(*((index[a], index[b]) for a, b in edges), strict=True) if edges else ((), ())
    matrix = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(nodes), len(nodes)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    groups = [[n for n, label in zip(nodes, labels, strict=True) if label == k] for k in set(labels)]
    return sorted(g for g in groups if len(g) > 1)


def _external(name: str) -> set[str]:
    path = next(p for p in CORE.rglob("*.py") if _module(p) == name)
    return {t.split(".")[0] for t in _imports(path, name, set(MODULES))}


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _layer(package: str) -> int:
    if package == "kvviz.common":
        return 0
    if package == "kvviz.traces":
        return 1
    if package.startswith(TOP):
        return 3
    return 2


EDGES = _edges()
MODULES = sorted(_module(p) for p in CORE.rglob("*.py"))


def test_no_module_imports_in_a_circle() -> None:
    assert not _circles(EDGES)


def test_packages_do_not_import_in_a_circle() -> None:
    assert not _circles({(_package(a), _package(b)) for a, b in EDGES if _package(a) != _package(b)})


def test_nothing_imports_back_up() -> None:
    upward = [(a, b) for a, b in EDGES if _layer(_package(b)) > _layer(_package(a))]
    assert not upward, upward


def test_no_module_imports_a_package_that_holds_it() -> None:
    """A module inside ``kvviz.x`` reaches its siblings directly, never through ``kvviz.x``'s ``__init__``."""
    back = [(a, b) for a, b in EDGES if a.startswith(b + ".")]
    assert not back, back


@pytest.mark.parametrize("name", MODULES)
def test_the_core_never_imports_the_ui(name: str) -> None:
    assert not {"streamlit", "ui", "pages"} & _external(name)

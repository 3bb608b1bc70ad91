"""The floors import one way only: ground -> fusion -> cost_models -> partitioner -> benchmarks.

The ground floor is the shared base every stage stands on: the top-level modules of the
installed package (``tacopt.errors``, ``tacopt.io``, ``tacopt.cli_options``, ``tacopt.registry``;
folder ``api/``). It imports none of the four packages. ``tacopt/__init__.py`` is the public API
facade: it names the four packages' functions by string and loads them on first access, so it
sits on no floor.

Imports are read from the code and from the docstrings' examples (a doctest that imports
upward ties the packages together as much as the code does).
"""

from __future__ import annotations

import ast
import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["ground", "fusion", "cost_models", "partitioner", "benchmarks"]
FOLDER = {"ground": "api", "fusion": "fusion", "cost_models": "cost_models",
          "partitioner": "partitioner", "benchmarks": "benchmarks"}
GROUND = {p.stem for p in (ROOT / "api").glob("*.py") if p.stem != "__init__"}


def _imports(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_package_of(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(_package_of(node.module))
    return found


def _doctest_trees(tree: ast.AST, filename: str) -> list[ast.AST]:
    """The parsed examples of every docstring in ``tree`` (unparsable ones skipped)."""
    parser = doctest.DocTestParser()
    out: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            for example in parser.get_examples(doc or "", filename):
                try:
                    out.append(ast.parse(example.source))
                except SyntaxError:
                    continue
    return out


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = _imports(tree)
    for example in _doctest_trees(tree, str(path)):
        found |= _imports(example)
    return found & set(ORDER)


def _package_of(module: str) -> str:
    """``tacopt.fusion.ir`` -> ``fusion``, ``tacopt.errors`` -> ``ground``; others as they are."""
    parts = module.split(".")
    if parts[0] != "tacopt" or len(parts) == 1:
        return parts[0]
    return "ground" if parts[1] in GROUND else parts[1]


@pytest.mark.parametrize("package", ORDER)
def test_imports_flow_one_way(package: str) -> None:
    allowed = set(ORDER[: ORDER.index(package) + 1])
    bad = {
        f"{p.relative_to(ROOT)} imports {sorted(_imported_packages(p) - allowed)}"
        for p in sorted((ROOT / FOLDER[package]).rglob("*.py"))
        if p != ROOT / "api" / "__init__.py" and _imported_packages(p) - allowed
    }
    assert not bad, f"{package} may only import {sorted(allowed)}: {sorted(bad)}"


def test_direction_checker_catches_a_violation(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("from tacopt.benchmarks.zoos import x\nimport tacopt.partitioner.cli\n")
    assert _imported_packages(f) == {"benchmarks", "partitioner"}


def test_the_ground_floor_holds_the_shared_base() -> None:
    assert {"errors", "io", "cli_options", "registry"} <= GROUND
    assert _package_of("tacopt.errors") == "ground"
    assert not {"errors.py", "io.py", "options.py", "registry.py"} & {
        p.name for p in (ROOT / "fusion" / "ir").glob("*.py")
    }, "fusion/ir/ holds the graph IR only"


def test_direction_checker_reads_doctests(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text('"""A module.\n\n>>> from tacopt.benchmarks.zoos import x\n"""\n\n\n'
                 'def f():\n    """\n    >>> import tacopt.partitioner.cli\n    """\n')  # fmt: skip
    assert _imported_packages(f) == {"benchmarks", "partitioner"}

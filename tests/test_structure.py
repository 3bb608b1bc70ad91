"""The code is cut along its ideas: no import cycles between modules, no module over the budget.

Imports are read from the source (every ``import`` / ``from ... import``, those inside
functions included: a deferred import still ties two modules together; those under
``if TYPE_CHECKING:`` excluded). A package's ``__init__`` importing its own sub-modules to
register them is not a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"fusion": "fusion", "cost_models": "cost_models", "partitioner": "partitioner",
           "benchmarks": "benchmarks", "api": ""}  # fmt: skip
#: Lines per module (STYLE: a module holds one idea). Known exceptions are listed with a reason.
BUDGET = 500
OVER_BUDGET: dict[str, str] = {
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for folder, sub in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in ("tacopt", sub, *rel.parts) if p]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def import_graph() -> nx.DiGraph:
    """Module -> modules it imports (``tacopt`` modules only)."""
    modules = _modules()
    G = nx.DiGraph()
    G.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        typing_only = {
            id(inner)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for inner in ast.walk(block)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:  # annotations only: no import at run time
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                    base = f"{base}.{node.module}" if node.module else base
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]  # fmt: skip
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                own_child = target.startswith(name + ".") and path.name == "__init__.py"
                if target and target != name and not own_child:
                    G.add_edge(name, target)
    return G


def test_no_import_cycles() -> None:
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, f"{len(cycles)} import cycles, e.g. {' -> '.join(cycles[0] + cycles[0][:1])}"


def test_the_checker_sees_a_deferred_import(tmp_path: Path) -> None:
    G = import_graph()
    assert G.has_edge("tacopt.partitioner.pickers.exact", "tacopt.partitioner.pickers.decompose")
    assert G.has_edge("tacopt.partitioner.pipeline", "tacopt.fusion.fuse")  # inside a function


@pytest.mark.parametrize("name", sorted(_modules()))
def test_module_size_budget(name: str, request: pytest.FixtureRequest) -> None:
    lines = len(_modules()[name].read_text().splitlines())
    if name in OVER_BUDGET:  # a known gap: strict, so a split module must leave the list
        request.applymarker(pytest.mark.xfail(reason=OVER_BUDGET[name], strict=True))
    assert lines <= BUDGET, f"{name} has {lines} lines (budget {BUDGET}): split it along its ideas"

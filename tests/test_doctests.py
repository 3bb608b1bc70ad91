"""Runs the examples in every docstring of the installed ``tacopt`` package.

The examples are imported under their installed names (``tacopt.fusion.ir``, ...), as a user
imports them; pytest's ``--doctest-modules`` would import the source folders as top-level
packages (``fusion.ir``) and load every module twice.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

# benchmark and study scripts parse argv or time things at import; they carry no examples
_SKIP = ("tacopt.benchmarks.__main__",)


SUBPACKAGES = ("tacopt.fusion", "tacopt.cost_models", "tacopt.partitioner", "tacopt.benchmarks")


def _modules() -> list[str]:
    names = ["tacopt", *SUBPACKAGES]
    for pkg_name in SUBPACKAGES:
        pkg = importlib.import_module(pkg_name)
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg_name + ".")]
    return sorted(n for n in set(names) if n not in _SKIP)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str, private_registries: None) -> None:
    """Examples register things (a zoo, a fusion): each module's examples get private copies."""
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"

"""``python -m tacopt.benchmarks NAME [ARGS]``: run one of the benchmark scripts; no NAME lists
them.

The scripts are the modules in the folders of :mod:`tacopt.benchmarks.scripts` (``bench_*`` time
one stage, ``check_*`` cross-check one claim, plus the zoo tools), named by their module alone
(the folder groups them for the reader), and the study's own runnable modules (:data:`STUDY`):
each is run as if started with ``python -m``, so ``--help`` works for every one. ``bench`` is the
main study, the same as ``tacopt bench``.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from tacopt.benchmarks import scripts
from tacopt.errors import TacoptError, print_error, run_as_program
from tacopt.partitioner.cli import main as tacopt_main

#: Runnable modules of the study that are not under ``scripts/``.
STUDY = {
    "compare": "tacopt.benchmarks.compare",
    "memory_study": "tacopt.benchmarks.memory_study",
    "fuzz": "tacopt.benchmarks.fuzz.campaign",
    "figures": "tacopt.benchmarks.figures",
}


def commands() -> dict[str, str]:
    """NAME -> module, every script in the folders under ``scripts/`` and the study's runnable
    modules. A NAME is the module's own name, so two scripts may not share one.

    >>> sorted(commands())[:3]
    ['bench_adapt', 'bench_fuse', 'bench_iopddl']
    >>> commands()["fuzz"], commands()["bench_pickers"]
    ('tacopt.benchmarks.fuzz.campaign', 'tacopt.benchmarks.scripts.picking.bench_pickers')
    """
    found: dict[str, str] = dict(STUDY)
    for group in pkgutil.iter_modules(scripts.__path__):
        folder = [str(Path(scripts.__path__[0]) / group.name)]
        for m in pkgutil.iter_modules(folder):
            if m.name in found:
                raise RuntimeError(f"two benchmark scripts named {m.name!r}: rename one")
            found[m.name] = f"{scripts.__name__}.{group.name}.{m.name}"
    return dict(sorted(found.items()))


def _summary(module: str) -> str:
    """The first line of a module's docstring, without importing it (some scripts are heavy)."""
    found = importlib.util.find_spec(module)
    if found is None or found.origin is None:
        return ""
    with open(found.origin, encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    table = commands()
    if not args or args[0] in ("-h", "--help", "list"):
        print("usage: python -m tacopt.benchmarks NAME [ARGS]   (NAME --help for its options)\n")
        print(f"  {'bench':<{max(map(len, table))}}  the main study (tacopt bench)")
        width = max(map(len, table))
        for name, module in table.items():
            print(f"  {name:<{width}}  {_summary(module)}")
        return 0
    name, rest = args[0], args[1:]
    if name == "bench":  # the main study: the same as ``tacopt bench``
        return tacopt_main(["bench", *rest])
    if name not in table:
        return print_error("python -m tacopt.benchmarks",
                           f"no script {name!r} (run without NAME to list them)")
    sys.argv = [f"python -m tacopt.benchmarks {name}", *rest]
    try:
        runpy.run_module(table[name], run_name="__main__", alter_sys=False)
    except TacoptError as e:  # bad input a script did not report itself: one line, exit 2
        return print_error(sys.argv[0], e)
    return 0


if __name__ == "__main__":
    run_as_program(main)

"""The ``tacopt`` command: a thin dispatcher over sub-commands registered as entry points.

Each package contributes its commands through the ``tacopt.commands`` entry-point group in
``pyproject.toml`` (``inspect``, ``fuse``, ``measure``, ``pick``, ``partition``, ``bench``, ...).
An entry point names a ``register(subparsers)`` function that adds one argparse sub-parser and
sets ``run=<callable(args) -> int>`` as its default. Commands import their heavy dependencies
inside ``run`` so that ``tacopt --help`` stays fast.

Errors the user caused are :class:`tacopt.errors.TacoptError`: printed as one line on
stderr, exit code 2, no traceback.

Ctrl-C prints one line and exits 130; commands stage their outputs
(:func:`tacopt.io.all_or_nothing`), so an interrupted command leaves no output file.

The helpers below are shared by the commands: :func:`load_module` (``--load``) and
:class:`TacoptParser`, whose ``--help`` ends with the registered devices, pickers and cost
models. Option values (counts, time limits, lists of names such as ``--compare``, capacities) are
checked as they are parsed by the ``type=`` functions of :mod:`tacopt.cli_options`.

The command runs BLAS single-threaded unless the environment says otherwise: tacopt's numeric work
is many small matrix products, which extra BLAS threads only slow down and make less repeatable.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.metadata import (
    EntryPoint,
    PackageNotFoundError,
    distribution,
    entry_points,
    version,
)
from pathlib import Path
from typing import Any, NoReturn

from tacopt.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, TacoptError, print_error

#: What ``--help`` can list, in this order (see :class:`TacoptParser`).
REGISTRIES = ("devices", "pickers", "cost models")


class OptionError(TacoptError):
    """A command-line option with a bad value (an empty list, a repeated name, a bad number)."""


class TacoptParser(argparse.ArgumentParser):
    """An argument parser whose ``--help`` ends with the registered names it is asked to list.

    ``lists`` names some of :data:`REGISTRIES`; they are computed when the help is printed, so
    that building the parser (on every command) does not import the registries. A command line
    argparse cannot parse gives one line on stderr and exit 2, like every other bad input.
    """

    def __init__(self, *args: Any, lists: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lists = tuple(lists)

    def format_help(self) -> str:
        text = super().format_help()
        return text + "\n" + registered_names(self.lists) + "\n" if self.lists else text

    def error(self, message: str) -> NoReturn:
        """A bad command line: one line on stderr (not the usage block), exit 2."""
        self.exit(print_error(self.prog, f"{message} (see '{self.prog} --help')"))


def registered_names(lists: Sequence[str] = REGISTRIES) -> str:
    """One line per registry in ``lists``: the names registered now, and how to add more."""
    lines = []
    if "devices" in lists:
        # Deferred for start-up (here and below): the registries (numpy, networkx, the devices'
        # tables) load only when a --help lists them, not for every command that builds a parser.
        from tacopt.partitioner.targets import target_names

        lines.append(f"devices: {', '.join(target_names())} (more with --load FILE.py)")
    if "pickers" in lists:
        # Deferred: see above.
        from tacopt.partitioner.pickers import picker_names

        lines.append(f"pickers: {', '.join(picker_names())} (or pkg.mod:Name)")
    if "cost models" in lists:
        # Deferred: see above.
        from tacopt.cost_models.base import registered_cost_models

        names = ", ".join(registered_cost_models())
        lines.append(f"cost models: {names} (or path/to/model.json, pkg.mod:Factory, a+b)")
    return "\n".join(lines)


def add_load_option(parser: argparse.ArgumentParser, *, registers: str) -> None:
    """Add ``--load MODULE`` (repeatable); ``registers`` says what the module may register."""
    parser.add_argument(
        "--load",
        action="append",
        default=[],
        metavar="MODULE",
        help=f"import a module or .py file first, which may register {registers} (repeatable)",
    )


def load_module(spec: str) -> None:
    """Import ``spec``: a dotted module name or a path to a ``.py`` file (``--load``).

    Raises
    ------
    OptionError
        A missing file, or any failure of the module itself, on one line.
    """
    path = Path(spec)
    try:
        if spec.endswith(".py"):
            if not path.is_file():
                raise OptionError(f"--load {spec}: no such file")
            mod_spec = importlib.util.spec_from_file_location(f"tacopt_user_{path.stem}", path)
            if mod_spec is None or mod_spec.loader is None:
                raise OptionError(f"--load {spec}: cannot load this file as a module")
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[mod_spec.name] = module
            mod_spec.loader.exec_module(module)
        else:
            importlib.import_module(spec)
    except TacoptError:
        raise
    except Exception as exc:  # a user module's own failure, reported on one line
        raise OptionError(f"--load {spec}: {type(exc).__name__}: {exc}") from None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``tacopt`` parser with every sub-command, or only ``command`` when it is registered.

    Loading one entry point instead of all keeps start-up short: each command module imports
    what its ``register`` needs, and some of those pull in heavy packages.
    """
    parser = TacoptParser(
        prog="tacopt",
        description="Target-aware partitioning of TFLite models across devices.",
        epilog="Run 'tacopt COMMAND --help' for the options of one command.",
        lists=REGISTRIES,
    )
    parser.add_argument("--version", action="version", version=version_line())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for ep in _own_command(command) or _all_commands(command):
        ep.load()(sub)
    return parser


COMMANDS = "tacopt.commands"


def _own_command(command: str | None) -> list[EntryPoint]:
    """``command``'s entry point when tacopt's own distribution declares it: reading one
    distribution's metadata instead of every installed one's saves ~30 ms of start-up."""
    if command is None:
        return []
    try:
        eps = distribution("tacopt").entry_points
    except PackageNotFoundError:  # a source tree that was never installed
        return []
    return [ep for ep in eps if ep.group == COMMANDS and ep.name == command]


def _all_commands(command: str | None) -> list[EntryPoint]:
    """Every installed distribution's commands, or only ``command`` when one declares it."""
    eps = sorted(entry_points(group=COMMANDS), key=lambda e: e.name)
    return [ep for ep in eps if ep.name == command] or eps


def version_line() -> str:
    """``tacopt --version``: the installed distribution's version and the Python running it."""
    try:
        mine = version("tacopt")
    except PackageNotFoundError:  # run from a source tree that was never installed
        mine = "unknown (not installed)"
    return f"tacopt {mine} (Python {sys.version.split()[0]})"


def _command_of(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv``: its first argument when that is not an option."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def align_columns(rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    """Rows of cells as a plain-text table: the first ``left`` columns left-aligned, the rest
    right-aligned, two spaces apart.

    >>> print(align_columns([["picker", "objective"], ["exact", "445"]]))
    picker  objective
    exact         445
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) if i < left else cell.rjust(w)
                  for i, (cell, w) in enumerate(zip(row, widths)))
        for row in rows
    )  # fmt: skip


#: The cyclic garbage collector's first threshold while a command runs (CPython's is 700).
GC_THRESHOLD = 10_000


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tacopt`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    While the command runs, the garbage collector runs every :data:`GC_THRESHOLD` allocations:
    starting a command allocates some 10^5 long-lived objects (the modules, classes and
    functions of numpy, networkx and tacopt), and collecting every 700 spent 0.1-0.2 s of a
    one-second ``tacopt partition`` scanning them again and again; the plans and graphs hold
    few reference cycles, so memory barely moves. The old thresholds come back on return.
    """
    old = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *old[1:])
    try:
        return _main(argv)
    finally:
        gc.set_threshold(*old)


def _main(argv: Sequence[str] | None) -> int:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # read by numpy's BLAS when it loads, inside commands
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a command line argparse cannot parse
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        code = int(args.run(args) or 0)
        sys.stdout.flush()  # here, not at exit: a full device or a closed pipe is one line
        return code
    except TacoptError as exc:
        return print_error(f"tacopt {args.command}", exc)
    except KeyboardInterrupt:
        print(f"tacopt {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # standard output (a full device, a closed pipe), or a named file
        reason = exc.strerror or type(exc).__name__
        if exc.filename is not None:
            return print_error(f"tacopt {args.command}", f"'{exc.filename}': {reason}")
        _drop_stdout()
        return print_error(f"tacopt {args.command}", f"cannot write standard output: {reason}")


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so that Python's flush at exit cannot fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's StringIO)
        pass

"""The ``tacopt`` command: a thin dispatcher over sub-commands registered as entry points.

Each package contributes its commands through the ``tacopt.commands`` entry-point group in
``pyproject.toml`` (``inspect``, ``fuse``, ``measure``, ``pick``, ``partition``, ``bench``, ...).
An entry point names a ``register(subparsers)`` function that adds one argparse sub-parser and
sets ``run=<callable(args) -> int>`` as its default. Commands import their heavy dependencies
inside ``run`` so that ``tacopt --help`` stays fast.

Errors the user caused are :class:`tacopt.fusion.errors.TacoptError`: printed as one line on stderr,
exit code 2, no traceback.

The command runs BLAS single-threaded unless the environment says otherwise: tacopt's numeric work
is many small matrix products, which extra BLAS threads only slow down and make less repeatable.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from tacopt.fusion.errors import TacoptError

EXIT_BAD_INPUT = 2


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``tacopt`` parser with every sub-command, or only ``command`` when it is registered.

    Loading one entry point instead of all keeps start-up short: each command module imports
    what its ``register`` needs, and some of those pull in heavy packages.
    """
    parser = argparse.ArgumentParser(
        prog="tacopt",
        description="Target-aware partitioning of TFLite models across devices.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    eps = sorted(entry_points(group="tacopt.commands"), key=lambda e: e.name)
    chosen = [ep for ep in eps if ep.name == command]
    for ep in chosen or eps:
        ep.load()(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv``: its first argument when that is not an option."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tacopt`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # read by numpy's BLAS when it loads, inside commands
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except TacoptError as exc:
        print(f"tacopt {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"tacopt {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

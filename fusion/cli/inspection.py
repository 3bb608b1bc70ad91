"""``tacopt inspect`` and ``tacopt rehydrate``: look inside a .tflite model, make one runnable.

``tacopt inspect MODEL [--json]`` prints subgraph / op / tensor counts and the op histogram (each
summed over all subgraphs, custom ops as ``CUSTOM:<code>``), the main graph's inputs and outputs
with shapes and dtypes, and the constant bytes per dtype; for a model that breaks the IR's
invariants it prints what it could read, then the problem as one error line, and exits 2.
``tacopt rehydrate IN OUT --seed S [--max-weight-bytes N]`` fills the dropped weights of a
structure-only model with seeded random values (at most N bytes in total, default 2 GiB).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, output_file
from tacopt.fusion.ir.vocabulary import MAX_WEIGHT_BYTES


def register_inspect(subparsers: Any) -> None:
    """Add ``tacopt inspect``."""
    p = add_command(subparsers, "inspect", run_inspect)
    p.add_argument("model", type=Path, help="path of the .tflite model")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def register_rehydrate(subparsers: Any) -> None:
    """Add ``tacopt rehydrate``."""
    p = add_command(subparsers, "rehydrate", run_rehydrate)
    p.add_argument("source", type=Path, metavar="IN", help="structure-only .tflite model")
    p.add_argument(
        "target", type=output_file, metavar="OUT", help="where to write the runnable model"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--max-weight-bytes",
        type=int,
        default=MAX_WEIGHT_BYTES,
        metavar="N",
        help="refuse a model whose dropped weights total more than N bytes "
        f"(default {MAX_WEIGHT_BYTES:,} = 2 GiB)",
    )


def run_inspect(args: argparse.Namespace) -> int:
    """Counts, op histogram, inputs/outputs and weight bytes of a .tflite model.

    Summarise a .tflite model (all subgraphs).
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.fusion.cli.inspection_run import inspect_command

    return inspect_command(args)


def run_rehydrate(args: argparse.Namespace) -> int:
    """Fill the dropped weights of a structure-only model with random values.

    Write a runnable copy of a structure-only .tflite model: every dropped constant gets seeded
    random values of its dtype.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.fusion.cli.inspection_run import rehydrate_command

    return rehydrate_command(args)

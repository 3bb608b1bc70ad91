"""``tacopt evaluate`` and ``tacopt inspect-model``: any learned model file, on any records, and
the device it was fitted on. This module holds the parsers (imported by every ``tacopt --help``);
what the commands run is in :mod:`tacopt.cost_models.cli.model_run`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command


def register_evaluate(subparsers: Any) -> None:
    p = add_command(subparsers, "evaluate", run_evaluate)
    p.add_argument("model", help="a learned model file (.json / .json.gz), or 'learned'")
    p.add_argument("records", type=Path, help="records from `tacopt measure` (JSON lines)")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")


def run_evaluate(args: argparse.Namespace) -> int:
    """How well a learned model predicts measured records (any model, any records).

    Evaluate a learned model file (or 'learned', the shipped one) on records from `tacopt
    measure`: share of ops within ±10 %, MAPE, Spearman, median whole-model error, skip share,
    and the device fingerprints of the model and of the records. Records are first put in the
    model's units by the speed measured beside them. The figures are those of `tacopt fit
    --eval` (one implementation: cost_models/learned/fitting/accuracy.py).
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.cost_models.cli.model_run import evaluate_command

    return evaluate_command(args)


def register_inspect_model(subparsers: Any) -> None:
    p = add_command(subparsers, "inspect-model", run_inspect_model)
    p.add_argument("model", help="a learned model file (.json / .json.gz), or 'learned'")
    p.add_argument("--json", action="store_true", help="print it as JSON")


def run_inspect_model(args: argparse.Namespace) -> int:
    """What a learned model file is: its device fingerprint, training data, calibration.

    Print a learned model file's device fingerprint (CPU, ISA extensions, cores, LiteRT version,
    op resolver / delegate, threads), what it was trained on, its calibration, how it adds its
    ops up to a whole model (the in-model scale and spill, the training device's L2 and L3
    sizes, the cost per op and per loop trip), what it was
    adapted from (``tacopt learn --from``), and whether this machine is the device it was fitted
    on.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.cost_models.cli.model_run import inspect_model_command

    return inspect_model_command(args)

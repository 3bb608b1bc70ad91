"""``tacopt companion``: add a kernel-set companion to a learned model file (issue 47 item 5).
This module holds the parser (imported by every ``tacopt --help``); what the command runs is in
:mod:`tacopt.cost_models.cli.companion_run`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, output_file


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "companion", run)
    p.add_argument("model", type=Path, help="the learned model file to add the companion to")
    p.add_argument(
        "base_records", type=Path,
        help="records measured on the model's own kernel set (this machine)",
    )  # fmt: skip
    p.add_argument(
        "other_records", type=Path,
        help="records of the same configurations on the other kernel set (this machine, "
        "another --resolver or --threads)",
    )  # fmt: skip
    p.add_argument(
        "-o", "--out", type=output_file, required=True,
        help="the model file with the companion (.json, or .json.gz: gzipped)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Add to a learned model the ratios of another kernel set (builtin kernels, threads).

    Fit a kernel-set companion: how much slower or faster each op runs on another kernel set
    (LiteRT's builtin kernels, more threads) than on the one the model was fitted on, from two
    records files of this machine that timed the same configurations on both (two `tacopt
    learn` runs with the same plan, or `tacopt measure` of the same models), and write the
    model with it (its `companions` section; the rest of the model unchanged). `tacopt learn
    --from MODEL --resolver builtin` (or `--threads 2`) then starts from the model times the
    companion, and its probes correct that.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.cost_models.cli.companion_run import companion_command

    return companion_command(args)

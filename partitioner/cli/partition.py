"""``tacopt partition MODEL --devices GPU,CPU``: partition a model, write its plan and picture.

This module is the command's parser (imported by every ``tacopt --help``); what it runs is in
:mod:`tacopt.partitioner.cli.partition_run`. Options are parsed into
:class:`~tacopt.partitioner.cli.partition_run.PartitionOptions` and checked before any work:
output paths, ``--time-limit``, user modules (``--load``, a module or ``path/to/file.py``,
imported first so that the devices, pickers or cost models it registers can be named), devices,
picker and cost model. Then :func:`tacopt.partitioner.pipeline.partition` runs, and every
output is written all or nothing (:func:`tacopt.io.all_or_nothing`): a failure or Ctrl-C leaves
none of them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, capacities, names, output_file, seconds
from tacopt.errors import TacoptError, one_line
from tacopt.partitioner.cli import add_load_option

__all__ = ["add_memory_option", "add_page_options", "add_pin_option", "register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``partition`` sub-command."""
    p = add_command(subparsers, "partition", run, lists=("devices", "pickers", "cost models"))
    p.add_argument("model", type=Path, help="the .tflite model")
    p.add_argument(
        "--devices",
        required=True,
        help="devices in order of preference, e.g. GPU,CPU (CPU is appended when absent)",
    )
    p.add_argument("--picker", default="exact", help="picker name or pkg.mod:Name (default: exact)")
    p.add_argument(
        "--cost-model",
        default="tac",
        help="cost model spec (default: tac); a device the model does not know is priced by "
        "its unit's default, said in the output (learned, which knows the CPU it was measured "
        "on, prices the GPU, NNAPI and NPU with roofline)",
    )
    p.add_argument(
        "--granularity",
        choices=("subgraph", "op"),
        default="subgraph",
        help="the units the picker places: TAC's raised subgraphs, or one unit per op "
        "(default: subgraph)",
    )
    p.add_argument(
        "--time-limit", type=seconds, default=None, metavar="S", help="picker time limit in seconds"
    )
    p.add_argument(
        "--no-fuse",
        dest="fuse",
        action="store_false",
        help="partition the model as it is (default: fuse it first; a fused op a device lacks "
        "is lowered back to its primitive ops there)",
    )
    add_memory_option(p)
    add_pin_option(p, "recorded in the plan JSON (pins, pinned)")
    p.add_argument(
        "--explain",
        metavar="OP",
        help="say why OP (an op of the fused graph) runs where it does: each device's refusal "
        "and reason, its cost there, and the plan's cost if OP were pinned there (a re-solve)",
    )
    add_load_option(p, registers="devices, pickers or cost models")
    p.add_argument("--problem", type=output_file, help="write the pick problem JSON here")
    p.add_argument("--plan", type=output_file, help="write the plan JSON here")
    p.add_argument("--export", type=output_file, help="write the partitioned .tflite here")
    draw = p.add_mutually_exclusive_group()
    draw.add_argument("--svg", type=output_file, help="draw the partitioned graph (needs graphviz)")
    draw.add_argument("--dot", type=output_file, help="write the partitioned graph as DOT text")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    add_page_options(p)


def add_page_options(p: argparse.ArgumentParser) -> None:
    """``--html PAGE`` and ``--compare PICKERS`` (the plan page, :mod:`tacopt.partitioner.page`)."""
    p.add_argument(
        "--html",
        type=output_file,
        help="write the plan page here: one self-contained HTML file (the fused DAG coloured by "
        "device; click an op for its costs per device and why a device was refused)",
    )
    p.add_argument(
        "--compare",
        type=names,
        metavar="PICKERS",
        help="with --html: also plan with these pickers (e.g. exact,tac,greedy) on the same "
        "problem; the page shows each plan, its cost, and the ops whose device or type differs",
    )


def add_memory_option(p: argparse.ArgumentParser) -> None:
    """``--memory GPU=64MiB,NNAPI=8MiB`` (``tacopt partition`` and ``tacopt bench``)."""
    p.add_argument(
        "--memory",
        type=capacities,
        default={},
        metavar="DEVICE=SIZE,...",
        help="device capacities in bytes (units B, KB/KiB, MB/MiB, GB/GiB); every choice holds "
        "its weights and tensors their bytes while live; a device not listed is unlimited",
    )


def add_pin_option(p: argparse.ArgumentParser, where: str) -> None:
    """``--pin PATTERN=DEVICE``, repeatable (``tacopt partition`` and ``tacopt bench``; ``where``
    ends the help), checked as it is parsed (:func:`tacopt.partitioner.annotate.parse_pin`)."""
    p.add_argument(
        "--pin",
        dest="pins",
        action="append",
        default=[],
        type=_pin,
        metavar="PATTERN=DEVICE",
        help="force ops onto a device: PATTERN globs op names and output tensor names, "
        "kind:GLOB op kinds (e.g. --pin kind:CONV_2D=GPU); repeatable, the first match wins; "
        + where,
    )


def _pin(text: str) -> tuple[str, str]:
    # Deferred for start-up: parse_pin's module (numpy, networkx) is needed only when a --pin
    # is given, and `--version` / `--help` import this module.
    from tacopt.partitioner.annotate import parse_pin

    try:
        return parse_pin(text)
    except TacoptError as exc:
        raise argparse.ArgumentTypeError(one_line(exc)) from None


def run(args: argparse.Namespace) -> int:
    """Partition a .tflite model across devices.

    Fuse, annotate targets, raise subgraphs, cost alternative views, pick, apply. Every output
    (--problem, --plan, --export, --dot, --svg, --html) is written all or nothing.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's module, and
    # what this command runs (the pipeline, its outputs, the page) would add ~0.5 s to them.
    from tacopt.partitioner.cli.partition_run import partition_command

    return partition_command(args)



"""``tacopt partition MODEL --devices GPU,CPU``: partition a model, write its plan and picture.

Options are parsed into :class:`PartitionOptions` and handed to
:func:`tacopt.partitioner.pipeline.partition`; heavy imports happen inside :func:`run`.
``--load`` imports a user's module (``pkg.mod`` or ``path/to/file.py``) first, so targets it
registers can be named in ``--devices``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacopt.fusion.errors import TacoptError


@dataclass(frozen=True, slots=True)
class PartitionOptions:
    """Every knob of one ``tacopt partition`` run."""

    model: Path
    devices: str
    picker: str = "exact"
    cost_model: str = "tac"
    granularity: str = "subgraph"
    time_limit_s: float | None = None
    pins: tuple[tuple[str, str], ...] = ()
    load: tuple[str, ...] = ()
    problem: Path | None = None
    plan: Path | None = None
    export: Path | None = None
    svg: Path | None = None
    dot: Path | None = None
    json: bool = False


def register(subparsers: Any) -> None:
    """Add the ``partition`` sub-command."""
    p = subparsers.add_parser(
        "partition",
        help="partition a .tflite model across devices",
        description="Annotate targets, raise subgraphs, cost alternative views, pick, apply.",
    )
    p.add_argument("model", type=Path, help="the .tflite model")
    p.add_argument("--devices", required=True, help="devices in order of preference, e.g. GPU,CPU")
    p.add_argument("--picker", default="exact", help="picker name (default: exact)")
    p.add_argument("--cost-model", default="tac", help="cost model spec (default: tac)")
    p.add_argument("--granularity", choices=("subgraph", "op"), default="subgraph")
    p.add_argument(
        "--time-limit", type=float, default=None, metavar="S", help="picker time limit in seconds"
    )
    p.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="PATTERN=DEVICE",
        help="force ops whose name or output tensor matches a glob onto a device",
    )
    p.add_argument(
        "--load",
        action="append",
        default=[],
        metavar="MODULE",
        help="import a module or .py file that registers targets (repeatable)",
    )
    p.add_argument("--problem", type=Path, help="write the pick problem JSON here")
    p.add_argument("--plan", type=Path, help="write the plan JSON here")
    p.add_argument("--export", type=Path, help="write the partitioned .tflite here")
    draw = p.add_mutually_exclusive_group()
    draw.add_argument("--svg", type=Path, help="draw the partitioned graph (needs graphviz)")
    draw.add_argument("--dot", type=Path, help="write the partitioned graph as DOT text")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(run=run)


def options_from(args: argparse.Namespace) -> PartitionOptions:
    """The frozen options of parsed arguments (pins checked here)."""
    from tacopt.partitioner.annotate import parse_pin

    return PartitionOptions(
        model=args.model,
        devices=args.devices,
        picker=args.picker,
        cost_model=args.cost_model,
        granularity=args.granularity,
        time_limit_s=args.time_limit,
        pins=tuple(parse_pin(p) for p in args.pin),
        load=tuple(args.load),
        problem=args.problem,
        plan=args.plan,
        export=args.export,
        svg=args.svg,
        dot=args.dot,
        json=args.json,
    )


def load_module(spec: str) -> None:
    """Import ``spec``: a dotted module name or a path to a ``.py`` file."""
    path = Path(spec)
    try:
        if spec.endswith(".py"):
            if not path.is_file():
                raise TacoptError(f"--load {spec}: no such file")
            mod_spec = importlib.util.spec_from_file_location(f"tacopt_user_{path.stem}", path)
            if mod_spec is None or mod_spec.loader is None:
                raise TacoptError(f"--load {spec}: cannot load this file as a module")
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[mod_spec.name] = module
            mod_spec.loader.exec_module(module)
        else:
            importlib.import_module(spec)
    except TacoptError:
        raise
    except Exception as exc:  # a user module's own failure, reported on one line
        raise TacoptError(f"--load {spec}: {type(exc).__name__}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Run ``tacopt partition`` and return the exit code."""
    opts = options_from(args)
    if opts.svg:
        from tacopt.partitioner.draw import require_graphviz

        require_graphviz()
    for spec in opts.load:
        load_module(spec)
    from tacopt.fusion.io import atomic_write
    from tacopt.fusion.reader import read_tflite
    from tacopt.partitioner.pipeline import partition

    G = read_tflite(opts.model)
    result = partition(
        G,
        opts.devices,
        picker=opts.picker,
        cost_model=opts.cost_model,
        granularity=opts.granularity,
        pins=opts.pins,
        time_limit_s=opts.time_limit_s,
    )
    summary = result.summary()
    summary["model"] = str(opts.model)
    if opts.problem:
        from tacopt.partitioner.problem import save_problem

        save_problem(result.problem, opts.problem)
    if opts.plan:
        atomic_write(opts.plan, json.dumps(summary, indent=1) + "\n")
    if opts.export:
        from tacopt.partitioner.export import export_tflite

        export_tflite(result, opts.export)
    if opts.dot or opts.svg:
        from tacopt.partitioner.draw import to_dot, to_svg

        if opts.dot:
            atomic_write(opts.dot, to_dot(result.graph))
        elif opts.svg:
            atomic_write(opts.svg, to_svg(result.graph))
    if opts.json:
        print(json.dumps(summary, indent=1))
    else:
        print(_human(result, summary))
    return 0


def _human(result: Any, summary: dict[str, Any]) -> str:
    counts: dict[str, int] = {}
    for _, data in result.graph.nodes(data=True):
        counts[data["device"]] = counts.get(data["device"], 0) + 1
    b = summary["breakdown"]
    lines = [
        f"{summary['model']}: {len(result.partition.subgraphs)} units "
        f"({result.granularity}), picker {summary['picker']} {summary['status']}, "
        f"objective {summary['objective']:.6g} {result.cost_model} "
        f"(compute {b['compute']:.6g}, transfer {b['transfer']:.6g}, quant {b['quant']:.6g})",
        "ops per device: " + ", ".join(f"{d} {n}" for d, n in sorted(counts.items())),
    ]
    return "\n".join(lines)

"""``tacopt partition MODEL --devices GPU,CPU``: partition a model, write its plan and picture.

Options are parsed into :class:`PartitionOptions` and checked before any work: output paths,
``--time-limit``, user modules (``--load``, a module or ``path/to/file.py``, imported first so
that the devices, pickers or cost models it registers can be named), devices, picker and cost
model. Then :func:`tacopt.partitioner.pipeline.partition` runs, and every output is written all
or nothing (:func:`tacopt.io.all_or_nothing`): a failure or Ctrl-C leaves none of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, capacities, names, options_of, output_file, seconds
from tacopt.errors import OutputError, printable
from tacopt.partitioner.cli import add_load_option, load_module

__all__ = [
    "PartitionOptions", "add_memory_option", "load_module", "options_from", "register", "run"
]  # fmt: skip


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
    fuse: bool = True
    memory: tuple[tuple[str, float], ...] = ()
    explain: str | None = None
    html: Path | None = None
    compare: tuple[str, ...] = ()


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
    from tacopt.errors import TacoptError, one_line
    from tacopt.partitioner.annotate import parse_pin

    try:
        return parse_pin(text)
    except TacoptError as exc:
        raise argparse.ArgumentTypeError(one_line(exc)) from None


def options_from(args: argparse.Namespace) -> PartitionOptions:
    """The frozen options of parsed arguments (argparse checked the values)."""
    if args.compare and args.html is None:
        raise OutputError("--compare shows its plans on the page: give --html PAGE as well")
    return options_of(
        PartitionOptions, args, time_limit_s=args.time_limit, compare=args.compare or ()
    )


def outputs_of(opts: PartitionOptions) -> list[tuple[str, Path | None]]:
    """Each output option with its path (None when not asked for); two may not share a file."""
    outputs = [
        ("--problem", opts.problem),
        ("--plan", opts.plan),
        ("--export", opts.export),
        ("--svg", opts.svg),
        ("--dot", opts.dot),
        ("--html", opts.html),
    ]
    seen: dict[Path, str] = {}
    for what, path in outputs:
        if path is None:
            continue
        key = path.resolve()
        if key in seen:
            raise OutputError(f"{seen[key]} and {what} name the same file '{path}'")
        seen[key] = what
    return outputs


def inputs_of(opts: PartitionOptions) -> list[Path]:
    """The files the run reads (the model, ``--load`` files): no output may replace one."""
    return [opts.model, *(Path(spec) for spec in opts.load if spec.endswith(".py"))]


def run(args: argparse.Namespace) -> int:
    """Partition a .tflite model across devices.

    Fuse, annotate targets, raise subgraphs, cost alternative views, pick, apply. Every output
    (--problem, --plan, --export, --dot, --svg, --html) is written all or nothing.
    """
    from tacopt.io import all_or_nothing

    opts = options_from(args)
    with all_or_nothing(outputs_of(opts), inputs=inputs_of(opts)) as out:
        summary, text = _partition(opts, out)
    # The report's names come from the model: shown escaped (JSON escapes them itself).
    print(json.dumps(summary, indent=1) if opts.json else printable(text, keep_newlines=True))
    wrote = [f"{path} ({what})" for what, path in outputs_of(opts) if path is not None]
    if wrote:  # on stderr under --json, so that stdout stays one JSON document
        print(printable("wrote " + ", ".join(wrote)), file=sys.stderr if opts.json else sys.stdout)
    return 0


def _partition(opts: PartitionOptions, out: Any) -> tuple[dict[str, Any], str]:
    """Check the options, partition, stage every output; the JSON summary and the text report."""
    if opts.svg:
        from tacopt.partitioner.draw import require_graphviz

        require_graphviz()
    for spec in opts.load:
        load_module(spec)
    from tacopt.cost_models.base import get_cost_model
    from tacopt.cost_models.learned.measurement.fingerprint import announce_learned_devices
    from tacopt.fusion.tflite.reader import read_tflite
    from tacopt.partitioner.pickers import get_picker
    from tacopt.partitioner.pipeline import cover_devices, partition
    from tacopt.partitioner.targets import resolve_devices

    targets = resolve_devices(opts.devices)
    for name in (opts.picker, *opts.compare):
        get_picker(name)
    cost_model = get_cost_model(opts.cost_model)
    announce_learned_devices(cost_model, sys.stderr)

    G = read_tflite(opts.model)
    result = partition(
        G,
        targets,
        picker=opts.picker,
        cost_model=cost_model,
        granularity=opts.granularity,
        pins=opts.pins,
        time_limit_s=opts.time_limit_s,
        fuse=opts.fuse,
        capacity=dict(opts.memory),
    )
    summary = result.summary()
    summary["model"] = str(opts.model)
    summary["unit"] = cost_model.unit
    # --explain and the page price ops as the plan did: a device the model does not know by its
    # unit's default (roofline for learned), as partition() extends it.
    cost_model = cover_devices(cost_model, targets)[0]
    explained = ""
    if opts.explain is not None:
        from tacopt.partitioner.explain import explain_op, format_explanation

        e = explain_op(
            G, result, opts.explain, cost_model=cost_model, fuse=opts.fuse,
            capacity=dict(opts.memory), time_limit_s=opts.time_limit_s,
        )  # fmt: skip
        summary["explain"] = e.to_dict()
        from tacopt.partitioner.plan import unit_label

        explained = "\n" + format_explanation(e, unit_label(cost_model.unit))
    if opts.problem:
        from tacopt.partitioner.problem import save_problem

        save_problem(result.problem, out.path(opts.problem))
    if opts.plan:
        out.write(opts.plan, json.dumps(summary, indent=1) + "\n")
    if opts.export:
        from tacopt.partitioner.export import export_tflite

        export_tflite(result, out.path(opts.export))
    if opts.dot:
        from tacopt.partitioner.draw import to_dot

        out.write(opts.dot, to_dot(result.graph))
    elif opts.svg:
        from tacopt.partitioner.draw import to_svg

        out.write(opts.svg, to_svg(result.graph))
    if opts.html:
        from tacopt.partitioner.page import compare_plans, page_data, render_page

        pickers = opts.compare if opts.picker in opts.compare else (opts.picker, *opts.compare)
        results, failed = compare_plans(result, pickers, time_limit_s=opts.time_limit_s)
        for name, why in failed.items():
            print(f"tacopt partition: warning: --compare {name}: no plan: {why}", file=sys.stderr)
        data = page_data(results, title=opts.model.stem, cost_model=cost_model, targets=targets,
                         failed=failed)  # fmt: skip
        out.write(opts.html, render_page(data))
    return summary, _human(result, summary) + explained


def _op_counts(result: Any, summary: dict[str, Any]) -> str:
    """The model's ops per device, counted as the plan page counts them (each op of the fused
    model on its unit's device), then what the applied graph adds: conversions (QUANTIZE /
    DEQUANTIZE between formats, on the CPU) and the ops of device lowerings."""
    counts: dict[str, int] = {}
    model_ops: set[str] = set()
    for name, unit in summary["units"].items():
        device = summary["assignment"][name]["device"]
        counts[device] = counts.get(device, 0) + len(unit["ops"])
        model_ops.update(unit["ops"])
    added = [n for n in result.graph if n not in model_ops]
    conversions = sum(1 for n in added if n.startswith(("quantize__", "dequantize__")))
    replaced = sum(1 for n in model_ops if n not in result.graph)
    notes = []
    if conversions:
        notes.append(f"{conversions} conversion{'' if conversions == 1 else 's'} on the CPU")
    if replaced:
        notes.append(f"lowerings turn {replaced} op{'' if replaced == 1 else 's'} into "
                     f"{len(added) - conversions}")  # fmt: skip
    text = ", ".join(f"{d} {n}" for d, n in sorted(counts.items())) or "none (no ops)"
    return text + (f" (in the applied graph: {'; '.join(notes)})" if notes else "")


def _human(result: Any, summary: dict[str, Any]) -> str:
    b = summary["breakdown"]
    from tacopt.partitioner.plan import unit_label

    unit = unit_label(summary["unit"])
    n_units = len(result.partition.subgraphs)
    lines = [
        f"{summary['model']}: {n_units} unit{'' if n_units == 1 else 's'} "
        f"({result.granularity}), picker {summary['picker']} {summary['status']}, "
        f"objective {summary['objective']:.6g} {unit} "
        f"(compute {b['compute']:.6g}, transfer {b['transfer']:.6g}, quant {b['quant']:.6g}; "
        f"cost model {result.cost_model})",
        "ops per device: " + _op_counts(result, summary),
        "peak memory: " + ", ".join(
            f"{d} {summary['peak_memory'].get(d, 0.0):,.0f} B"
            + (f" of {summary['capacity'][d]:,.0f}" if d in summary["capacity"] else "")
            for d in sorted(summary["peak_memory"])),
    ]  # fmt: skip
    if result.defaulted:
        given = result.cost_model.split("+")[0]
        lines.append(
            "priced by default: " + ", ".join(
                f"{d} by {m}" for d, m in result.defaulted.items())
            + f" ({given} does not know {'it' if len(result.defaulted) == 1 else 'them'})"
        )  # fmt: skip
    if result.fusions:
        fused = ", ".join(f"{rule} {n}" for rule, n in result.fusions.items())
        unfused = ", ".join(f"{kind} {n}" for kind, n in result.unfused.items())
        lines.append(
            f"fused first: {fused}"
            + (f" (unfused again, no device runs them: {unfused})" if unfused else "")
        )
    return "\n".join(lines)

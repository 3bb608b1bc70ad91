"""What ``tacopt partition`` runs once its options are parsed (:mod:`.partition` holds the
parser, imported by every ``tacopt --help``): its options record, the pipeline, and every output
staged all or nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacopt.cli_options import options_of
from tacopt.cost_models.base import get_cost_model
from tacopt.cost_models.learned.measurement.fingerprint import announce_learned_devices
from tacopt.errors import OutputError, printable
from tacopt.formats import json_file_kind
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.io import all_or_nothing
from tacopt.partitioner.cli import load_module
from tacopt.partitioner.draw import require_graphviz, to_dot, to_svg
from tacopt.partitioner.explain import explain_op, format_explanation
from tacopt.partitioner.export import export_tflite
from tacopt.partitioner.page import compare_plans, page_data, render_page
from tacopt.partitioner.pickers import get_picker
from tacopt.partitioner.pipeline import PartitionResult, cover_devices, partition
from tacopt.partitioner.plan import unit_label
from tacopt.partitioner.problem import save_problem
from tacopt.partitioner.targets import resolve_devices

__all__ = ["PartitionOptions", "inputs_of", "options_from", "outputs_of", "partition_command"]


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


def kinds_of(opts: PartitionOptions) -> dict[str, str]:
    """The kind of file each output option writes: an existing file of another kind is refused
    before the work starts (``--plan model.tflite`` never replaces the model)."""
    return {
        "--problem": "JSON",  # save_problem writes plain JSON whatever the name
        "--plan": json_file_kind(opts.plan or ""),
        "--export": "a .tflite model",
        "--svg": "XML or SVG",
        "--dot": "a DOT graph",
        "--html": "an HTML page",
    }


def inputs_of(opts: PartitionOptions) -> list[Path]:
    """The files the run reads (the model, ``--load`` files): no output may replace one."""
    return [opts.model, *(Path(spec) for spec in opts.load if spec.endswith(".py"))]


def partition_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt partition`` (:func:`tacopt.partitioner.cli.partition.run`)."""
    opts = options_from(args)
    with all_or_nothing(outputs_of(opts), inputs=inputs_of(opts), writes=kinds_of(opts)) as out:
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
        require_graphviz()
    for spec in opts.load:
        load_module(spec)

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
        e = explain_op(
            G, result, opts.explain, cost_model=cost_model, fuse=opts.fuse,
            capacity=dict(opts.memory), time_limit_s=opts.time_limit_s,
        )  # fmt: skip
        summary["explain"] = e.to_dict()

        explained = "\n" + format_explanation(e, unit_label(cost_model.unit))
    if opts.problem:
        save_problem(result.problem, out.path(opts.problem))
    if opts.plan:
        out.write(opts.plan, json.dumps(summary, indent=1) + "\n")
    if opts.export:
        export_tflite(result, out.path(opts.export))
    if opts.dot:
        out.write(opts.dot, to_dot(result.graph))
    elif opts.svg:
        out.write(opts.svg, to_svg(result.graph))
    if opts.html:
        pickers = opts.compare if opts.picker in opts.compare else (opts.picker, *opts.compare)
        results, failed = compare_plans(result, pickers, time_limit_s=opts.time_limit_s)
        for name, why in failed.items():
            print(f"tacopt partition: warning: --compare {name}: no plan: {why}", file=sys.stderr)
        data = page_data(results, title=opts.model.stem, cost_model=cost_model, targets=targets,
                         failed=failed)  # fmt: skip
        out.write(opts.html, render_page(data))
    return summary, _human(result, summary) + explained


def _op_counts(result: PartitionResult, summary: dict[str, Any]) -> str:
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


def _human(result: PartitionResult, summary: dict[str, Any]) -> str:
    b = summary["breakdown"]

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

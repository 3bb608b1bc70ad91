"""What ``tacopt inspect`` and ``tacopt rehydrate`` run once their options are parsed
(:mod:`.inspection` holds the parsers, imported by every ``tacopt --help``).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from tacopt.errors import GraphError, OutputError, printable
from tacopt.fusion.ir import all_graphs, ops_of, validate_graph
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import check_rehydrate_size, rehydrate
from tacopt.fusion.tflite.writer import write_tflite
from tacopt.io import check_output_path


@dataclass(frozen=True, slots=True)
class InspectOptions:
    model: Path
    json: bool


@dataclass(frozen=True, slots=True)
class RehydrateOptions:
    source: Path
    target: Path
    seed: int
    max_weight_bytes: int


def summarize(G: nx.MultiDiGraph) -> dict[str, Any]:
    """The facts ``tacopt inspect`` shows, as a JSON-ready dict.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("main", [Tensor("x", (1, 4), "float32"), Tensor("y", (1, 4), "float32")],
    ...                [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
    >>> s = summarize(G)
    >>> s["ops"], s["op_histogram"], s["inputs"][0]["shape"]
    (1, {'RELU': 1}, [1, 4])
    """
    graphs = all_graphs(G)
    hist = Counter(op.kind for g in graphs for _, op in ops_of(g))
    weight_bytes: Counter[str] = Counter()
    dropped_bytes: Counter[str] = Counter()
    seen: set[int] = set()
    for g in graphs:
        for t in g.graph["tensors"].values():
            if t.buffer is None or id(t.buffer) in seen:
                continue  # a shared buffer counts once
            seen.add(id(t.buffer))
            weight_bytes[t.dtype] += t.buffer.nbytes
            if t.buffer.is_placeholder:
                dropped_bytes[t.dtype] += t.buffer.nbytes
    tensors = G.graph["tensors"]

    def io(names: tuple[str, ...]) -> list[dict[str, Any]]:
        out = []
        for name in names:
            t = tensors[name]
            row: dict[str, Any] = {"name": name, "dtype": t.dtype, "shape": list(t.shape)}
            if t.shape_signature is not None and tuple(t.shape_signature) != tuple(t.shape):
                row["shape_signature"] = list(t.shape_signature)
            out.append(row)
        return out

    model = G.graph.get("model")
    return {
        "name": G.graph.get("name"),
        "subgraphs": len(graphs),
        "ops": sum(g.number_of_nodes() for g in graphs),
        "tensors": sum(len(g.graph["tensors"]) for g in graphs),
        "op_histogram": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "inputs": io(G.graph["inputs"]),
        "outputs": io(G.graph["outputs"]),
        "weight_bytes": dict(sorted(weight_bytes.items())),
        "dropped_weight_bytes": dict(sorted(dropped_bytes.items())),
        "signatures": [s.key for s in model.signature_defs] if model is not None else [],
    }


def format_summary(summary: dict[str, Any], path: Path) -> str:
    """The human-readable tables of ``tacopt inspect``; every string read from the model goes
    through :func:`tacopt.errors.printable` (a name may hold ESC, BEL or CR)."""
    lines = [
        f"model      {printable(path)}",
        f"subgraphs  {summary['subgraphs']}    ops  {summary['ops']}    "
        f"tensors  {summary['tensors']}",
    ]
    if summary["signatures"]:
        lines.append(f"signatures {printable(', '.join(summary['signatures']))}")
    for title in ("inputs", "outputs"):
        lines.append("")
        lines.append(title)
        rows = summary[title]
        width = max((len(printable(r["name"])) for r in rows), default=0)
        for r in rows:
            shape = r.get("shape_signature", r["shape"])
            dims = ", ".join("?" if d < 0 else str(d) for d in shape)
            lines.append(f"  {printable(r['name']):<{width}}  {r['dtype']:<8}  [{dims}]")
    lines += ["", "weights (constant bytes; dropped = structure-only placeholders)"]
    if not summary["weight_bytes"]:
        lines.append("  none")
    for dtype, n in summary["weight_bytes"].items():
        dropped = summary["dropped_weight_bytes"].get(dtype, 0)
        note = f"  ({dropped:,} dropped)" if dropped else ""
        lines.append(f"  {dtype:<10} {n:>14,}{note}")
    lines += ["", "op histogram"]
    width = max((len(printable(k)) for k in summary["op_histogram"]), default=0)
    for kind, count in summary["op_histogram"].items():
        lines.append(f"  {printable(kind):<{width}}  {count:>5}")
    return "\n".join(lines)


def inspect_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt inspect`` (:func:`tacopt.fusion.cli.inspection.run_inspect`)."""
    opts = InspectOptions(model=args.model, json=args.json)
    G = read_tflite(opts.model, validate=False)  # show what could be read, then judge it
    try:
        validate_graph(G)
        problem = None
    except GraphError as exc:
        problem = exc
    summary = summarize(G)
    if opts.json:
        valid = {"valid": problem is None, "problem": None if problem is None else str(problem)}
        print(json.dumps({"file": str(opts.model), **summary, **valid}, indent=1))
    else:
        print(format_summary(summary, opts.model))
    if problem is not None:
        raise GraphError(f"{opts.model}: invalid model: {problem}")
    return 0


def rehydrate_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt rehydrate`` (:func:`tacopt.fusion.cli.inspection.run_rehydrate`)."""
    opts = RehydrateOptions(
        source=args.source,
        target=args.target,
        seed=args.seed,
        max_weight_bytes=args.max_weight_bytes,
    )
    check_output_path(opts.target, what="OUT", inputs=[opts.source])
    G = read_tflite(opts.source)
    filled = check_rehydrate_size(G, opts.max_weight_bytes)
    H = rehydrate(G, seed=opts.seed, max_bytes=opts.max_weight_bytes)
    try:
        write_tflite(H, opts.target)
    except OSError as exc:
        raise OutputError(f"{opts.target}: cannot write ({exc.strerror or exc})") from None
    print(f"wrote {opts.target} (seed {opts.seed}; {filled:,} dropped weight bytes filled)")
    return 0

"""``tacopt fuse MODEL [--json] [-o OUT.tflite] [--strict] [--builtins-only]``."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FuseOptions:
    model: str
    json: bool
    output: str | None
    strict: bool
    builtins_only: bool


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("fuse", help="fuse composites and patterns of a .tflite model")
    p.add_argument("model", help="path of a .tflite model")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", help="write the fused model to this .tflite path")
    p.add_argument("--strict", action="store_true", help="a composite that cannot fuse is an error")
    p.add_argument(
        "--builtins-only",
        action="store_true",
        help="only rules whose fused ops are TFLite builtins (output loads in LiteRT)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tacopt.fusion.fuse import BUILTIN_ONLY_RULES, fuse, op_histogram
    from tacopt.fusion.reader import read_tflite
    from tacopt.fusion.writer import write_tflite

    opts = FuseOptions(args.model, args.json, args.output, args.strict, args.builtins_only)
    G = read_tflite(opts.model)
    result = fuse(G, rules=BUILTIN_ONLY_RULES if opts.builtins_only else None, strict=opts.strict)
    if opts.output:
        write_tflite(result.graph, opts.output)
    for w in result.warnings:
        print(f"tacopt fuse: warning: {w}", file=sys.stderr)
    report = {
        "model": opts.model,
        "ops_before": result.ops_before,
        "ops_after": result.ops_after,
        "fusions": result.counts,
        "op_histogram": op_histogram(result.graph),
        "warnings": list(result.warnings),
        "output": opts.output,
    }
    if opts.json:
        print(json.dumps(report))
    else:
        print(f"{opts.model}: {result.ops_before} ops -> {result.ops_after} ops")
        for rule, n in result.counts.items():
            print(f"  {rule:24s} {n}")
    return 0

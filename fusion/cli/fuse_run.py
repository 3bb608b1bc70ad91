"""What ``tacopt fuse`` runs once its options are parsed (:mod:`.fuse` holds the parser,
imported by every ``tacopt --help``): read, fuse, report, write the fused model all or nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tacopt.fusion.fuse import BUILTIN_ONLY_RULES, fuse, op_histogram
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.writer import write_tflite
from tacopt.io import all_or_nothing


@dataclass(frozen=True, slots=True)
class FuseOptions:
    model: str
    json: bool
    output: Path | None
    strict: bool
    builtins_only: bool


def fuse_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt fuse`` (:func:`tacopt.fusion.cli.fuse.run`)."""
    opts = FuseOptions(args.model, args.json, args.output, args.strict, args.builtins_only)
    with all_or_nothing([("-o", opts.output)], inputs=[opts.model]) as out:
        G = read_tflite(opts.model)
        rules = BUILTIN_ONLY_RULES if opts.builtins_only else None
        result = fuse(G, rules=rules, strict=opts.strict)
        if opts.output:
            write_tflite(result.graph, out.path(opts.output))
    for w in result.warnings:
        print(f"tacopt fuse: warning: {w}", file=sys.stderr)
    report = {
        "model": opts.model,
        "ops_before": result.ops_before,
        "ops_after": result.ops_after,
        "fusions": result.counts,
        "op_histogram": op_histogram(result.graph),
        "warnings": list(result.warnings),
        "output": None if opts.output is None else str(opts.output),
    }
    if opts.json:
        print(json.dumps(report))
    else:
        print(f"{opts.model}: {result.ops_before} ops -> {result.ops_after} ops")
        for rule, n in result.counts.items():
            print(f"  {rule:24s} {n}")
    return 0

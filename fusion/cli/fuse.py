"""``tacopt fuse MODEL [--json] [-o OUT.tflite] [--strict] [--builtins-only]``.

``-o`` is checked before the model is read and written all or nothing: a model that fails to
fuse, or Ctrl-C, leaves no file behind.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tacopt.cli_options import add_command, output_file


@dataclass(frozen=True, slots=True)
class FuseOptions:
    model: str
    json: bool
    output: Path | None
    strict: bool
    builtins_only: bool


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``fuse`` sub-command."""
    p = add_command(subparsers, "fuse", run)
    p.add_argument("model", help="path of a .tflite model")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "-o", "--output", type=output_file, help="write the fused model to this .tflite path"
    )
    p.add_argument("--strict", action="store_true", help="a composite that cannot fuse is an error")
    p.add_argument(
        "--builtins-only",
        action="store_true",
        help="only rules whose fused ops are TFLite builtins (output loads in LiteRT)",
    )


def run(args: argparse.Namespace) -> int:
    """Fuse composites and patterns of a .tflite model.

    Replace the composites of a .tflite model (STABLEHLO_COMPOSITE ops whose signature verifies)
    and its op patterns (LSTM loops, GELU, layer norm, softmax, padding and activations folded
    into convolutions, ...) with single fused ops; print what was fused and optionally write the
    fused model (-o, written all or nothing).
    """
    from tacopt.fusion.fuse import BUILTIN_ONLY_RULES, fuse, op_histogram
    from tacopt.fusion.tflite.reader import read_tflite
    from tacopt.fusion.tflite.writer import write_tflite
    from tacopt.io import all_or_nothing

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

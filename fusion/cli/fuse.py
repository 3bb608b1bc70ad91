"""``tacopt fuse MODEL [--json] [-o OUT.tflite] [--strict] [--builtins-only]``.

``-o`` is checked before the model is read and written all or nothing: a model that fails to
fuse, or Ctrl-C, leaves no file behind.
"""

from __future__ import annotations

import argparse

from tacopt.cli_options import add_command, output_file


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
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.fusion.cli.fuse_run import fuse_command

    return fuse_command(args)

"""``tacopt measure`` and ``tacopt fit``: measure op latencies, fit and evaluate a learned model.

Both check their inputs and outputs before working: ``measure`` takes models or folders of
models (every ``.tflite`` in a folder, sorted) and an ``--out`` records file it can append to;
``fit`` takes records files that are JSON lines and writes ``-o`` only when everything,
evaluation included, succeeded. This module holds the parsers (imported by every ``tacopt
--help``); what the commands run is in :mod:`tacopt.cost_models.cli.measure_run`.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, at_least, names_of, one_of, output_file, positive


def register_measure(subparsers: Any) -> None:
    p = add_command(subparsers, "measure", run_measure)
    p.add_argument(
        "models", nargs="*", type=Path, metavar="MODEL", help="a .tflite model, or a folder of them"
    )
    p.add_argument(
        "--sweep",
        type=at_least(1),
        nargs="?",
        const=0,
        metavar="N",
        help="measure single ops sampled over each kind's configuration space instead of "
        "models: N of them (one chunk: --seed, --prior, --adapt), or without N a whole "
        "fixed training sweep (5 chunks, ~27 min on 2 cores; SWEEP_RECIPE in "
        "cost_models/cli/measure_run.py); resumable",
    )
    p.add_argument("--seed", type=int, default=0, help="sweep seed (default 0)")
    p.add_argument(
        "--adapt",
        action="store_true",
        help="sweep: sample more of the kinds the fit predicts worst (cross-validated on the "
        "--out records of smaller seeds); use with a new --seed",
    )
    p.add_argument(
        "--prior",
        type=one_of(_priors, "prior"),
        default="generic",
        help="sweep: the samplers to draw from, 'generic' (each kind's space, the default) or "
        "'net' (where networks put ops: stages, squeeze-and-excitation, stems, heads, attention;"
        " cost_models/learned/sampling/samplers_net.py) or 'net-rnn' (net, the fused LSTM,"
        " unrolled-RNN chains)",
    )
    p.add_argument(
        "--max-minutes",
        type=positive("minutes"),
        help="sweep: stop starting new ops after this long; re-run the same command to go on",
    )
    p.add_argument(
        "--out", type=Path, required=True, help="records file (JSON lines; appended to, resumable)"
    )
    p.add_argument(
        "--repeats",
        type=at_least(1),
        default=16,
        help="timed samples per op, each a >= 1 ms batch of invokes, over 8 interpreter instances;"
        " the fastest counts (default 16)",
    )
    p.add_argument(
        "--passes",
        type=at_least(1),
        default=2,
        help="split each op's samples over this many passes, two minutes or more apart where the"
        " run is long enough, so a minute-long slow episode of the machine covers one pass at most"
        " (default 2)",
    )
    p.add_argument("--warmup", type=at_least(0), default=3, help="untimed runs first (default 3)")
    p.add_argument(
        "--threads",
        type=at_least(1),
        default=1,
        help="interpreter threads (default 1; with more, latencies are taken on the wall clock)",
    )
    add_resolver_option(p)
    p.add_argument(
        "--types",
        type=names_of(_type_names, "type"),
        default="",
        help="also measure each op rebuilt in these inference types, comma-separated: float32, "
        "int8 (int8 = full-integer quantization, float32 = dequantized); default: as-is only",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_resolver_option(p: argparse.ArgumentParser) -> None:
    """``--resolver`` (``tacopt measure`` and ``tacopt learn``): the kernels ops are timed on."""
    p.add_argument(
        "--resolver",
        type=one_of(_resolvers, "op resolver"),
        default="xnnpack",
        help="the kernels: 'xnnpack' (LiteRT's default, the XNNPACK delegate), 'builtin' "
        "(LiteRT's optimized builtin kernels, OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES) or"
        " 'ref' (its reference kernels, BUILTIN_REF); recorded in the device fingerprint",
    )


def _resolvers() -> Iterator[str]:
    return iter(_option_tables()["resolver"])


def _type_names() -> Iterator[str]:
    return iter(_option_tables()["types"])


def _priors() -> Iterator[str]:
    return iter(_option_tables()["prior"])


def _option_tables() -> Mapping[str, Iterable[str]]:
    # Deferred for start-up: the learned model's tables load when an option is parsed, not for
    # every --help.
    from tacopt.cost_models.cli.measure_run import option_tables

    return option_tables()


def run_measure(args: argparse.Namespace) -> int:
    """Time every op of .tflite models alone on the ai-edge-litert interpreter.

    Fold the ops of constants the runtime computes at init (DEQUANTIZE of float16 weights,
    DENSIFY, ...; one 'folded' record each) and fuse as the partitioner does, then cut each op
    into a single-op model with random weights, time it (the fastest of 16 samples of thread
    CPU time, each a >= 1 ms batch of invokes, over 8 interpreter instances spread over seconds;
    more after waiting while a probe shows the machine busy), optionally also rebuilt in other
    inference types (--types), time the whole model as priced (as stored if the runtime
    cannot run that), append one JSON record per op configuration to --out (resumable), each
    naming the device fingerprint (CPU, ISA, LiteRT version, --resolver, --threads) of a
    'device' record.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.cost_models.cli.measure_run import measure_command

    return measure_command(args)


def register_fit(subparsers: Any) -> None:
    p = add_command(subparsers, "fit", run_fit)
    p.add_argument("records", type=Path, help="records from `tacopt measure`")
    p.add_argument(
        "-o", "--out", type=output_file, required=True,
        help="model file (.json, or .json.gz: gzipped)",
    )
    p.add_argument("--eval", type=Path, help="held-out records to evaluate on")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="then re-anchor the model on this machine (as `tacopt calibrate`; a timing run)",
    )


def run_fit(args: argparse.Namespace) -> int:
    """Fit a learned latency model on measured records (JSON, loadable as a cost model).

    Fit a learned per-op latency model (µs) on records from `tacopt measure` and write it as a
    JSON file that --cost-model accepts; with --eval, also report its accuracy on held-out
    records (share of ops within ±10 %, MAPE, whole-model error). -o is written only when
    everything succeeded.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.cost_models.cli.measure_run import fit_command

    return fit_command(args)


def register_calibrate(subparsers: Any) -> None:
    p = add_command(subparsers, "calibrate", run_calibrate)
    p.add_argument("model", type=Path, help="a learned model file from `tacopt fit`")
    p.add_argument("-o", "--out", type=Path, help="write here instead of over MODEL")
    p.add_argument("--rounds", type=at_least(1), help="timing rounds (default 20)")


def run_calibrate(args: argparse.Namespace) -> int:
    """Re-anchor a learned model on the machine at hand (times its reference models).

    Time the reference models of cost_models/learned/measurement/speed.py (gated, as ops are
    timed) and store them as the model's `speed`: its predictions then follow this machine's
    speed today. It times the machine: run it while nothing else keeps the cores busy.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.cost_models.cli.measure_run import calibrate_command

    return calibrate_command(args)

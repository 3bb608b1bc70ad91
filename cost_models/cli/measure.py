"""``tacopt measure`` and ``tacopt fit``: measure op latencies, fit and evaluate a learned model.

Both check their inputs and outputs before working: ``measure`` takes models or folders of
models (every ``.tflite`` in a folder, sorted) and an ``--out`` records file it can append to;
``fit`` takes records files that are JSON lines and writes ``-o`` only when everything,
evaluation included, succeeded.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, at_least, names_of, one_of, output_file, positive
from tacopt.io import GZIP_MAGIC, check_output_path

#: Timing rounds of `tacopt calibrate`.
CALIBRATE_ROUNDS = 20


@dataclass(frozen=True, slots=True)
class MeasureArgs:
    models: tuple[Path, ...]
    out: Path
    repeats: int
    warmup: int
    threads: int
    quiet: bool
    types: tuple[str, ...]
    resolver: str = "xnnpack"


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
        "cost_models/cli.py); resumable",
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


def read_learned_doc(path: str | Path, *, anchored: bool = False) -> dict[str, Any]:
    """The JSON document of the learned model file ``path`` (``tacopt fit``'s format); with
    ``anchored``, one fitted on records that carry the machine's speed (calibrate, adapt).

    Raises
    ------
    CostModelError
        A missing or unreadable file, another format, or no speed anchor (one line).
    """
    from tacopt.cost_models.learned.fitting.model import FORMAT
    from tacopt.cost_models.model_file import read_model_doc
    from tacopt.cost_models.protocol import CostModelError

    doc = read_model_doc(path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CostModelError(f"learned model '{path}': format is not '{FORMAT}'")
    if anchored and not doc.get("anchor_speed"):
        raise CostModelError(f"learned model '{path}': fitted on records without speed; refit it")
    return doc


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


# The option values' tables, imported only when an option is parsed.
def _resolvers() -> Iterator[str]:
    from tacopt.cost_models.learned.measurement.fingerprint import RESOLVERS

    return iter(RESOLVERS)


def _type_names() -> Iterator[str]:
    from tacopt.cost_models.learned.measurement.retype import TYPE_NAMES

    return iter(TYPE_NAMES)


def _priors() -> Iterator[str]:
    from tacopt.cost_models.learned.sampling.sweep import PRIORS

    return iter(PRIORS)


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
    from tacopt.cost_models.learned.measurement.measure import measure_models
    from tacopt.cost_models.learned.measurement.records import MeasureError
    from tacopt.cost_models.learned.measurement.retype import TYPE_NAMES
    from tacopt.cost_models.learned.measurement.timing import MeasureConfig

    check_output_path(args.out, what="--out")
    if args.out.exists():
        check_records_file(args.out, what="--out")
    if args.sweep is not None:
        return _run_sweep(args)
    if not args.models:
        raise MeasureError("measure: give models (or folders of them), or --sweep")
    opts = MeasureArgs(
        model_files(args.models), args.out, args.repeats, args.warmup, args.threads, args.quiet,
        args.types, args.resolver,
    )  # fmt: skip
    samples = max(opts.repeats, 1)
    cfg = MeasureConfig(
        threads=opts.threads, warmup=opts.warmup, samples=samples, min_samples=min(3, samples),
        resolver=opts.resolver, passes=args.passes,
    )  # fmt: skip
    bar = None
    if not opts.quiet and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=0, unit="op", file=sys.stderr)

    def progress(done: int, total: int, label: str) -> None:
        if bar is not None:
            bar.total = total
            bar.set_postfix_str(label[-40:], refresh=False)
            bar.update(1)

    try:
        types = [TYPE_NAMES[t] for t in opts.types]
        silence_xnnpack_banner()
        stats = measure_models(opts.models, opts.out, cfg, types=types, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    print(json.dumps(stats))
    return 0


#: The training sweep of the learned model shipped until 2026-11-26, chunk by chunk: (seed, prior,
#: ops, adapt).
#: ``tacopt measure --sweep --out train.jsonl`` (no N) measures all of it, resumably.
SWEEP_RECIPE: tuple[tuple[int, str, int, bool], ...] = (
    (0, "generic", 4000, False),
    (1, "generic", 2000, True),
    (2, "generic", 800, True),
    (3, "net", 5000, False),
    (4, "net-rnn", 3000, False),
)


def _run_sweep(args: argparse.Namespace) -> int:
    import time

    from tacopt.cost_models.learned.measurement.records import MeasureError
    from tacopt.cost_models.learned.measurement.timing import MeasureConfig

    if args.models:
        raise MeasureError(
            "measure: --sweep measures sampled ops, not models; give one or the other"
        )
    if args.adapt and args.prior != "generic":
        raise MeasureError("--adapt: weights the generic samplers; give it without --prior")
    samples = max(args.repeats, 1)
    cfg = MeasureConfig(
        threads=args.threads, warmup=args.warmup, samples=samples, min_samples=min(3, samples),
        resolver=args.resolver, passes=args.passes,
    )  # fmt: skip
    silence_xnnpack_banner()
    chunks = SWEEP_RECIPE if args.sweep == 0 else ((args.seed, args.prior, args.sweep, args.adapt),)
    deadline = None if args.max_minutes is None else time.monotonic() + args.max_minutes * 60
    total: dict[str, int] = {}
    for seed, prior, n, adapt in chunks:
        left_s = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        stats = _sweep_chunk(args.out, cfg, seed, prior, n, adapt, left_s)
        for k, v in stats.items():
            total[k] = total.get(k, 0) + v
        if stats["left"]:
            break  # out of time: re-run the same command to go on
    print(json.dumps(total))
    return 0


def _sweep_chunk(
    out: Path, cfg: Any, seed: int, prior: str, n: int, adapt: bool, max_s: float | None
) -> dict[str, int]:
    """Measure one chunk of a sweep: ``n`` ops of ``prior`` drawn with ``seed`` (weighted by
    the earlier seeds' misses when ``adapt``), then its chain models when every op is done."""
    from tacopt.cost_models.learned.measurement.measure import measure_graphs
    from tacopt.cost_models.learned.measurement.records import MeasureError
    from tacopt.cost_models.learned.sampling.sweep import PRIORS, iter_samples

    weights, chain, ops_per_chain = PRIORS[prior]
    if adapt:
        from tacopt.cost_models.learned.measurement.records import read_records
        from tacopt.cost_models.learned.sampling.sweep import adaptive_weights

        if not out.exists():
            raise MeasureError("--adapt: --out holds no records of an earlier seed to learn from")
        weights = adaptive_weights(read_records(out), seed=seed)
        print(f"sampling weights: {json.dumps(weights)}", file=sys.stderr)
    stats = measure_graphs(iter_samples(n, seed=seed, weights=weights), out, cfg, max_s=max_s)
    stats["chains"] = 0
    if not stats["left"]:  # then small models of sampled ops: how ops add up in a model
        stats["chains"] = _measure_chains(out, cfg, seed, n // ops_per_chain, chain)
    return stats


def _measure_chains(out: Path, cfg: Any, seed: int, n: int, chain: Any) -> int:
    import tempfile

    from tacopt.cost_models.learned.measurement.measure import measure_models
    from tacopt.fusion.tflite.writer import write_tflite

    with tempfile.TemporaryDirectory() as tmp:
        graphs = [chain(seed, i) for i in range(n)]
        paths = [write_tflite(G, Path(tmp) / f"{G.graph['name']}.tflite") for G in graphs]
        return measure_models(paths, out, cfg)["models"]


def model_files(paths: Sequence[Path]) -> tuple[Path, ...]:
    """The models to measure: each file as given, each folder's ``.tflite`` files, sorted.

    Raises
    ------
    MeasureError
        A path that does not exist, or a folder without a ``.tflite`` file.
    """
    from tacopt.cost_models.learned.measurement.records import MeasureError

    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.glob("*.tflite") if p.is_file())
            if not found:
                raise MeasureError(f"model folder '{path}' holds no .tflite file")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise MeasureError(f"model '{path}' does not exist")
    return tuple(dict.fromkeys(files))


def check_records_file(path: Path, *, what: str) -> Path:
    """``path`` if it is a readable records file whose first line is a JSON object.

    Only the first line is read: this catches a model or a text file given by mistake, which
    :func:`tacopt.cost_models.learned.measurement.records.read_records` would take for a torn
    last line.

    Raises
    ------
    MeasureError
        A missing file, a folder, or a file that is not JSON lines.
    """
    from tacopt.cost_models.learned.measurement.records import MeasureError

    if path.is_dir():
        raise MeasureError(f"{what}: '{path}' is a folder, not a records file")
    if not path.is_file():
        raise MeasureError(f"{what}: '{path}' does not exist")
    with path.open("rb") as raw:
        gzipped = raw.read(2) == GZIP_MAGIC
    with (gzip.open(path, "rb") if gzipped else path.open("rb")) as f:
        try:
            first = next((line for line in f if line.strip()), b"")
        except (OSError, EOFError):  # broken gzip data
            first = b"?"
    if not first:
        return path  # empty: no records yet
    try:
        record = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        record = None
    if not isinstance(record, dict):
        raise MeasureError(
            f"{what}: '{path}' is not JSON lines (its first line is not a JSON object); "
            "records come from `tacopt measure`"
        )
    return path


@contextmanager
def _stderr_to_devnull() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null (C++ libraries write there directly)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def silence_xnnpack_banner() -> None:
    """Swallow LiteRT's "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." line.

    ai_edge_litert has no log-level setting, and the line is written to stderr from C++ once per
    process, by the first interpreter that applies the XNNPACK delegate. So one interpreter on
    a one-op model is created here with stderr pointed at /dev/null; the measurements after it
    run unchanged, and errors they report still reach stderr.
    """
    from ai_edge_litert.interpreter import Interpreter

    from tacopt.fusion.ir import Op, Tensor, make_graph
    from tacopt.fusion.tflite.writer import serialize_tflite

    G = make_graph(
        "banner", [Tensor(n, (1, 4), "float32") for n in "xy"],
        [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"],
    )  # fmt: skip
    with _stderr_to_devnull():
        try:
            Interpreter(model_content=bytes(serialize_tflite(G))).allocate_tensors()
        except Exception:  # the measurements report interpreter failures themselves
            pass


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
    from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
    from tacopt.cost_models.learned.fitting.fit import fit
    from tacopt.cost_models.learned.fitting.model import LearnedCostModel
    from tacopt.cost_models.learned.measurement.records import read_records
    from tacopt.cost_models.model_file import model_bytes
    from tacopt.io import all_or_nothing

    with all_or_nothing([("-o", args.out)], inputs=[args.records, args.eval]) as out:
        check_records_file(args.records, what="records file")
        if args.eval is not None:
            check_records_file(args.eval, what="--eval")
        train = read_records(args.records)
        doc = fit(train)
        if args.calibrate:
            doc = calibrate(doc)
        result = None
        if args.eval is not None:
            train_keys = {r["key"] for r in train if r.get("type") == "op"}
            held_out = read_records(args.eval)
            result = model_accuracy(LearnedCostModel(doc), held_out, train_keys=train_keys)
        out.write(args.out, model_bytes(doc, args.out))
    if result is None:
        if not args.json:
            print(
                f"wrote {args.out}: {doc['trained_on']['configs']} configurations, "
                f"{len(doc['fits'])} fits"
            )
        return 0
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        from tacopt.cost_models.learned.fitting.accuracy import report_lines

        print("\n".join(report_lines(result)))
    return 0


def calibrate(doc: dict[str, Any], rounds: int = CALIBRATE_ROUNDS) -> dict[str, Any]:
    """``doc`` (a fitted learned model) re-anchored on this machine: the reference models of
    :mod:`tacopt.cost_models.learned.measurement.speed` timed now become its ``speed``."""
    from tacopt.cost_models.learned.measurement.speed import measure_speed, speed_index

    silence_xnnpack_banner()
    speed = measure_speed(rounds)
    factor = speed_index(speed, doc.get("anchor_speed", {}))
    return {**doc, "speed": speed, "calibrated": {"rounds": rounds, "speed_index": factor}}


def register_calibrate(subparsers: Any) -> None:
    p = add_command(subparsers, "calibrate", run_calibrate)
    p.add_argument("model", type=Path, help="a learned model file from `tacopt fit`")
    p.add_argument("-o", "--out", type=Path, help="write here instead of over MODEL")
    p.add_argument("--rounds", type=at_least(1), default=CALIBRATE_ROUNDS, help="timing rounds")


def run_calibrate(args: argparse.Namespace) -> int:
    """Re-anchor a learned model on the machine at hand (times its reference models).

    Time the reference models of cost_models/learned/measurement/speed.py (gated, as ops are
    timed) and store them as the model's `speed`: its predictions then follow this machine's
    speed today. It times the machine: run it while nothing else keeps the cores busy.
    """
    from tacopt.cost_models.model_file import model_bytes
    from tacopt.io import all_or_nothing

    out = args.out or args.model
    doc = read_learned_doc(args.model, anchored=True)
    with all_or_nothing([("-o", out)]) as w:
        new = calibrate(doc, args.rounds)
        w.write(out, model_bytes(new, out))
    print(
        f"wrote {out}: this machine runs at {new['calibrated']['speed_index']:.3f} x the "
        f"training machine's time ({json.dumps(new['speed'])})"
    )
    return 0

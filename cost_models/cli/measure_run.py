"""What ``tacopt measure``, ``fit`` and ``calibrate`` run once their options are parsed
(:mod:`.measure` holds the parsers, imported by every ``tacopt --help``), and the helpers the
other learned-model commands share: reading a learned model file, checking a records file,
silencing LiteRT's XNNPACK banner.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy, report_lines
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import FORMAT, LearnedCostModel
from tacopt.cost_models.learned.measurement.fingerprint import RESOLVERS
from tacopt.cost_models.learned.measurement.measure import measure_graphs, measure_models
from tacopt.cost_models.learned.measurement.records import MeasureError, read_records
from tacopt.cost_models.learned.measurement.retype import TYPE_NAMES
from tacopt.cost_models.learned.measurement.speed import measure_speed, speed_index
from tacopt.cost_models.learned.measurement.timing import MeasureConfig
from tacopt.cost_models.learned.sampling.sweep import PRIORS, adaptive_weights, iter_samples
from tacopt.cost_models.model_file import model_bytes, read_model_doc
from tacopt.cost_models.protocol import CostModelError
from tacopt.formats import json_file_kind
from tacopt.fusion.ir import Op, Tensor, make_graph
from tacopt.fusion.tflite.writer import serialize_tflite, write_tflite
from tacopt.io import GZIP_MAGIC, all_or_nothing, check_output_path


def option_tables() -> dict[str, Iterable[str]]:
    """The values the parsers (:mod:`.measure`) accept: op resolvers, inference types, priors."""
    return {"resolver": RESOLVERS, "types": TYPE_NAMES, "prior": PRIORS}


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


def read_learned_doc(path: str | Path, *, anchored: bool = False) -> dict[str, Any]:
    """The JSON document of the learned model file ``path`` (``tacopt fit``'s format); with
    ``anchored``, one fitted on records that carry the machine's speed (calibrate, adapt).

    Raises
    ------
    CostModelError
        A missing or unreadable file, another format, or no speed anchor (one line).
    """
    doc = read_model_doc(path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CostModelError(f"learned model '{path}': format is not '{FORMAT}'")
    if anchored and not doc.get("anchor_speed"):
        raise CostModelError(f"learned model '{path}': fitted on records without speed; refit it")
    return doc


def measure_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt measure`` (:func:`tacopt.cost_models.cli.measure.run_measure`)."""
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
    weights, chain, ops_per_chain = PRIORS[prior]
    if adapt:
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
    # Deferred: LiteRT (ai_edge_litert, ~0.3 s to import) only when a command times ops.
    from ai_edge_litert.interpreter import Interpreter

    G = make_graph(
        "banner", [Tensor(n, (1, 4), "float32") for n in "xy"],
        [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"],
    )  # fmt: skip
    with _stderr_to_devnull():
        try:
            Interpreter(model_content=bytes(serialize_tflite(G))).allocate_tensors()
        except Exception:  # the measurements report interpreter failures themselves
            pass


def fit_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt fit`` (:func:`tacopt.cost_models.cli.measure.run_fit`)."""
    with all_or_nothing(
        [("-o", args.out)],
        inputs=[args.records, args.eval],
        writes={"-o": json_file_kind(args.out)},
    ) as out:
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
        print("\n".join(report_lines(result)))
    return 0


#: Timing rounds of `tacopt calibrate`.
CALIBRATE_ROUNDS = 20


def calibrate(doc: dict[str, Any], rounds: int = CALIBRATE_ROUNDS) -> dict[str, Any]:
    """``doc`` (a fitted learned model) re-anchored on this machine: the reference models of
    :mod:`tacopt.cost_models.learned.measurement.speed` timed now become its ``speed``."""
    silence_xnnpack_banner()
    speed = measure_speed(rounds)
    factor = speed_index(speed, doc.get("anchor_speed", {}))
    return {**doc, "speed": speed, "calibrated": {"rounds": rounds, "speed_index": factor}}


def calibrate_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt calibrate`` (:func:`tacopt.cost_models.cli.measure.run_calibrate`)."""
    out = args.out or args.model
    doc = read_learned_doc(args.model, anchored=True)
    with all_or_nothing([("-o", out)]) as w:
        new = calibrate(doc, args.rounds or CALIBRATE_ROUNDS)
        w.write(out, model_bytes(new, out))
    print(
        f"wrote {out}: this machine runs at {new['calibrated']['speed_index']:.3f} x the "
        f"training machine's time ({json.dumps(new['speed'])})"
    )
    return 0

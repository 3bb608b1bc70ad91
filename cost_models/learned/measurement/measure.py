"""Measure op latencies on a real runtime (the ai-edge-litert interpreter).

What is measured is the graph the partitioner prices
(:func:`~tacopt.cost_models.learned.measurement.singleop.priced_graph`): the model with its ops of
constants that the runtime computes once, at init, folded (a DEQUANTIZE of float16 weights, a
DENSIFY of sparse ones: :data:`~tacopt.cost_models.learned.measurement.singleop.FOLDED_KINDS`), then
fused with the rules whose fused ops LiteRT runs. Folded ops get a ``folded`` record (no per-invoke
cost), and the op that reads their output is cut, measured and featured with constant weights, as
the runtime runs it. The whole model is timed as priced too (a fused LSTM, not the WHILE loop or
the unrolled cells it was stored as: Keras's bidirectional LSTM ran in 2.6 ms stored, about half
of that fused), as stored only when the runtime cannot run the priced graph (``timed``).

Each op of each model (nested WHILE / IF bodies included) is cut into a single-op graph: the op,
its non-constant inputs as graph inputs, its constants filled with random values
(:func:`fill_constants`, seeded), written with :func:`tacopt.fusion.tflite.writer.serialize_tflite`
and timed with ``ai_edge_litert.interpreter.Interpreter`` at a fixed thread count (default 1).
Identical configurations (same :func:`op_key`) are measured once. The whole model is timed too
(record type ``"model"``), with the op keys it is made of (WHILE bodies multiplied by their trip
count) so sums of op latencies can be checked against it.

Records (JSON lines, appended and flushed one by one, so a run can resume; docs/cost-models.md
"The records format" is the reference):

- ``{"type": "device", "device": id, "fingerprint": {...}}``: the device every later record's
  ``device`` id names (:mod:`~tacopt.cost_models.learned.measurement.fingerprint`), written once per
  device and file
- ``{"type": "folded", "key", "model", "op", "kind", "reason", "inputs", ...}``: an op of
  constants, computed at init; priced 0 per invoke, neither measured nor skipped

- ``{"type": "op", "key", "model", "graph", "op", "kind", "inputs", "outputs", "options",
  "flops", "bytes", "inference_type", "latency_us", "latency_median_us", "wall_us",
  "wall_median_us", "batch", "repeats", "rejected", "quiet", "threads", "method",
  "overhead_us", "probe_us", "speed", "resolver", "device"}``: ``repeats`` samples counted,
  ``rejected`` dropped as not quiet, ``quiet`` False when no sample was (then every sample
  counts). Records of earlier versions have no ``rejected`` / ``quiet`` (ungated samples) and
  read the same.
  ``speed`` (reference model -> latency in us, :mod:`~tacopt.cost_models.learned.measurement.speed`)
  is the machine's speed beside the op, and ``probe_us`` the gate's fast-state probe time; records
  without them predate drift tracking. ``priced_by`` (a custom op the runtime cannot run):
  the rule whose stand-in graph was timed in its place
  (:mod:`~tacopt.cost_models.learned.measurement.custom_ops`).
- ``{"type": "skip", "key", "model", "op", "kind", "reason", ...}`` for ops that cannot run
  alone, with the op's features (``inputs``, ``outputs``, ``options``, ...) when known, so a
  learned model predicts them (from data movement) instead of counting them as zero
- ``{"type": "model", "model", "latency_us", "ops": [[key, count], ...], "variants": [...],
  "folded": [[key, count], ...], "absorbed": [[key, count], ...], ...}``; ``absorbed`` are
  ops of ``ops`` that XNNPACK fuses into their consumer inside the model
  (:func:`~tacopt.cost_models.learned.measurement.singleop.absorbed_reason`: a PAD before a
  VALID convolution), measured alone all the same; ``latency_us`` is None when the runtime
  cannot run the model whole (custom ops), ``untimed`` then says why; ``priced`` notes a model
  measured as stored because fusion refused it; ``timed`` is ``"priced"`` (the graph the op
  records come from) or ``"stored (why)"``; records without it were timed as stored;
  ``dram_us`` is the memory reference read beside the model
  (:func:`~tacopt.cost_models.learned.measurement.speed.memory_index`)

With ``types`` (``tacopt measure --types float32,int8``) every op is also rebuilt in the other
inference types (:func:`retype_op`) and measured; those records carry ``retyped_from`` (the op's
own type) and are listed under the model's ``variants``, never its ``ops``.

The parts: :mod:`~tacopt.cost_models.learned.measurement.singleop` (cutting ops out),
:mod:`~tacopt.cost_models.learned.measurement.retype` (other inference types),
:mod:`~tacopt.cost_models.learned.measurement.timing` (gated timing) and
:mod:`~tacopt.cost_models.learned.measurement.records` (the records file); this module is the run
driver.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import networkx as nx

from tacopt.cost_models.learned.measurement.fingerprint import (
    device_record,
    fingerprint_id,
    host_fingerprint,
)
from tacopt.cost_models.learned.measurement.queue import OpQueue, timing_fields
from tacopt.cost_models.learned.measurement.records import read_records, write_record
from tacopt.cost_models.learned.measurement.retype import RetypeError, retype_op
from tacopt.cost_models.learned.measurement.singleop import (
    absorbed_ops,
    cut_op,
    fill_constants,
    model_ops,
    op_features,
    op_key,
    priced_graph,
    unmeasurable,
)
from tacopt.cost_models.learned.measurement.speed import SpeedTracker, memory_reference
from tacopt.cost_models.learned.measurement.timing import Gate, MeasureConfig, time_model
from tacopt.cost_models.ops import trip_count
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.writer import serialize_tflite


class Meter(NamedTuple):
    """The machine's state as one measurement run sees it: the gate (its fast-state probe time
    and the invoke overhead, sharpened by every probe read of the run) and the speed tracker
    (reference models timed in each chunk).

    One per run. ``tacopt learn`` measures in phases and chain models, one call each: they share
    one meter, so a phase that starts in a slow episode of the machine still knows the fast
    state (a gate calibrated afresh in a 40-second episode here took a probe 1.7-1.9x the fast
    one for the fast state, and let every op of the phase through as quiet).
    """

    gate: Gate
    tracker: SpeedTracker

    @classmethod
    def start(cls, cfg: MeasureConfig) -> Meter:
        """A new meter: the gate calibrated (``cfg.calibrate_s``), no speed read yet."""
        return cls(Gate(cfg), SpeedTracker())


def measure_models(
    paths: Iterable[str | Path],
    out: str | Path,
    cfg: MeasureConfig | None = None,
    *,
    types: Sequence[str] = (),
    progress: Callable[[int, int, str], None] | None = None,
    meter: Meter | None = None,
) -> dict[str, int]:
    """Measure every op of every model into the JSONL file ``out`` (resuming it if it exists).

    Parameters
    ----------
    paths : .tflite files.
    out : records file; existing records are kept and their ops / models are not re-measured.
    cfg : timing knobs (default :class:`MeasureConfig`).
    types : inference types (``"FLOAT"``, ``"QUANTIZED_INT8"``) to measure each op in besides
        its own: the op is rebuilt by :func:`retype_op`. Such records carry ``retyped_from``
        (the op's own type) and are listed in the model record under ``variants``, never in
        ``ops`` (whole-model sums stay those of the model as it is).
    progress : called as ``progress(done, total, label)`` after each op.
    meter : the run's gate and speed tracker (:class:`Meter`), when this call is one step of
        a longer run (``tacopt learn``); a new one by default.

    Returns
    -------
    dict
        Counts: ``measured``, ``reused`` (already measured configurations), ``skipped``,
        ``folded`` (ops of constants, computed at init), ``models``.
    """
    cfg = MeasureConfig() if cfg is None else cfg
    out = Path(out)
    done_keys, _, done_models, done_devices = _recorded(out, ("op", "skip", "folded"))
    graphs = []
    for p in paths:
        p = Path(p)
        if p.stem not in done_models:
            G = read_tflite(p)
            graphs.append((p, G, *priced_graph(G)))
    total = sum(sum(1 for _ in model_ops(H)) for _, _, H, _, _ in graphs)
    stats = {"measured": 0, "reused": 0, "skipped": 0, "folded": 0, "models": 0}
    gate, tracker = meter or Meter.start(cfg)

    def knobs() -> dict[str, Any]:
        return {**_run_knobs(cfg, gate, tracker), "device": device}

    count = 0
    with out.open("a") as f:
        device = _device(f, cfg, done_devices)
        queue = OpQueue(f, cfg, gate, tracker, knobs, stats)
        queued: set[str] = set()  # keys submitted, their records not yet written
        waiting: list[tuple[set[str], dict[str, Any]]] = []  # model records after their ops'

        def write_finished_models() -> None:
            while waiting and not waiting[0][0]:
                record = waiting.pop(0)[1]
                # the run's first model was timed before any reference was: it takes the
                # reading its ops were timed beside (with none, `evaluate` compared it
                # unnormalized: 5.3x off on LiteRT's builtin kernels)
                record["speed"] = record["speed"] or tracker.speed()
                write_record(f, record)

        def written(key: str) -> None:
            queued.discard(key)
            for keys, _ in waiting:
                keys.discard(key)
            write_finished_models()

        queue.on_written(written)

        def submit(base: dict[str, Any], feats: dict[str, Any], single: bytes) -> None:
            queued.add(base["key"])
            queue.submit(base, feats, single)

        def skip(base: Mapping[str, Any], kind: str, reason: str) -> None:
            record = {"type": "skip", **base, "kind": kind, "reason": reason, "device": device}
            write_record(f, record)
            stats["skipped"] += 1

        for path, stored, G, folded, note in graphs:
            keys: dict[str, float] = {}
            variants: dict[str, float] = {}
            folded_keys: dict[str, float] = {}
            for name, ffeats, why in folded:  # computed once, at init: no per-invoke cost
                fkey = op_key(ffeats)
                folded_keys[fkey] = folded_keys.get(fkey, 0.0) + 1
                if fkey not in done_keys:
                    done_keys.add(fkey)
                    record = {"type": "folded", "key": fkey, "model": path.stem, "op": name}
                    write_record(f, {**record, **ffeats, "reason": why, "device": device})
                    stats["folded"] += 1
            loop_trips = 0.0
            absorbed = absorbed_ops(G) if cfg.resolver == "xnnpack" else {}
            for S, node, mult in model_ops(G):
                count += 1
                if S.nodes[node]["op"].kind == "WHILE":
                    loop_trips += mult * trip_count(S, node, root=G)[0]
                feats = op_features(S, node, root=G)
                key = op_key(feats)
                keys[key] = keys.get(key, 0.0) + mult
                if progress is not None:
                    progress(count, total, f"{path.stem}:{node}")
                base = {"key": key, "model": path.stem, "graph": S.graph["name"], "op": node}
                reason = unmeasurable(S, node)
                wanted = [t for t in types if t != feats["inference_type"]]
                if key in done_keys and not wanted:
                    stats["reused"] += 1
                    continue
                alone = None
                if reason is None:
                    try:
                        alone = fill_constants(cut_op(S, node), seed=cfg.seed)
                    except Exception as exc:  # e.g. an op the writer cannot emit alone
                        reason = f"cut: {type(exc).__name__}: {str(exc)[:160]}"
                if key in done_keys:
                    stats["reused"] += 1
                elif alone is None:
                    done_keys.add(key)
                    skip({**base, **feats}, feats["kind"], str(reason))
                else:
                    done_keys.add(key)
                    submit(base, feats, serialize_tflite(alone))
                for itype in wanted if alone is not None else ():
                    vbase = {**base, "retyped_from": feats["inference_type"]}
                    try:
                        R = retype_op(alone, itype, seed=cfg.seed)
                    except RetypeError as exc:
                        vkey = f"{key}>{itype}"
                        if "same op in every type" not in str(exc) and vkey not in done_keys:
                            done_keys.add(vkey)
                            skip({**vbase, "key": vkey}, feats["kind"], f"{itype}: {exc}")
                        continue
                    vfeats = op_features(R, node, root=R)
                    vkey = op_key(vfeats)
                    variants[vkey] = variants.get(vkey, 0.0) + mult
                    if vkey in done_keys:
                        stats["reused"] += 1
                        continue
                    done_keys.add(vkey)
                    submit({**vbase, "key": vkey}, vfeats, serialize_tflite(R))
            timed = _time_whole(G, stored, cfg, gate)
            model_record: dict[str, Any] = {
                "type": "model",
                "model": path.stem,
                **timed,
                "ops": sorted([k, v] for k, v in keys.items()),
                "variants": sorted([k, v] for k, v in variants.items()),
                "folded": sorted([k, v] for k, v in folded_keys.items()),
                "absorbed": sorted([k, v] for k, v in absorbed.items()),
                **({"priced": note} if note else {}),
                "types": list(types),
                "loop_trips": loop_trips,
                **knobs(),
            }
            # written once its ops are (the parked ones after their last pass)
            waiting.append(((set(keys) | set(variants)) & queued, model_record))
            write_finished_models()
            stats["models"] += 1
        queue.drain()
    return stats


def _time_whole(
    priced: nx.MultiDiGraph, stored: nx.MultiDiGraph, cfg: MeasureConfig, gate: Any
) -> dict[str, Any]:
    """The timing fields of a whole model: the graph the partitioner prices (its ops of
    constants folded, its fused ops fused: what the op records add up to), else, when the
    runtime cannot run that, the model as stored (``timed`` says which, and why); and
    ``dram_us``, the memory reference read just before and just after it
    (:func:`_memory_read`)."""
    why = ""
    before = _memory_read(cfg, gate)
    for label, graph in (("priced", priced), ("stored", stored)):
        try:
            t = time_model(
                serialize_tflite(fill_constants(graph, seed=cfg.seed)),
                None,
                replace(cfg, max_time_s=cfg.model_max_time_s),
                seed=cfg.seed,
                samples=cfg.model_samples,
                gate=gate,
            )
        except Exception as exc:  # custom ops, ...: the ops are measured, the whole is not
            first = (str(exc).splitlines() or [""])[0][:200]
            why = why or f"{type(exc).__name__}: {first}"
            continue
        dram_us = round((before + _memory_read(cfg, gate)) / 2, 4)
        timed = label if label == "priced" else f"stored ({why})"
        return {**timing_fields(t), "timed": timed, "dram_us": dram_us}
    return {"latency_us": None, "untimed": why}


def _memory_read(cfg: MeasureConfig, gate: Any) -> float:
    """The memory reference's latency now, in us (its fastest of 4 samples on 2 instances):
    how fast the machine's memory is beside a whole model
    (:func:`~tacopt.cost_models.learned.measurement.speed.memory_index`). Timed apart from the
    model, so the model's own warm-up refills the caches it empties."""
    mcfg = replace(cfg, rounds=2, passes=1, retry_rounds=0)
    t = time_model(memory_reference(), None, mcfg, seed=cfg.seed, samples=4, gate=gate)
    return t.latency_us


def _recorded(
    out: Path, key_types: tuple[str, ...]
) -> tuple[set[str], set[str], set[str], set[str]]:
    """What the records file ``out`` (if it exists) already holds, so a run resumes it: the
    ``key`` and the label (``model``) of each record of ``key_types``, the models of its
    ``model`` records and its devices."""
    keys: set[str] = set()
    labels: set[str] = set()
    models: set[str] = set()
    devices: set[str] = set()
    for r in read_records(out) if out.exists() else ():
        if r.get("type") in key_types:
            keys.add(r["key"])
            labels.add(r.get("model", ""))
        elif r.get("type") == "model":
            models.add(r["model"])
        elif r.get("type") == "device":
            devices.add(r.get("device", ""))
    return keys, labels, models, devices


def measure_graphs(
    items: Iterable[tuple[str, Callable[[], nx.MultiDiGraph]]],
    out: str | Path,
    cfg: MeasureConfig | None = None,
    *,
    max_s: float | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    meter: Meter | None = None,
) -> dict[str, int]:
    """Measure single-op graphs (``(label, build)``, e.g. from
    :func:`tacopt.cost_models.learned.sampling.sweep.iter_samples`) into the JSONL file ``out``,
    resuming it: labels and configurations already recorded are skipped (a label is recorded as the
    record's ``model``). Stops submitting new ops half a pass gap before ``max_s`` seconds; at
    ``max_s`` the new ops still waiting get one pass and every op is written with the passes it
    had (re-run to go on). ``meter`` as in :func:`measure_models`.

    Returns
    -------
    dict
        Counts: ``measured``, ``reused`` (labels or configurations done), ``skipped``,
        ``left`` (not reached within ``max_s``).
    """
    cfg = MeasureConfig() if cfg is None else cfg
    out = Path(out)
    done_keys, done_labels, _, done_devices = _recorded(out, ("op", "skip"))
    todo = list(items)
    stats = {"measured": 0, "reused": 0, "skipped": 0, "left": 0}
    start = time.perf_counter()
    # new ops stop early enough for the parked ones' second pass (about half a gap of work)
    lead_s = cfg.pass_gap_s / 2 if cfg.passes > 1 else 0.0
    submit_s = None if max_s is None else max(max_s - lead_s, max_s / 2)
    gate, tracker = meter or Meter.start(cfg)
    device = ""

    def knobs() -> dict[str, Any]:
        return {**_run_knobs(cfg, gate, tracker), "device": device}

    with out.open("a") as f:
        device = _device(f, cfg, done_devices)
        queue = OpQueue(f, cfg, gate, tracker, knobs, stats)
        try:
            for i, (label, build) in enumerate(todo):
                if progress is not None:
                    progress(i + 1, len(todo), label)
                if label in done_labels:
                    stats["reused"] += 1
                    continue
                if submit_s is not None and time.perf_counter() - start > submit_s:
                    stats["left"] = len(todo) - i
                    break
                G = build()
                node = next(iter(G.nodes))
                feats = op_features(G, node, root=G)
                key = op_key(feats)
                base = {"key": key, "model": label, "graph": G.graph["name"], "op": node}
                if key in done_keys:
                    stats["reused"] += 1
                    continue
                done_keys.add(key)
                queue.submit(base, feats, serialize_tflite(G))
            queue.drain(None if max_s is None else start + max_s)
        except KeyboardInterrupt:
            queue.keep_timed()  # the ops timed once keep their samples; a resume skips them
            raise
    return stats


def _device(f: TextIO, cfg: MeasureConfig, done: set[str]) -> str:
    """The id of this run's device fingerprint, its ``device`` record written first unless the
    file holds it already."""
    fp = host_fingerprint(resolver=cfg.resolver, threads=cfg.threads)
    did = fingerprint_id(fp)
    if did not in done:
        write_record(f, device_record(fp))
        done.add(did)
    return did


def _run_knobs(cfg: MeasureConfig, gate: Gate, tracker: SpeedTracker) -> dict[str, Any]:
    return {
        **cfg.knobs(),
        "overhead_us": round(gate.overhead_us(), 4),
        "probe_us": round(gate.reference(), 4),
        "speed": tracker.speed(),
    }

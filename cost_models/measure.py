"""Measure op latencies on a real runtime (the ai-edge-litert interpreter).

Each op of each model (nested WHILE / IF bodies included) is cut into a single-op graph: the op,
its non-constant inputs as graph inputs, its constants filled with random values
(:func:`fill_constants`, seeded), written with :func:`fusion.writer.serialize_tflite` and timed
with ``ai_edge_litert.interpreter.Interpreter`` at a fixed thread count (default 1).
Identical configurations (same :func:`op_key`) are measured once. The whole model is timed too
(record type ``"model"``), with the op keys it is made of (WHILE bodies multiplied by their trip
count) so sums of op latencies can be checked against it.

How an op is timed (:func:`time_models`; chosen by measuring repeatability with
``benchmarks/check_repeatability.py``, see docs/cost-models.md): warm-up, then samples, each a
batch of back-to-back ``invoke()`` calls lasting >= 2 ms (per-invoke time = batch time / batch
size, which amortises the clock reads and the timing loop), taken in 3 rounds interleaved over
16 ops so one op's samples are spread over time; the latency is the *lowest* sample of the
calling thread's CPU time. Median and wall-clock figures are recorded next to it.

The Python ``invoke()`` call itself costs about a microsecond; it is measured once per run on a
one-element model (``overhead_us`` in every record); learned models predict the latency net of it.

Records (JSON lines, appended and flushed one by one, so a run can resume):

- ``{"type": "op", "key", "model", "graph", "op", "kind", "inputs", "outputs", "options",
  "flops", "bytes", "inference_type", "latency_us", "latency_median_us", "wall_us",
  "wall_median_us", "batch", "repeats", "threads", "method", "overhead_us"}``
- ``{"type": "skip", "key", "model", "op", "kind", "reason"}`` for ops that cannot run alone
- ``{"type": "model", "model", "latency_us", "ops": [[key, count], ...], ...}``
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import networkx as nx
import numpy as np

from cost_models.ops import inference_type, op_counts, trip_count
from fusion.errors import TacoptError
from fusion.ir import Buffer, Op, Tensor, make_graph, numpy_dtype, ops_of

#: Kinds that cannot run as a single op: control flow needs its bodies, the rest need state.
UNMEASURABLE = {
    "WHILE": "control flow (its body ops are measured one by one)",
    "IF": "control flow (its branch ops are measured one by one)",
    "CALL_ONCE": "initialises variables; no steady-state cost",
    "VAR_HANDLE": "resource variable",
    "READ_VARIABLE": "resource variable",
    "ASSIGN_VARIABLE": "resource variable",
}


class MeasureError(TacoptError):
    """A model or records file that cannot be measured / read."""


@dataclass(frozen=True, slots=True)
class MeasureConfig:
    """Knobs of a measurement run (the timing ones are written into every record).

    Each sample is a batch of back-to-back ``invoke()`` calls lasting at least ``sample_s``;
    an op gets ``samples`` samples taken in ``rounds`` interleaved rounds over ``chunk`` ops,
    fewer when they would take more than ``max_time_s`` (at least ``min_samples``). Its latency
    is the lowest sample of thread CPU time per invoke. Whole models get ``model_samples``.
    """

    threads: int = 1
    warmup: int = 3
    samples: int = 9
    min_samples: int = 3
    rounds: int = 3
    chunk: int = 16
    sample_s: float = 0.002
    max_time_s: float = 0.3
    model_samples: int = 7
    model_max_time_s: float = 2.0
    seed: int = 0

    def knobs(self) -> dict[str, Any]:
        """The timing knobs as written into records."""
        return {
            "threads": self.threads,
            "method": f"min-thread-cpu/{self.samples}x{self.sample_s * 1e3:g}ms/{self.rounds}r",
        }


# --------------------------------------------------------------------------------------------
# cutting ops out
# --------------------------------------------------------------------------------------------


def fill_constants(G: nx.MultiDiGraph, *, seed: int) -> nx.MultiDiGraph:
    """A copy of ``G`` whose dropped constants hold random values (uses fusion.rehydrate when
    available; otherwise small floats, full-range int8 / uint8, small int32)."""
    try:
        from fusion.rehydrate import rehydrate
    except ImportError:
        pass
    else:
        return rehydrate(G, seed=seed)
    rng = np.random.default_rng(seed)

    def fill(S: nx.MultiDiGraph) -> nx.MultiDiGraph:
        tensors = {}
        for name, t in S.graph["tensors"].items():
            if t.buffer is not None and t.buffer.is_placeholder:
                t = _replace_buffer(t, Buffer.from_bytes(_random_array(t, rng)))
            tensors[name] = t
        subs = {k: fill(v) for k, v in S.graph.get("subgraphs", {}).items()}
        return make_graph(
            S.graph["name"],
            tensors.values(),
            [op for _, op in ops_of(S)],
            S.graph["inputs"],
            S.graph["outputs"],
            model=S.graph.get("model"),
            subgraphs=subs or None,
        )

    return fill(G)


def _replace_buffer(t: Tensor, buf: Buffer) -> Tensor:
    from dataclasses import replace

    return replace(t, buffer=buf)


def _random_array(t: Tensor, rng: np.random.Generator) -> np.ndarray:
    dtype = numpy_dtype(t.dtype)
    n = max(t.buffer.nbytes // max(dtype.itemsize, 1), 1) if t.buffer else t.num_elements
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-0.1, 0.1, n).astype(dtype)
    if dtype in (np.int8, np.uint8):
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, n).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-64, 64, n).astype(dtype)
    return np.zeros(n, dtype)


def cut_op(G: nx.MultiDiGraph, node: str) -> nx.MultiDiGraph:
    """A graph holding only op ``node`` of ``G``: its non-constant inputs become graph inputs.

    >>> from fusion.ir import Op, Tensor, make_graph
    >>> ts = [Tensor(n, (2,), "float32") for n in "xyz"]
    >>> G = make_graph("g", ts, [Op("neg_0", "NEG", ("x",), ("y",)),
    ...                          Op("neg_1", "NEG", ("y",), ("z",))], ["x"], ["z"])
    >>> S = cut_op(G, "neg_1")
    >>> S.graph["inputs"], S.graph["outputs"], list(S)
    (('y',), ('z',), ['neg_1'])
    """
    op: Op = G.nodes[node]["op"]
    tensors = G.graph["tensors"]
    names = list(
        dict.fromkeys([*(t for t in op.inputs if t is not None), *op.outputs, *op.intermediates])
    )
    inputs = [
        t
        for t in dict.fromkeys(t for t in op.inputs if t is not None)
        if not tensors[t].is_constant and not tensors[t].is_variable
    ]
    return make_graph(f"{node}_alone", [tensors[t] for t in names], [op], inputs, op.outputs)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return hashlib.sha1(bytes(v)).hexdigest()[:12]
    if isinstance(v, (np.generic,)):
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def op_features(G: nx.MultiDiGraph, node: str, *, root: nx.MultiDiGraph) -> dict[str, Any]:
    """The features of op ``node`` that a learned model sees (and that identify its config)."""
    op: Op = G.nodes[node]["op"]
    tensors = G.graph["tensors"]

    def desc(name: str | None) -> list[Any] | None:
        if name is None:
            return None
        t = tensors[name]
        d: list[Any] = [list(t.shape), t.dtype, t.is_constant, t.is_quantized]
        if (
            t.is_constant
            and t.buffer is not None
            and not t.buffer.is_placeholder
            and t.num_elements <= 64
            and t.dtype in ("int32", "int64")
        ):
            d.append(np.asarray(t.data()).reshape(-1).tolist())  # shapes, perms, paddings
        return d

    counts = op_counts(G, node, root=root)
    return {
        "kind": op.kind,
        "version": op.version,
        "inputs": [desc(t) for t in op.inputs],
        "outputs": [desc(t) for t in op.outputs],
        "options": _jsonable(
            {
                k: v
                for k, v in op.options.items()
                if not (k.endswith("_subgraph") or k == "subgraph")
            }
        ),
        "flops": counts.flops,
        "bytes": counts.nbytes,
        "inference_type": inference_type(G, node),
    }


def op_key(features: Mapping[str, Any]) -> str:
    """Canonical identity of an op configuration (a hash of its features)."""
    blob = json.dumps(
        {k: features[k] for k in ("kind", "version", "inputs", "outputs", "options")},
        sort_keys=True,
    )
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Timing:
    """Per-``invoke()`` latency of one model: lowest and median sample, CPU and wall clock.

    ``cpu_us`` (the figure records call ``latency_us``) is the lowest sample of the calling
    thread's CPU time (``time.thread_time_ns``): with one interpreter thread the kernels run on
    the caller, so preemption by other processes is not counted, and the lowest of samples spread
    over time is the least disturbed by cache / memory-bandwidth contention.
    """

    cpu_us: float
    cpu_median_us: float
    wall_us: float
    wall_median_us: float
    batch: int
    samples: int


class _Timer:
    """An interpreter ready to invoke, its batch size chosen so a sample lasts ``sample_s``."""

    def __init__(
        self,
        model: bytes,
        inputs: Mapping[str, np.ndarray] | None,
        cfg: MeasureConfig,
        *,
        seed: int,
        samples: int,
    ) -> None:
        from ai_edge_litert.interpreter import Interpreter

        interp = Interpreter(model_content=model, num_threads=cfg.threads)
        for d in interp.get_input_details():
            if -1 in list(d.get("shape_signature", [])):
                interp.resize_tensor_input(d["index"], [max(int(x), 1) for x in d["shape"]])
        interp.allocate_tensors()
        rng = np.random.default_rng(seed)
        for d in interp.get_input_details():
            value = None if inputs is None else inputs.get(d["name"])
            if value is None:
                value = _random_input(d, rng)
            interp.set_tensor(d["index"], np.asarray(value, dtype=d["dtype"]).reshape(d["shape"]))
        interp.invoke()  # first run: lazy allocations, delegate preparation
        for _ in range(cfg.warmup):
            interp.invoke()
        n = 1
        while True:  # calibrate: batches of 1, 4, 16, ... invokes until one lasts sample_s / 4
            t0 = time.thread_time()  # CPU time: a preempted calibration does not shrink the batch
            for _ in range(n):
                interp.invoke()
            elapsed = time.thread_time() - t0
            if elapsed >= cfg.sample_s / 4 or n >= 100_000:
                break
            n *= 4
        per_s = max(elapsed / n, 1e-7)
        self.invoke = interp.invoke
        self.batch = max(1, min(int(math.ceil(cfg.sample_s / per_s)), 100_000))
        budget = max(int(cfg.max_time_s / (per_s * self.batch)), cfg.min_samples)
        self.target = max(min(samples, budget), 1)
        self.cpu: list[float] = []
        self.wall: list[float] = []

    def sample(self, k: int) -> None:
        invoke, n = self.invoke, self.batch
        for _ in range(min(k, self.target - len(self.cpu))):
            w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            for _ in range(n):
                invoke()
            c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
            self.cpu.append((c1 - c0) / 1e3 / n)
            self.wall.append((w1 - w0) / 1e3 / n)

    def timing(self) -> Timing:
        return Timing(
            min(self.cpu),
            statistics.median(self.cpu),
            min(self.wall),
            statistics.median(self.wall),
            self.batch,
            len(self.cpu),
        )


def time_models(
    models: Sequence[bytes],
    cfg: MeasureConfig,
    *,
    seed: int = 0,
    samples: int | None = None,
) -> list[Timing | Exception]:
    """Time several models in interleaved rounds (``cfg.rounds``), so that the samples of each
    are spread over time and a burst of load elsewhere on the machine hits few of them.

    Each sample is a batch of back-to-back ``invoke()`` calls lasting at least ``cfg.sample_s``
    (per-invoke time = batch time / batch size); a model gets ``samples`` samples (default
    ``cfg.samples``), fewer when they would exceed ``cfg.max_time_s`` (never below
    ``cfg.min_samples``). A model the runtime refuses yields the exception instead of a timing.

    >>> from fusion.writer import serialize_tflite
    >>> t = time_models([serialize_tflite(_neg_graph())], MeasureConfig(samples=3))[0]
    >>> 0 < t.cpu_us <= t.cpu_median_us and t.samples == 3
    True
    """
    want = cfg.samples if samples is None else samples
    timers: list[_Timer | Exception] = []
    for m in models:
        try:
            timers.append(_Timer(m, None, cfg, seed=seed, samples=want))
        except Exception as exc:  # the runtime refused this model
            timers.append(exc)
    rounds = max(cfg.rounds, 1)
    for r in range(rounds):
        for t in timers:
            if isinstance(t, _Timer):
                t.sample(math.ceil(t.target * (r + 1) / rounds) - len(t.cpu))
    return [t.timing() if isinstance(t, _Timer) else t for t in timers]


def time_model(
    model: bytes,
    inputs: Mapping[str, np.ndarray] | None,
    cfg: MeasureConfig,
    *,
    seed: int = 0,
    samples: int | None = None,
) -> Timing:
    """Time one model (see :func:`time_models`), with given ``inputs`` (else random ones)."""
    timer = _Timer(
        model, inputs, cfg, seed=seed, samples=cfg.samples if samples is None else samples
    )
    timer.sample(timer.target)
    return timer.timing()


def _random_input(d: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
    shape, dtype = tuple(int(x) for x in d["shape"]), np.dtype(d["dtype"])
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-1, 1, shape).astype(dtype)
    if dtype in (np.int8, np.uint8) and d.get("quantization", (0.0, 0))[0]:
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    return np.zeros(shape, dtype)  # indices, counters, masks: zero is always in range


def _neg_graph() -> nx.MultiDiGraph:
    ts = [Tensor("x", (1,), "float32"), Tensor("y", (1,), "float32")]
    return make_graph("empty", ts, [Op("neg_0", "NEG", ("x",), ("y",))], ["x"], ["y"])


def invoke_overhead_us(cfg: MeasureConfig) -> float:
    """Latency of ``invoke()`` on a one-element NEG model: the fixed cost of a Python call."""
    from fusion.writer import serialize_tflite

    return time_model(serialize_tflite(_neg_graph()), None, cfg, samples=3 * cfg.samples).cpu_us


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a JSONL records file (a torn last line, from a killed run, is ignored)."""
    p = Path(path)
    if not p.is_file():
        raise MeasureError(f"records file '{p}' does not exist")
    out = []
    lines = p.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise MeasureError(f"records file '{p}' line {i + 1} is not JSON") from None
    return out


def model_ops(G: nx.MultiDiGraph) -> Iterator[tuple[nx.MultiDiGraph, str, float]]:
    """(graph, op, times it runs per inference) for every op of the model, loops unrolled."""

    def walk(S: nx.MultiDiGraph, mult: float) -> Iterator[tuple[nx.MultiDiGraph, str, float]]:
        subs = G.graph.get("subgraphs", {})
        for n, op in ops_of(S):
            yield S, n, mult
            if op.kind == "WHILE":
                trips, _ = trip_count(S, n, root=G)
                yield from walk(subs[op.options["body_subgraph"]], mult * trips)
                yield from walk(subs[op.options["cond_subgraph"]], mult * (trips + 1))
            elif op.kind == "IF":
                branch = op.options.get("then_subgraph")
                if branch in subs:  # the first branch stands for the taken one
                    yield from walk(subs[branch], mult)

    yield from walk(G, 1.0)


def measure_models(
    paths: Iterable[str | Path],
    out: str | Path,
    cfg: MeasureConfig = MeasureConfig(),
    *,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, int]:
    """Measure every op of every model into the JSONL file ``out`` (resuming it if it exists).

    Parameters
    ----------
    paths : .tflite files.
    out : records file; existing records are kept and their ops / models are not re-measured.
    cfg : timing knobs.
    progress : called as ``progress(done, total, label)`` after each op.

    Returns
    -------
    dict
        Counts: ``measured``, ``reused`` (already measured configurations), ``skipped``,
        ``models``.
    """
    from fusion.reader import read_tflite
    from fusion.writer import serialize_tflite

    out = Path(out)
    done_keys: set[str] = set()
    done_models: set[str] = set()
    if out.exists():
        for r in read_records(out):
            if r.get("type") in ("op", "skip"):
                done_keys.add(r["key"])
            elif r.get("type") == "model":
                done_models.add(r["model"])
    graphs = []
    for p in paths:
        p = Path(p)
        if p.stem not in done_models:
            graphs.append((p, read_tflite(p)))
    total = sum(sum(1 for _ in model_ops(G)) for _, G in graphs)
    stats = {"measured": 0, "reused": 0, "skipped": 0, "models": 0}
    knobs = {**cfg.knobs(), "overhead_us": round(invoke_overhead_us(cfg), 4)}
    count = 0
    with out.open("a") as f:
        for path, G in graphs:
            keys: dict[str, float] = {}
            loop_trips = 0.0
            pending: list[tuple[dict[str, Any], dict[str, Any], bytes]] = []
            for S, node, mult in model_ops(G):
                count += 1
                if S.nodes[node]["op"].kind == "WHILE":
                    loop_trips += mult * trip_count(S, node, root=G)[0]
                feats = op_features(S, node, root=G)
                key = op_key(feats)
                keys[key] = keys.get(key, 0.0) + mult
                if progress is not None:
                    progress(count, total, f"{path.stem}:{node}")
                if key in done_keys:
                    stats["reused"] += 1
                    continue
                done_keys.add(key)
                base = {"key": key, "model": path.stem, "graph": S.graph["name"], "op": node}
                reason = _unmeasurable(S, node)
                single = b""
                if reason is None:
                    try:
                        single = serialize_tflite(fill_constants(cut_op(S, node), seed=cfg.seed))
                    except Exception as exc:  # e.g. an op the writer cannot emit alone
                        reason = f"cut: {type(exc).__name__}: {str(exc)[:160]}"
                if reason is not None:
                    _write(f, {"type": "skip", **base, "kind": feats["kind"], "reason": reason})
                    stats["skipped"] += 1
                    continue
                pending.append((base, feats, single))
                if len(pending) >= cfg.chunk:
                    _measure_chunk(f, pending, cfg, knobs, stats)
                    pending = []
            _measure_chunk(f, pending, cfg, knobs, stats)
            whole = serialize_tflite(fill_constants(G, seed=cfg.seed))
            t = time_model(
                whole,
                None,
                MeasureConfig(
                    threads=cfg.threads,
                    warmup=cfg.warmup,
                    sample_s=cfg.sample_s,
                    min_samples=cfg.min_samples,
                    max_time_s=cfg.model_max_time_s,
                ),
                seed=cfg.seed,
                samples=cfg.model_samples,
            )
            _write(
                f,
                {
                    "type": "model",
                    "model": path.stem,
                    **_timing_fields(t),
                    "ops": sorted([k, v] for k, v in keys.items()),
                    "loop_trips": loop_trips,
                    **knobs,
                },
            )
            stats["models"] += 1
    return stats


def _measure_chunk(
    f: TextIO,
    pending: Sequence[tuple[dict[str, Any], dict[str, Any], bytes]],
    cfg: MeasureConfig,
    knobs: Mapping[str, Any],
    stats: dict[str, int],
) -> None:
    timings = time_models([m for _, _, m in pending], cfg, seed=cfg.seed)
    for (base, feats, _), t in zip(pending, timings, strict=True):
        if isinstance(t, Exception):
            reason = f"runtime: {type(t).__name__}: {(str(t).splitlines() or [''])[0][:160]}"
            _write(f, {"type": "skip", **base, "kind": feats["kind"], "reason": reason})
            stats["skipped"] += 1
        else:
            _write(f, {"type": "op", **base, **feats, **_timing_fields(t), **knobs})
            stats["measured"] += 1


def _timing_fields(t: Timing) -> dict[str, Any]:
    return {
        "latency_us": round(t.cpu_us, 4),
        "latency_median_us": round(t.cpu_median_us, 4),
        "wall_us": round(t.wall_us, 4),
        "wall_median_us": round(t.wall_median_us, 4),
        "batch": t.batch,
        "repeats": t.samples,
    }


def _unmeasurable(S: nx.MultiDiGraph, node: str) -> str | None:
    op: Op = S.nodes[node]["op"]
    if op.kind in UNMEASURABLE:
        return UNMEASURABLE[op.kind]
    tensors = S.graph["tensors"]
    if any(
        tensors[t].dtype in ("resource", "variant", "string")
        for t in [*op.outputs, *(t for t in op.inputs if t is not None)]
    ):
        return "resource / variant / string tensors"
    return None


def _write(f: TextIO, record: Mapping[str, Any]) -> None:
    f.write(json.dumps(record, sort_keys=True) + "\n")
    f.flush()

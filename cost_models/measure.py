"""Measure op latencies on a real runtime (the ai-edge-litert interpreter).

Each op of each model (nested WHILE / IF bodies included) is cut into a single-op graph: the op,
its non-constant inputs as graph inputs, its constants filled with random values
(:func:`fill_constants`), written with :func:`fusion.writer.serialize_tflite` and timed with
``ai_edge_litert.interpreter.Interpreter`` at a fixed thread count: warm-up runs, then repeats
until ``min_time_s`` has passed (at least ``min_repeats``, at most ``max_repeats``), median.
Identical configurations (same :func:`op_key`) are measured once. The whole model is timed too
(record type ``"model"``), with the op keys it is made of (WHILE bodies multiplied by their trip
count) so sums of op latencies can be checked against it.

The Python ``invoke()`` call itself costs a few microseconds; it is measured once per run on an
empty model (``overhead_us`` in every record) and learned models subtract it.

Records (JSON lines, appended and flushed one by one, so a run can resume):

- ``{"type": "op", "key", "model", "graph", "op", "kind", "inputs", "outputs", "options",
  "flops", "bytes", "inference_type", "latency_us", "repeats", "threads", "overhead_us"}``
- ``{"type": "skip", "key", "model", "op", "kind", "reason"}`` for ops that cannot run alone
- ``{"type": "model", "model", "latency_us", "ops": [[key, count], ...], ...}``
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
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
    """Knobs of a measurement run (all written into every record)."""

    threads: int = 1
    warmup: int = 2
    min_repeats: int = 5
    max_repeats: int = 200
    min_time_s: float = 0.01
    model_min_time_s: float = 0.3
    seed: int = 0


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


def time_model(
    model: bytes,
    inputs: Mapping[str, np.ndarray] | None,
    cfg: MeasureConfig,
    *,
    seed: int = 0,
    min_time_s: float | None = None,
) -> tuple[float, float, int]:
    """Median latency of ``invoke()`` on ``model``: ``(cpu_us, wall_us, runs)``.

    ``cpu_us`` is the calling thread's CPU time (``time.thread_time_ns``): with one interpreter
    thread the kernels run on the caller, so this excludes time the thread spent preempted by
    other processes, which dominates wall time on a loaded 2-core machine. ``wall_us`` is
    recorded alongside.
    """
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
    for _ in range(cfg.warmup):
        interp.invoke()
    budget = cfg.min_time_s if min_time_s is None else min_time_s
    cpu: list[float] = []
    wall: list[float] = []
    start = time.perf_counter()
    while len(cpu) < cfg.max_repeats and (
        len(cpu) < cfg.min_repeats or time.perf_counter() - start < budget
    ):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        interp.invoke()
        c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
        cpu.append((c1 - c0) / 1e3)
        wall.append((w1 - w0) / 1e3)
    return statistics.median(cpu), statistics.median(wall), len(cpu)


def _random_input(d: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
    shape, dtype = tuple(int(x) for x in d["shape"]), np.dtype(d["dtype"])
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-1, 1, shape).astype(dtype)
    if dtype in (np.int8, np.uint8) and d.get("quantization", (0.0, 0))[0]:
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    return np.zeros(shape, dtype)  # indices, counters, masks: zero is always in range


def invoke_overhead_us(cfg: MeasureConfig) -> float:
    """Latency of ``invoke()`` on a one-element NEG model: the fixed cost of a Python call."""
    from fusion.writer import serialize_tflite

    ts = [Tensor("x", (1,), "float32"), Tensor("y", (1,), "float32")]
    G = make_graph("empty", ts, [Op("neg_0", "NEG", ("x",), ("y",))], ["x"], ["y"])
    return time_model(serialize_tflite(G), None, cfg, min_time_s=0.1)[0]


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
    overhead = round(invoke_overhead_us(cfg), 3)
    knobs = {"threads": cfg.threads, "overhead_us": overhead}
    count = 0
    with out.open("a") as f:
        for path, G in graphs:
            keys: dict[str, float] = {}
            loop_trips = 0.0
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
                if reason is None:
                    try:
                        single = fill_constants(cut_op(S, node), seed=cfg.seed)
                        latency, wall, reps = time_model(
                            serialize_tflite(single), None, cfg, seed=cfg.seed
                        )
                    except Exception as exc:  # the runtime refused this op alone
                        reason = f"runtime: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
                if reason is not None:
                    _write(f, {"type": "skip", **base, "kind": feats["kind"], "reason": reason})
                    stats["skipped"] += 1
                    continue
                _write(
                    f,
                    {
                        "type": "op",
                        **base,
                        **feats,
                        "latency_us": round(latency, 3),
                        "wall_us": round(wall, 3),
                        "repeats": reps,
                        **knobs,
                    },
                )
                stats["measured"] += 1
            whole = serialize_tflite(fill_constants(G, seed=cfg.seed))
            latency, wall, reps = time_model(
                whole, None, cfg, seed=cfg.seed, min_time_s=cfg.model_min_time_s
            )
            _write(
                f,
                {
                    "type": "model",
                    "model": path.stem,
                    "latency_us": round(latency, 3),
                    "wall_us": round(wall, 3),
                    "repeats": reps,
                    "ops": sorted([k, v] for k, v in keys.items()),
                    "loop_trips": loop_trips,
                    **knobs,
                },
            )
            stats["models"] += 1
    return stats


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

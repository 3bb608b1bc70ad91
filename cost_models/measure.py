"""Measure op latencies on a real runtime (the ai-edge-litert interpreter).

Each op of each model (nested WHILE / IF bodies included) is cut into a single-op graph: the op,
its non-constant inputs as graph inputs, its constants filled with random values
(:func:`fill_constants`, seeded), written with :func:`tacopt.fusion.writer.serialize_tflite` and
timed with ``ai_edge_litert.interpreter.Interpreter`` at a fixed thread count (default 1).
Identical configurations (same :func:`op_key`) are measured once. The whole model is timed too
(record type ``"model"``), with the op keys it is made of (WHILE bodies multiplied by their trip
count) so sums of op latencies can be checked against it.

How an op is timed (:func:`time_models`; chosen by measuring repeatability across runs with
``benchmarks/check_repeatability.py``, see docs/cost-models.md): warm-up, then samples, each a
batch of back-to-back ``invoke()`` calls lasting >= 2 ms (per-invoke time = batch time / batch
size, which amortises the clock reads and the timing loop), taken in 3 rounds interleaved over
16 ops so one op's samples are spread over time, each round on a new interpreter instance
(a fresh copy of the model: where tensors and constants land in memory changes some ops'
latency by up to 40 %). Every sample is bracketed by two reads of a probe (:class:`Gate`:
0.5 ms of invokes of a one-element model); it counts only when both show the machine in its
fast state (<= 1.15 x the probe's 5th percentile): on a virtual machine like ours the CPU has
slow episodes, milliseconds to seconds long, in which everything, thread CPU time included,
runs 1.1-1.8x slower. An instance short of quiet samples gets more, each after waiting for the
machine to be quiet. The latency is the median over instances of each instance's *lowest
quiet* sample of the calling thread's CPU time. Median and wall-clock figures are recorded
next to it.

``latency_us`` is the latency of one ``invoke()`` of the single-op model, the fixed cost of the
Python call included. That cost (``overhead_us`` in every record) is the median quiet probe
read, re-calibrated all through the run; learned models predict the latency net of it.

Records (JSON lines, appended and flushed one by one, so a run can resume):

- ``{"type": "op", "key", "model", "graph", "op", "kind", "inputs", "outputs", "options",
  "flops", "bytes", "inference_type", "latency_us", "latency_median_us", "wall_us",
  "wall_median_us", "batch", "repeats", "rejected", "quiet", "threads", "method",
  "overhead_us"}``: ``repeats`` samples counted, ``rejected`` dropped as not quiet, ``quiet``
  False when no sample was (then every sample counts). Records of earlier versions have no
  ``rejected`` / ``quiet`` (ungated samples) and read the same.
- ``{"type": "skip", "key", "model", "op", "kind", "reason"}`` for ops that cannot run alone
- ``{"type": "model", "model", "latency_us", "ops": [[key, count], ...], "variants": [...],
  ...}``

With ``types`` (``tacopt measure --types float32,int8``) every op is also rebuilt in the other
inference types (:func:`retype_op`) and measured; those records carry ``retyped_from`` (the op's
own type) and are listed under the model's ``variants``, never its ``ops``.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import networkx as nx
import numpy as np

from tacopt.cost_models.ops import inference_type, op_counts, trip_count
from tacopt.fusion.errors import TacoptError
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph, numpy_dtype, ops_of

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
    fewer when they would take more than ``max_time_s`` (at least ``min_samples``), each round on
    a new interpreter instance. Each sample is bracketed by reads of the probe (:class:`Gate`: a
    batch of ``probe_s`` of a one-element model, ``probe_reads`` reads to start); it is *quiet*
    when both reads are <= ``gate`` x the fast-state probe time. An instance short of quiet
    samples gets up to ``retry_rounds`` more passes, each extra sample after waiting up to
    ``wait_s`` for the machine to be quiet, at most ``max_wait_s`` of waiting per chunk and
    ``run_wait_s`` per :class:`Gate` (per run). Its latency is the median over instances of the
    lowest quiet sample of thread CPU time per invoke. Whole models get ``model_samples``.
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
    probe_s: float = 0.0005
    probe_reads: int = 40
    gate: float = 1.15
    retry_rounds: int = 3
    wait_s: float = 1.0
    max_wait_s: float = 10.0
    run_wait_s: float = 600.0
    seed: int = 0

    def knobs(self) -> dict[str, Any]:
        """The timing knobs as written into records."""
        return {
            "threads": self.threads,
            "method": f"median-instance-min-quiet-thread-cpu/{self.samples}x"
            f"{self.sample_s * 1e3:g}ms/{self.rounds}r/gate{self.gate:g}",
        }


# --------------------------------------------------------------------------------------------
# cutting ops out
# --------------------------------------------------------------------------------------------


def fill_constants(G: nx.MultiDiGraph, *, seed: int) -> nx.MultiDiGraph:
    """A copy of ``G`` whose dropped constants hold random values (uses tacopt.fusion.rehydrate when
    available; otherwise small floats, full-range int8 / uint8, small int32)."""
    try:
        from tacopt.fusion.rehydrate import rehydrate
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

    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
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
            and not t.is_quantized  # biases: their values do not change the latency
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
    """Canonical identity of an op configuration: a hash of its kind, operands (shapes, dtypes,
    constness, quantized or not, small shape-like constants) and options. Not the op version
    (the converter derives it from the same operands) nor quantization scales."""
    blob = json.dumps(
        {k: features[k] for k in ("kind", "inputs", "outputs", "options")},
        sort_keys=True,
    )
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# the op in another inference type
# --------------------------------------------------------------------------------------------

#: ``--types`` names and the inference types they stand for.
TYPE_NAMES = {"float32": "FLOAT", "int8": "QUANTIZED_INT8"}

#: Ops that are not retyped: their operand types are what they are.
NOT_RETYPED = {
    "QUANTIZE": "type conversion: its operand types define the op",
    "DEQUANTIZE": "type conversion: its operand types define the op",
}

#: int8 needs ops TFLite only runs with calibrated int16 intermediates (not synthesised here).
NO_INT8 = {
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "int8 LSTM needs calibrated int16 gate intermediates",
    "BIDIRECTIONAL_SEQUENCE_LSTM": "int8 LSTM needs calibrated int16 gate intermediates",
    "LSTM": "int8 LSTM needs calibrated int16 gate intermediates",
}

#: (weights input, per-channel axis, bias input) of the ops TFLite quantizes per channel.
_WEIGHTED = {
    "CONV_2D": (1, 0, 2),
    "FULLY_CONNECTED": (1, 0, 2),
    "DEPTHWISE_CONV_2D": (1, 3, 2),
    "TRANSPOSE_CONV": (1, 0, 3),
}

#: Ops whose int8 kernels want one quantization on every activation (data movement, pooling,
#: min / max): the converter gives their inputs and outputs the same scale and zero point.
_SAME_QUANT = frozenset(
    "MAX_POOL_2D AVERAGE_POOL_2D RESHAPE SQUEEZE EXPAND_DIMS TRANSPOSE CONCATENATION PAD PADV2 "
    "MIRROR_PAD SLICE STRIDED_SLICE GATHER GATHER_ND SPLIT SPLIT_V UNPACK PACK DEPTH_TO_SPACE "
    "SPACE_TO_DEPTH BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR "
    "REVERSE_V2 MAXIMUM MINIMUM TILE BROADCAST_TO REDUCE_MAX REDUCE_MIN SELECT SELECT_V2 "
    "EMBEDDING_LOOKUP".split()
)

#: Output quantization TFLite's int8 kernels require (scale, zero point).
_FIXED_OUTPUT = {
    "LOGISTIC": (1 / 256, -128),
    "SOFTMAX": (1 / 256, -128),
    "TANH": (1 / 128, 0),
    "LOG_SOFTMAX": (16 / 256, 127),
}


#: int8 kernels that reject inputs below zero: their inputs get zero point -128.
_POSITIVE_INPUT = frozenset({"RSQRT", "SQRT", "LOG"})


class RetypeError(MeasureError):
    """An op that has no counterpart in the requested inference type (the reason says why)."""


def retype_op(S: nx.MultiDiGraph, inference: str, *, seed: int = 0) -> nx.MultiDiGraph:
    """The single-op graph ``S`` (from :func:`cut_op`, constants filled) as the same op in
    another inference type.

    ``"QUANTIZED_INT8"``: full-integer quantization as TFLite's converter does it: float
    activations become int8 with a plausible per-tensor scale and zero point (seeded; one shared
    quantization for data-movement / pooling ops; the fixed output quantization of LOGISTIC,
    SOFTMAX, TANH, LOG_SOFTMAX), weights of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED /
    TRANSPOSE_CONV symmetric int8 per output channel, their bias int32 with scale input scale x
    weight scale, other float constants int8 per tensor. ``"FLOAT"``: every quantized tensor is
    dequantized to float32 (constants keep their real values). Integer tensors (shapes, indices)
    are left alone.

    Raises
    ------
    RetypeError
        For ops without a counterpart (type conversions; int8 LSTMs), or when nothing changes.

    Examples
    --------
    >>> S = fill_constants(cut_op(_fc_graph(), "fc_0"), seed=0)
    >>> Q = retype_op(S, "QUANTIZED_INT8")
    >>> [(t.dtype, len(t.quantization.scale)) for t in Q.graph["tensors"].values()]
    [('int8', 1), ('int8', 4), ('int32', 4), ('int8', 1)]
    >>> inference_type(Q, "fc_0"), inference_type(retype_op(Q, "FLOAT"), "fc_0")
    ('QUANTIZED_INT8', 'FLOAT')
    """
    (node, op), *rest = ops_of(S)
    if rest:
        raise MeasureError(f"retype_op: graph '{S.graph['name']}' holds more than one op")
    if op.kind in NOT_RETYPED:
        raise RetypeError(NOT_RETYPED[op.kind])
    if inference == "QUANTIZED_INT8":
        if op.kind in NO_INT8:
            raise RetypeError(NO_INT8[op.kind])
        tensors = _quantized_tensors(S, op, seed=seed)
        new_op = op
    elif inference == "FLOAT":
        tensors = {n: _dequantized(t) for n, t in S.graph["tensors"].items()}
        new_op = replace(op, intermediates=())  # float kernels keep no calibrated intermediates
    else:
        raise RetypeError(f"no synthesised {inference} variant")
    if all(tensors[n] == t for n, t in S.graph["tensors"].items()):
        raise RetypeError("no float or quantized operand: the same op in every type")
    keep = [n for n in S.graph["tensors"] if n not in op.intermediates or new_op.intermediates]
    return make_graph(
        S.graph["name"], [tensors[n] for n in keep], [new_op], S.graph["inputs"], S.graph["outputs"]
    )


def _quantized_tensors(S: nx.MultiDiGraph, op: Op, *, seed: int) -> dict[str, Tensor]:
    tensors: dict[str, Tensor] = S.graph["tensors"]
    rng = np.random.default_rng(seed)
    acts = [
        n
        for n in dict.fromkeys([*(t for t in op.inputs if t), *op.outputs])
        if tensors[n].dtype == "float32" and not tensors[n].is_constant
    ]
    # activations: scales 2^-9 .. 2^-3, zero points -128 .. 32 (what calibrated models show)
    quant = {
        n: Quantization((float(2.0 ** rng.uniform(-9, -3)),), (int(rng.integers(-128, 33)),))
        for n in acts
    }
    if op.kind in _SAME_QUANT and acts:
        quant = {n: quant[acts[0]] for n in acts}
    if op.kind in ("RELU", "RELU6"):  # the converter gives a ReLU's output zero point -128
        quant.update({n: Quantization(quant[n].scale, (-128,)) for n in op.outputs if n in quant})
    if op.kind == "BATCH_MATMUL" and len(op.inputs) > 1 and op.inputs[1] in quant:
        rhs = op.inputs[1]  # XNNPACK runs int8 BATCH_MATMUL only with a symmetric right side
        quant[rhs] = Quantization(quant[rhs].scale, (0,))
    if op.kind in _POSITIVE_INPUT:  # random inputs must stay in the kernel's domain
        quant.update({n: Quantization(quant[n].scale, (-128,)) for n in op.inputs if n in quant})
    if op.kind in _FIXED_OUTPUT:
        fixed = Quantization((_FIXED_OUTPUT[op.kind][0],), (_FIXED_OUTPUT[op.kind][1],))
        quant.update({n: fixed for n in op.outputs if n in quant})
    out = {n: replace(tensors[n], dtype="int8", quantization=q) for n, q in quant.items()}
    w_slot, axis, b_slot = _WEIGHTED.get(op.kind, (-1, 0, -1))
    w_scale: np.ndarray | None = None
    for slot, n in enumerate(op.inputs):
        if n is None or n in out:
            continue
        t = tensors[n]
        if t.dtype != "float32" or not t.is_constant:
            continue
        x = _finite(np.asarray(t.data(), dtype=np.float64))  # masks may hold -inf
        if slot == w_slot and x.ndim > axis:
            moved = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
            w_scale = np.maximum(np.abs(moved).max(axis=1), 1e-8) / 127
            shape = [1] * x.ndim
            shape[axis] = -1
            q = np.clip(np.round(x / w_scale.reshape(shape)), -127, 127).astype(np.int8)
            qp = Quantization(tuple(w_scale.tolist()), (0,) * len(w_scale), axis=axis)
            out[n] = _with_data(t, q, "int8", qp)
        elif op.kind == "PADV2" and slot == 2 and op.outputs[0] in out:
            qo = out[op.outputs[0]].quantization  # the pad value shares the output's quantization
            assert qo is not None
            q = np.clip(np.round(x / qo.scale[0]) + qo.zero_point[0], -128, 127).astype(np.int8)
            out[n] = _with_data(t, q, "int8", qo)
        elif slot != b_slot:
            c_scale = max(float(np.abs(x).max(initial=0.0)), 1e-8) / 127
            q = np.clip(np.round(x / c_scale), -127, 127).astype(np.int8)
            out[n] = _with_data(t, q, "int8", Quantization((c_scale,), (0,)))
    bias = op.inputs[b_slot] if 0 <= b_slot < len(op.inputs) else None
    if bias is not None and w_scale is not None:
        t = tensors[bias]
        if t.dtype == "float32" and t.is_constant:
            x_q = out.get(op.inputs[2 if op.kind == "TRANSPOSE_CONV" else 0] or "")
            in_scale = x_q.quantization.scale[0] if x_q and x_q.quantization else 1.0
            b_scale = np.broadcast_to(in_scale * w_scale, t.shape or (1,))
            q = np.round(np.asarray(t.data(), np.float64) / b_scale).astype(np.int32)
            qp = Quantization(tuple(b_scale.tolist()), (0,) * b_scale.size)
            out[bias] = _with_data(t, q, "int32", qp)
    return {n: out.get(n, t) for n, t in tensors.items()}


def _finite(x: np.ndarray) -> np.ndarray:
    ok = x[np.isfinite(x)]
    lo, hi = (float(ok.min()), float(ok.max())) if ok.size else (0.0, 0.0)
    return np.nan_to_num(x, nan=0.0, posinf=hi, neginf=lo)


def _dequantized(t: Tensor) -> Tensor:
    if not t.is_quantized or t.dtype not in ("int8", "uint8", "int16", "int32"):
        return t
    if not t.is_constant:
        return replace(t, dtype="float32", quantization=None)
    q = t.quantization
    assert q is not None
    x = np.asarray(t.data(), dtype=np.float64)
    shape = [1] * x.ndim
    if q.per_channel and x.ndim:
        shape[q.axis] = -1
    scale = np.asarray(q.scale).reshape(shape)
    zp = np.asarray(q.zero_point).reshape(shape)
    return _with_data(t, ((x - zp) * scale).astype(np.float32), "float32", None)


def _with_data(t: Tensor, x: np.ndarray, dtype: str, q: Quantization | None) -> Tensor:
    return replace(t, dtype=dtype, quantization=q, buffer=Buffer.from_bytes(x.tobytes()))


def _fc_graph() -> nx.MultiDiGraph:
    w = Tensor("w", (4, 8), "float32", buffer=Buffer.placeholder(128))
    b = Tensor("b", (4,), "float32", buffer=Buffer.placeholder(16))
    ts = [Tensor("x", (1, 8), "float32"), w, b, Tensor("y", (1, 4), "float32")]
    return make_graph(
        "g", ts, [Op("fc_0", "FULLY_CONNECTED", ("x", "w", "b"), ("y",))], ["x"], ["y"]
    )


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Timing:
    """Per-``invoke()`` latency of one model, CPU and wall clock.

    ``cpu_us`` (the figure records call ``latency_us``) is taken on the calling thread's CPU
    time (``time.thread_time_ns``: with one interpreter thread the kernels run on the caller, so
    preemption by other processes is not counted) over *quiet* samples only (the probe read just
    before and just after shows the machine in its fast state, see :class:`Gate`): the lowest
    quiet sample of each interpreter instance (the least disturbed by cache / memory-bandwidth
    contention), then the median over the ``instances`` (memory placement differs between
    them). ``cpu_median_us`` is the median quiet sample. The statistics are over ``samples``
    samples; ``rejected`` were dropped as not quiet. When no sample was quiet every sample counts
    and ``quiet`` is False.
    """

    cpu_us: float
    cpu_median_us: float
    wall_us: float
    wall_median_us: float
    batch: int
    samples: int
    rejected: int = 0
    quiet: bool = True
    instances: int = 1


class Gate:
    """The machine's speed, read by a probe between samples, and the invoke overhead.

    On this (virtual, 2-core) machine the CPU alternates between a fast state and slow episodes
    of milliseconds to seconds in which *everything* runs 1.1-1.8x slower, thread CPU time
    included (not preemption; presumably contention on the host). A single-op timing taken in a
    slow episode is wrong whatever the statistic when the episode covers all its samples. The
    probe is a one-element NEG model invoked in a batch of ``cfg.probe_s``; its per-invoke CPU
    time is the fixed cost of a Python ``invoke()`` call. Every sample of every op is bracketed
    by two probe reads; the sample is *quiet* when both are <= ``cfg.gate`` x the reference (the
    5th percentile of every probe read so far). :meth:`overhead_us` (the invoke overhead the records
    carry) is the median of the quiet probe reads: re-calibrated all through the run, not once.

    >>> g = Gate(MeasureConfig(probe_reads=5))
    >>> 0 < g.overhead_us() and 0 < g.reference() and g.is_quiet(g.reference())
    True
    """

    def __init__(self, cfg: MeasureConfig) -> None:
        from tacopt.fusion.writer import serialize_tflite

        self.cfg = cfg
        probe_cfg = replace(cfg, sample_s=cfg.probe_s)
        self._probe = _Timer(serialize_tflite(_neg_graph()), None, probe_cfg, seed=0, samples=1)
        self.reads: list[float] = []
        self._ref = math.inf
        self._ref_at = 0
        self.waited_s = 0.0  # time spent in wait(), against cfg.run_wait_s
        self.last = math.inf  # the latest probe read
        for _ in range(max(cfg.probe_reads, 1)):
            self.read()

    def read(self) -> float:
        """One probe read: per-invoke thread CPU time (us) of a batch of the probe model."""
        invoke, n = self._probe.invoke, self._probe.batch
        c0 = time.thread_time_ns()
        for _ in range(n):
            invoke()
        v = (time.thread_time_ns() - c0) / 1e3 / n
        self.reads.append(v)
        self.last = v
        return v

    def reference(self) -> float:
        """The fast state's probe time: 5th percentile of the reads so far (refreshed as they
        grow by 5 %)."""
        if len(self.reads) > self._ref_at * 1.05:
            self._ref = float(np.percentile(self.reads, 5))
            self._ref_at = len(self.reads)
        return self._ref

    def is_quiet(self, probe_us: float) -> bool:
        return probe_us <= self.cfg.gate * self.reference()

    def wait(self, max_s: float) -> bool:
        """Poll the probe (sleeping between reads) until the machine is quiet or ``max_s`` has
        passed, or the run's waiting budget (``cfg.run_wait_s``) is spent; True when quiet."""
        start = time.perf_counter()
        deadline = start + min(max_s, max(self.cfg.run_wait_s - self.waited_s, 0.0))
        try:
            while not self.is_quiet(self.read()):
                if time.perf_counter() >= deadline:
                    return False
                time.sleep(0.01)
            return True
        finally:
            self.waited_s += time.perf_counter() - start

    def overhead_us(self) -> float:
        """Latency of ``invoke()`` on the one-element probe model: median of the quiet reads."""
        return float(statistics.median(v for v in self.reads if self.is_quiet(v)))


class _Timer:
    """A model to time: interpreters of it ready to invoke, the batch size chosen (on the
    first) so a sample lasts ``sample_s``, and the samples taken so far.

    Each :meth:`new_instance` builds another interpreter from a fresh copy of the model: the
    latency of some ops depends on where their tensors and constants land in memory (the same
    MUL measured 1.3 or 1.8 us depending on the instance), so an op is timed on several.
    """

    def __init__(
        self,
        model: bytes,
        inputs: Mapping[str, np.ndarray] | None,
        cfg: MeasureConfig,
        *,
        seed: int,
        samples: int,
    ) -> None:
        self.model, self.inputs, self.cfg, self.seed = model, inputs, cfg, seed
        self.instances: list[Callable[[], object]] = []
        self.invoke = self.new_instance()
        interp_invoke = self.invoke
        n = 1
        while True:  # calibrate: batches of 1, 4, 16, ... invokes until one lasts sample_s / 4
            t0 = time.thread_time()  # CPU time: a preempted calibration does not shrink the batch
            for _ in range(n):
                interp_invoke()
            elapsed = time.thread_time() - t0
            if elapsed >= cfg.sample_s / 4 or n >= 100_000:
                break
            n *= 4
        per_s = max(elapsed / n, 1e-7)
        self.batch = max(1, min(int(math.ceil(cfg.sample_s / per_s)), 100_000))
        budget = max(int(cfg.max_time_s / (per_s * self.batch)), cfg.min_samples)
        self.target = max(min(samples, budget), 1)
        self.cpu: list[float] = []
        self.wall: list[float] = []
        self.probes: list[float] = []  # the slower of the two probe reads around each sample
        self.instance: list[int] = []  # which instance each sample was taken on

    def new_instance(self) -> Callable[[], object]:
        """A new interpreter on a fresh copy of the model, inputs set and warmed up; samples
        are taken on it from now on."""
        from ai_edge_litert.interpreter import Interpreter

        cfg = self.cfg
        interp = Interpreter(model_content=bytes(bytearray(self.model)), num_threads=cfg.threads)
        for d in interp.get_input_details():
            if -1 in list(d.get("shape_signature", [])):
                interp.resize_tensor_input(d["index"], [max(int(x), 1) for x in d["shape"]])
        interp.allocate_tensors()
        rng = np.random.default_rng(self.seed)
        for d in interp.get_input_details():
            value = None if self.inputs is None else self.inputs.get(d["name"])
            if value is None:
                value = _random_input(d, rng)
            interp.set_tensor(d["index"], np.asarray(value, dtype=d["dtype"]).reshape(d["shape"]))
        interp.invoke()  # first run: lazy allocations, delegate preparation
        for _ in range(cfg.warmup):
            interp.invoke()
        self.instances.append(interp.invoke)
        self.invoke = interp.invoke
        return interp.invoke

    def sample(self, k: int, gate: Gate) -> None:
        """Take ``k`` samples on the current instance, each bracketed by probe reads (the read
        after one sample is the read before the next)."""
        invoke, n = self.invoke, self.batch
        for _ in range(k):
            before = gate.last
            w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            for _ in range(n):
                invoke()
            c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
            self.cpu.append((c1 - c0) / 1e3 / n)
            self.wall.append((w1 - w0) / 1e3 / n)
            self.probes.append(max(before, gate.read()))
            self.instance.append(len(self.instances) - 1)

    def quiet(self, gate: Gate) -> list[int]:
        """Indices of the samples taken while the machine was quiet."""
        return [i for i, p in enumerate(self.probes) if gate.is_quiet(p)]

    def timing(self, gate: Gate) -> Timing:
        keep = self.quiet(gate)
        used = keep or list(range(len(self.cpu)))
        best_cpu: dict[int, float] = {}
        best_wall: dict[int, float] = {}
        for i in used:
            j = self.instance[i]
            best_cpu[j] = min(best_cpu.get(j, math.inf), self.cpu[i])
            best_wall[j] = min(best_wall.get(j, math.inf), self.wall[i])
        return Timing(
            statistics.median(best_cpu.values()),
            statistics.median(self.cpu[i] for i in used),
            statistics.median(best_wall.values()),
            statistics.median(self.wall[i] for i in used),
            self.batch,
            len(used),
            len(self.cpu) - len(keep),
            bool(keep),
            len(best_cpu),
        )


def _run_rounds(timers: Sequence[_Timer], cfg: MeasureConfig, gate: Gate) -> None:
    """Sample ``timers`` in ``cfg.rounds`` interleaved rounds, a new instance of each per round,
    then top up every instance short of quiet samples (waiting for the machine to be quiet
    before each extra sample, at most ``cfg.max_wait_s`` in all)."""
    rounds = max(cfg.rounds, 1)
    for r in range(rounds):
        for t in timers:
            k = math.ceil(t.target * (r + 1) / rounds) - len(t.cpu)
            if k > 0:
                if r:
                    t.new_instance()
                t.sample(k, gate)
    deadline = time.perf_counter() + cfg.max_wait_s
    for _ in range(cfg.retry_rounds):
        short = False
        for t in timers:
            quiet = [t.instance[i] for i in t.quiet(gate)]
            for j, invoke in enumerate(t.instances):
                share = len(range(j, t.target, len(t.instances)))  # its round's share
                for _ in range(share - quiet.count(j)):
                    short = True
                    left = deadline - time.perf_counter()
                    if left <= 0:
                        return
                    gate.wait(min(cfg.wait_s, left))
                    t.invoke = invoke
                    t.sample(1, gate)
                    t.instance[-1] = j
        if not short:
            return


def time_models(
    models: Sequence[bytes],
    cfg: MeasureConfig,
    *,
    seed: int = 0,
    samples: int | None = None,
    gate: Gate | None = None,
) -> list[Timing | Exception]:
    """Time several models in interleaved rounds (``cfg.rounds``), so that the samples of each
    are spread over time and a burst of load elsewhere on the machine hits few of them.

    Each round runs on a new interpreter instance of each model (a fresh copy of it: memory
    placement changes some latencies). Each sample is a batch of back-to-back ``invoke()`` calls
    lasting at least ``cfg.sample_s`` (per-invoke time = batch time / batch size), bracketed by
    probe reads of ``gate`` (a new :class:`Gate` when None); only quiet samples count, and an
    instance short of quiet samples gets more (up to ``cfg.retry_rounds`` passes, each extra
    sample after waiting up to ``cfg.wait_s`` for quiet, at most ``cfg.max_wait_s`` of waiting
    per call). A model gets ``samples`` samples (default ``cfg.samples``), fewer when they would
    exceed ``cfg.max_time_s`` (never below ``cfg.min_samples``). Its latency is the median over
    instances of each instance's lowest quiet sample. A model the runtime refuses yields the
    exception instead of a timing.

    >>> from tacopt.fusion.writer import serialize_tflite
    >>> t = time_models([serialize_tflite(_neg_graph())], MeasureConfig(samples=3))[0]
    >>> 0 < t.cpu_us and t.samples + t.rejected >= 3 and t.instances >= 1
    True
    """
    gate = Gate(cfg) if gate is None else gate
    want = cfg.samples if samples is None else samples
    timers: list[_Timer | Exception] = []
    for m in models:
        try:
            timers.append(_Timer(m, None, cfg, seed=seed, samples=want))
        except Exception as exc:  # the runtime refused this model
            timers.append(exc)
    _run_rounds([t for t in timers if isinstance(t, _Timer)], cfg, gate)
    return [t.timing(gate) if isinstance(t, _Timer) else t for t in timers]


def time_model(
    model: bytes,
    inputs: Mapping[str, np.ndarray] | None,
    cfg: MeasureConfig,
    *,
    seed: int = 0,
    samples: int | None = None,
    gate: Gate | None = None,
) -> Timing:
    """Time one model (see :func:`time_models`), with given ``inputs`` (else random ones)."""
    gate = Gate(cfg) if gate is None else gate
    timer = _Timer(
        model, inputs, cfg, seed=seed, samples=cfg.samples if samples is None else samples
    )
    _run_rounds([timer], cfg, gate)
    return timer.timing(gate)


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
    """Latency of ``invoke()`` on a one-element NEG model (the fixed cost of a Python call):
    the median quiet read of a fresh :class:`Gate`."""
    return Gate(cfg).overhead_us()


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
    types: Sequence[str] = (),
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, int]:
    """Measure every op of every model into the JSONL file ``out`` (resuming it if it exists).

    Parameters
    ----------
    paths : .tflite files.
    out : records file; existing records are kept and their ops / models are not re-measured.
    cfg : timing knobs.
    types : inference types (``"FLOAT"``, ``"QUANTIZED_INT8"``) to measure each op in besides
        its own: the op is rebuilt by :func:`retype_op`. Such records carry ``retyped_from``
        (the op's own type) and are listed in the model record under ``variants``, never in
        ``ops`` (whole-model sums stay those of the model as it is).
    progress : called as ``progress(done, total, label)`` after each op.

    Returns
    -------
    dict
        Counts: ``measured``, ``reused`` (already measured configurations), ``skipped``,
        ``models``.
    """
    from tacopt.fusion.reader import read_tflite
    from tacopt.fusion.writer import serialize_tflite

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
    gate = Gate(cfg)  # one per run: its reference and overhead sharpen as the run goes

    def knobs() -> dict[str, Any]:
        return {**cfg.knobs(), "overhead_us": round(gate.overhead_us(), 4)}

    count = 0
    with out.open("a") as f:
        pending: list[tuple[dict[str, Any], dict[str, Any], bytes]] = []

        def submit(base: dict[str, Any], feats: dict[str, Any], single: bytes) -> None:
            nonlocal pending
            pending.append((base, feats, single))
            if len(pending) >= cfg.chunk:
                _measure_chunk(f, pending, cfg, gate, knobs, stats)
                pending = []

        def skip(base: Mapping[str, Any], kind: str, reason: str) -> None:
            _write(f, {"type": "skip", **base, "kind": kind, "reason": reason})
            stats["skipped"] += 1

        for path, G in graphs:
            keys: dict[str, float] = {}
            variants: dict[str, float] = {}
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
                base = {"key": key, "model": path.stem, "graph": S.graph["name"], "op": node}
                reason = _unmeasurable(S, node)
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
                    skip(base, feats["kind"], str(reason))
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
            _measure_chunk(f, pending, cfg, gate, knobs, stats)
            pending = []
            whole = serialize_tflite(fill_constants(G, seed=cfg.seed))
            t = time_model(
                whole,
                None,
                replace(cfg, max_time_s=cfg.model_max_time_s),
                seed=cfg.seed,
                samples=cfg.model_samples,
                gate=gate,
            )
            _write(
                f,
                {
                    "type": "model",
                    "model": path.stem,
                    **_timing_fields(t),
                    "ops": sorted([k, v] for k, v in keys.items()),
                    "variants": sorted([k, v] for k, v in variants.items()),
                    "types": list(types),
                    "loop_trips": loop_trips,
                    **knobs(),
                },
            )
            stats["models"] += 1
    return stats


def _measure_chunk(
    f: TextIO,
    pending: Sequence[tuple[dict[str, Any], dict[str, Any], bytes]],
    cfg: MeasureConfig,
    gate: Gate,
    knobs: Callable[[], dict[str, Any]],
    stats: dict[str, int],
) -> None:
    if not pending:
        return
    timings = time_models([m for _, _, m in pending], cfg, seed=cfg.seed, gate=gate)
    run_knobs = knobs()  # the overhead as re-calibrated up to now
    for (base, feats, _), t in zip(pending, timings, strict=True):
        if isinstance(t, Exception):
            reason = f"runtime: {type(t).__name__}: {(str(t).splitlines() or [''])[0][:160]}"
            _write(f, {"type": "skip", **base, "kind": feats["kind"], "reason": reason})
            stats["skipped"] += 1
        else:
            _write(f, {"type": "op", **base, **feats, **_timing_fields(t), **run_knobs})
            stats["measured"] += 1


def gate_summary(records: Iterable[Mapping[str, Any]]) -> str:
    """One line on how quiet a run was: share of samples rejected by the gate, ops without a
    quiet sample, the invoke overhead at the start and the end of the run."""
    ops = [r for r in records if r.get("type") == "op"]
    if not ops:
        return "no op records"
    kept = sum(r.get("repeats", 0) for r in ops if r.get("quiet", True))
    rejected = sum(r.get("rejected", 0) for r in ops)
    loud = sum(1 for r in ops if not r.get("quiet", True))
    share = rejected / max(kept + rejected, 1) * 100
    return (
        f"gate: {share:.1f} % of samples rejected as not quiet, {loud} of {len(ops)} ops without"
        f" a quiet sample; overhead {ops[0].get('overhead_us')} -> {ops[-1].get('overhead_us')} us"
    )


def _timing_fields(t: Timing) -> dict[str, Any]:
    return {
        "latency_us": round(t.cpu_us, 4),
        "latency_median_us": round(t.cpu_median_us, 4),
        "wall_us": round(t.wall_us, 4),
        "wall_median_us": round(t.wall_median_us, 4),
        "batch": t.batch,
        "repeats": t.samples,
        "rejected": t.rejected,
        "quiet": t.quiet,
        "instances": t.instances,
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

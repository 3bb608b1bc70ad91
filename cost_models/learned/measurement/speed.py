"""The machine's speed, measured beside every op: reference models timed in each chunk.

The gate (:class:`~tacopt.cost_models.learned.measurement.timing.Gate`) keeps samples taken in the
machine's fast state *within* a run; it cannot tell that the fast state itself is slower today than
an hour ago (docs/cost-models.md, "Drift"). So every chunk of ops is timed together with a few fixed
reference models (:data:`REFERENCES`: a GEMM-bound CONV_2D, a depthwise conv, a memory-bound
ADD, int8 and float, a transpose, an LSTM), interleaved with the ops, by the same gated method.
Each record carries ``speed`` (reference name -> its latency in us, a running median over the last
``SPEED_WINDOW`` chunks, so one noisy chunk does not move it) and the learned model predicts
``latency / speed index`` (:func:`speed_index`), converted back with the speed of the machine
at hand (``tacopt calibrate``, :func:`measure_speed`).

Each op is normalized and re-anchored by the reference of the **kernel family** it runs in
(:func:`reference_family`, :data:`FAMILIES`: float GEMM / conv, int8 GEMM / conv, depthwise,
elementwise, data movement, recurrent), never by one blended scalar: from one CPU to another the
int8 and float paths can differ 5x (issue 22: the AVX-512 machine of the shipped model runs the
int8 conv 5.0x faster than this AVX2 Zen 3, the float conv 1.13x). The recurrent ops (LSTMs,
RNNs) are re-anchored by a reference of their own: no delegate takes them, LiteRT's builtin
kernels run them under every resolver, and XNNPACK's references do not follow them: from a
Zen 3 to a Zen 4 with AVX-512 VNNI, the int8 conv reference ran 5.0x faster, the zoo's int8
LSTMs 1.25x. Records without a family's reference (measured before it existed) fall back to
the geometric mean of the references they have (`speed_index`).

Whole models are also slowed by the machine's memory, which no op reference follows: a model whose
data spill past the caches runs slower while the memory is busy (on a VM, with its neighbours).
So every whole model is timed with a memory reference beside it (:func:`memory_reference`, an
ADD moving 48 MB per invoke, read just before and just after the model: ``dram_us`` on model
records), and :func:`normalize_records` divides a model's latency by its :func:`memory_index`.

>>> sorted(REFERENCES)
['add', 'add_l2', 'conv', 'conv_int8', 'dwconv', 'lstm', 'move']
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.measurement.records import (
    fingerprint_caches,
    ops_and_bytes,
    records_by_key,
    spill_level,
)
from tacopt.cost_models.learned.measurement.timing import Gate, MeasureConfig, time_models
from tacopt.cost_models.ops import MOVEMENT, RECURRENT
from tacopt.fusion.ir import Quantization
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.rnn.lstm_ops import LSTM_OPTIONS
from tacopt.fusion.tflite.writer import serialize_tflite

#: Chunks the running median of a reference's latency spans.
SPEED_WINDOW = 9


def _conv(int8: bool) -> nx.MultiDiGraph:
    rng = np.random.default_rng(0)
    b = GraphBuilder("ref_conv_int8" if int8 else "ref_conv")
    if int8:
        q = Quantization(scale=(0.02,), zero_point=(0,))
        x = b.input("x", (1, 16, 16, 32), "int8", quantization=q)
        w = b.const(
            rng.integers(-127, 128, (32, 3, 3, 32)),
            dtype="int8",
            quantization=Quantization(scale=(0.01,) * 32, zero_point=(0,) * 32, axis=0),
        )
        bq = Quantization(scale=(0.0002,) * 32, zero_point=(0,) * 32, axis=0)
        bias = b.const(np.zeros(32), dtype="int32", quantization=bq)
        y = b.op("CONV_2D", x, w, bias, quantization=Quantization((0.05,), (0,)))
    else:
        x = b.input("x", (1, 16, 16, 32))
        y = b.op("CONV_2D", x, rng.normal(size=(32, 3, 3, 32)), np.zeros(32))
    return b.build(outputs=[y])


def _dwconv() -> nx.MultiDiGraph:
    rng = np.random.default_rng(0)
    b = GraphBuilder("ref_dwconv")
    x = b.input("x", (1, 32, 32, 64))
    y = b.op("DEPTHWISE_CONV_2D", x, rng.normal(size=(1, 3, 3, 64)), np.zeros(64))
    return b.build(outputs=[y])


def _add(shape: tuple[int, ...] = (1, 64, 64, 32), name: str = "") -> nx.MultiDiGraph:
    b = GraphBuilder(name or ("ref_add" if shape == (1, 64, 64, 32) else "ref_add_l2"))
    x, z = b.input("x", shape), b.input("z", shape)
    return b.build(outputs=[b.op("ADD", x, z)])


def _move() -> nx.MultiDiGraph:
    b = GraphBuilder("ref_move")
    x = b.input("x", (1, 32, 32, 64))
    return b.build(outputs=[b.op("TRANSPOSE", x, np.array([0, 3, 1, 2], np.int32))])


def lstm_graph(
    name: str, steps: int, batch: int, n_in: int, units: int, *, time_major: bool, rng: Any
) -> nx.MultiDiGraph:
    """A float UNIDIRECTIONAL_SEQUENCE_LSTM (no peepholes, projection or layer norm) as the LSTM
    fusions emit it, its weights drawn from ``rng``: the ``lstm`` reference and the sweep's
    LSTM sampler (``samplers_net``)."""
    b = GraphBuilder(name)
    x = b.input("x", (steps, batch, n_in) if time_major else (batch, steps, n_in))
    w_in = [rng.normal(0, 0.1, (units, n_in)) for _ in range(4)]
    w_rec = [rng.normal(0, 0.1, (units, units)) for _ in range(4)]
    bias = [np.zeros(units) for _ in range(4)]
    states = (b.variable("output_state", (batch, units)), b.variable("cell_state", (batch, units)))
    y = b.op(
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        x, *w_in, *w_rec, None, None, None, *bias, None, None, *states, None, None, None, None,
        shape=(steps, batch, units) if time_major else (batch, steps, units),
        **{**LSTM_OPTIONS, "time_major": time_major},
    )  # fmt: skip
    return b.build(outputs=[y])


def _lstm() -> nx.MultiDiGraph:
    """An LSTM of 16 steps, 32 inputs and 32 units: LiteRT's builtin kernels run it under every
    resolver (no delegate takes it), the reference of the ``recurrent`` family."""
    rng = np.random.default_rng(0)
    return lstm_graph("ref_lstm", 16, 1, 32, 32, time_major=False, rng=rng)


#: The reference models, by name (built on first use).
REFERENCES: dict[str, Callable[[], nx.MultiDiGraph]] = {
    "conv": lambda: _conv(False),
    "conv_int8": lambda: _conv(True),
    "dwconv": _dwconv,
    "add": _add,
    "add_l2": lambda: _add((1, 32, 32, 32)),
    "move": _move,
    "lstm": _lstm,
}

#: Kernel family -> the references that anchor it, the first both sides have. The elementwise
#: family's is an ADD whose operands stay in a core's L2 (384 kB), like most elementwise ops of
#: a network: the older 1.5 MB ``add`` streams from the L3, which neighbours share, and read
#: 24-39 us in one loaded run here while the other references moved by 2 %.
FAMILIES: dict[str, tuple[str, ...]] = {
    "gemm_float": ("conv",),
    "gemm_int8": ("conv_int8",),
    "depthwise": ("dwconv",),
    "elementwise": ("add_l2", "add"),
    "movement": ("move",),
    "recurrent": ("lstm",),
}
#: Kinds XNNPACK / TFLite run as a GEMM (the recurrent ones are GEMMs per step).
#: (CONV_2D_GROUPED: a grouped CONV_2D, fitting.features.kernel_kind.)
GEMM_KINDS = frozenset(
    {"CONV_2D", "CONV_2D_GROUPED", "FULLY_CONNECTED", "BATCH_MATMUL", "TRANSPOSE_CONV", "CONV_3D"}
    | RECURRENT
)


def family(kind: str, inference_type: str | None) -> str:
    """The kernel family an op of ``kind`` runs in, in ``inference_type``.

    >>> family("CONV_2D", "QUANTIZED_INT8"), family("FULLY_CONNECTED", "FLOAT")
    ('gemm_int8', 'gemm_float')
    >>> family("DEPTHWISE_CONV_2D", "FLOAT"), family("PAD", "FLOAT"), family("MUL", "FLOAT")
    ('depthwise', 'movement', 'elementwise')
    >>> family("UNIDIRECTIONAL_SEQUENCE_LSTM", "QUANTIZED_INT8")  # GEMMs per step
    'gemm_int8'
    """
    if kind in GEMM_KINDS:
        return "gemm_int8" if "INT" in str(inference_type) else "gemm_float"
    if kind == "DEPTHWISE_CONV_2D":
        return "depthwise"
    if kind in MOVEMENT or kind == "GATHER":
        return "movement"
    return "elementwise"


def reference_family(kind: str, inference_type: str | None) -> str:
    """The family whose reference re-anchors an op of ``kind`` from one machine to another: its
    kernel family (:func:`family`), except for the recurrent ops, anchored by the ``lstm``
    reference (``"recurrent"``): no delegate takes them, and XNNPACK's GEMM references do not
    follow LiteRT's builtin kernels. They stay in the GEMM families for fitting (a family of
    their own there too helped one Zen 4 learn and hurt another: docs/cost-models.md).

    >>> reference_family("UNIDIRECTIONAL_SEQUENCE_LSTM", "QUANTIZED_INT8")
    'recurrent'
    >>> reference_family("CONV_2D", "QUANTIZED_INT8")
    'gemm_int8'
    """
    return "recurrent" if kind in RECURRENT else family(kind, inference_type)


def family_index(speed: Mapping[str, float], anchor: Mapping[str, float], fam: str | None) -> float:
    """How much slower the machine of ``speed`` runs family ``fam`` than that of ``anchor``:
    the ratio of the family's reference, or, when either side lacks it (or ``fam`` is None),
    the geometric mean over the references both have (:func:`speed_index`).

    >>> family_index({"conv": 20.0, "add": 10.0}, {"conv": 10.0, "add": 10.0}, "gemm_float")
    2.0
    >>> round(family_index({"conv": 20.0, "add": 10.0}, {"conv": 10.0, "add": 10.0}, "movement"), 4)
    1.4142
    """
    for ref in FAMILIES.get(fam or "", ()):
        if speed.get(ref, 0) > 0 and anchor.get(ref, 0) > 0:
            return float(speed[ref]) / float(anchor[ref])
    return speed_index(speed, anchor)


def family_indices(speed: Mapping[str, float], anchor: Mapping[str, float]) -> dict[str, float]:
    """:func:`family_index` of every reference family (and ``"*"``: the blended index).

    >>> family_indices({"add": 2.0}, {"add": 1.0})["elementwise"]
    2.0
    """
    out = {fam: family_index(speed, anchor, fam) for fam in FAMILIES}
    out["*"] = speed_index(speed, anchor)
    return out


@cache
def reference_models() -> dict[str, bytes]:
    """The reference models as .tflite bytes, by name."""
    return {name: serialize_tflite(build()) for name, build in sorted(REFERENCES.items())}


#: The memory reference, timed beside every whole model (not with the ops: it would empty the
#: caches the single ops are timed in): a float ADD of two inputs of this shape, 3 x 16 MB read
#: and written per invoke, past the 32 MB L3 of the CPUs sessions get. Records carry it as
#: ``dram_us`` on each model record; the model file's ``anchor_speed`` as :data:`MEMORY_KEY`.
MEMORY_SHAPE = (1, 256, 256, 64)
MEMORY_KEY = "dram"
#: How much a model's latency moves with the memory reference's at full spill (log-log slope;
#: a model's spill, 0 to 1, scales it: ``records.spill_level``). Big models and the learn's big
#: chains run slower when the machine's memory is: on the Zen 4 VM of the 2026-11-27 sessions,
#: eight chains past 16 MB timed in 299 interleaved rounds over 9 minutes moved with the 48 MB
#: ADD at r 0.65 and a slope of 0.093, and hardly with the L3-streaming ``add`` reference (r
#: 0.04-0.26; ``benchmarks/results/learn_v24/corr_report.txt`` at commit b3211eb). Six fresh
#: learns there fitted their in-model scale at full spill between 1.018 and 1.050 from such
#: chains.
MEMORY_SLOPE = 0.09


@cache
def memory_reference() -> bytes:
    """The memory reference model (:data:`MEMORY_SHAPE`) as .tflite bytes."""
    return serialize_tflite(_add(MEMORY_SHAPE, name="ref_dram"))


def memory_index(dram_us: float | None, anchor_us: float | None, spill: float) -> float:
    """How much slower a model of ``spill`` (0 to 1) runs because of the machine's memory than it
    would at the anchor's: the memory reference's ratio to the power of :data:`MEMORY_SLOPE` x
    ``spill``; 1.0 when either read is missing.

    >>> round(memory_index(2000.0, 1000.0, 1.0), 4), memory_index(2000.0, None, 1.0)
    (1.0644, 1.0)
    >>> memory_index(2000.0, 1000.0, 0.0), memory_index(float("nan"), 1000.0, 1.0)
    (1.0, 1.0)
    """
    if dram_us is None or anchor_us is None or not (_a_read(dram_us) and _a_read(anchor_us)):
        return 1.0
    return float((dram_us / anchor_us) ** (MEMORY_SLOPE * spill))


def _a_read(v: object) -> bool:
    """Whether ``v`` is a usable reference read: a finite positive number (a hand-edited or
    broken record's ``dram_us`` is then ignored, as if absent)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def speed_index(speed: Mapping[str, float], anchor: Mapping[str, float]) -> float:
    """How much slower the machine of ``speed`` is than that of ``anchor``: the geometric mean
    of the references' latency ratios (1.0 when either is empty); the memory reference
    (:data:`MEMORY_KEY`) left out: it weighs on whole models only (:func:`memory_index`).

    >>> round(speed_index({"conv": 20.0, "add": 10.0}, {"conv": 10.0, "add": 10.0}), 4)
    1.4142
    """
    names = [
        n
        for n in sorted(anchor)
        if n != MEMORY_KEY and n in speed and speed[n] > 0 and anchor[n] > 0
    ]
    if not names:
        return 1.0
    return math.exp(statistics.fmean(math.log(speed[n] / anchor[n]) for n in names))


class SpeedTracker:
    """Running medians of the references' latencies over the last :data:`SPEED_WINDOW` chunks.

    >>> t = SpeedTracker()
    >>> for v in (10.0, 30.0, 11.0):
    ...     t.add({"conv": v})
    >>> t.speed()
    {'conv': 11.0}
    """

    def __init__(self) -> None:
        self.history: dict[str, list[float]] = {}

    def add(self, reads: Mapping[str, float]) -> None:
        for name, v in reads.items():
            self.history.setdefault(name, []).append(v)

    def speed(self) -> dict[str, float]:
        return {
            n: round(float(statistics.median(v[-SPEED_WINDOW:])), 4)
            for n, v in sorted(self.history.items())
        }


def measure_speed(rounds: int = 5, cfg: object | None = None) -> dict[str, float]:
    """Time the reference models ``rounds`` times (gated, as ops are timed) and return the
    median latency of each, in us: the machine's speed now (``tacopt calibrate``)."""
    mcfg = cfg if isinstance(cfg, MeasureConfig) else MeasureConfig()
    gate = Gate(mcfg)
    names = list(reference_models())
    tracker = SpeedTracker()
    for _ in range(rounds):
        timings = time_models(list(reference_models().values()), mcfg, gate=gate)
        tracker.add(
            {
                n: t.cpu_us
                for n, t in zip(names, timings, strict=True)
                if not isinstance(t, Exception)
            }
        )
    return {n: round(float(statistics.median(v)), 4) for n, v in sorted(tracker.history.items())}


def run_speed(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The median speed (reference -> us) over the op records that carry one, and the median
    memory reference (:data:`MEMORY_KEY`) over the model records that carry one ({} if none).

    >>> recs = [{"type": "op", "speed": {"conv": 10.0}}, {"type": "op", "speed": {"conv": 12.0}}]
    >>> run_speed(recs + [{"type": "model", "dram_us": 2000.0}, {"type": "model", "dram_us": "x"}])
    {'conv': 11.0, 'dram': 2000.0}
    """
    reads: dict[str, list[float]] = {}
    for r in records:
        if r.get("type") == "op":
            for name, v in (r.get("speed") or {}).items():
                reads.setdefault(name, []).append(float(v))
        elif r.get("type") == "model" and _a_read(r.get("dram_us")):
            reads.setdefault(MEMORY_KEY, []).append(float(r["dram_us"]))
    return {n: round(float(statistics.median(v)), 4) for n, v in sorted(reads.items())}


#: Record fields in microseconds that scale with the machine's speed.
TIMED_FIELDS = ("latency_us", "latency_median_us", "wall_us", "wall_median_us", "overhead_us")

#: The family whose index re-anchors a record's invoke overhead (``overhead_us``, part of every
#: single-op latency): it is the gate's probe, a one-element NEG model. Scaled by the op's own
#: family, as before, the overhead of an int8 GEMM measured on a CPU with VNNI counted 5x in the
#: units of one without, and the shipped model adapted there priced tiny int8 convolutions at
#: 0.3-0.5x.
OVERHEAD_FAMILY = "elementwise"


#: Consecutive records with a speed whose reference timings are pooled (median) to normalize
#: them: about one `tacopt learn` or zoo run on this machine. Per record, the references' own
#: noise under load outweighs the drift they exist for (two runs 45 min apart here, 1,305 ops:
#: float GEMMs within ±10 % 62 % raw, 69 % pooled per 400 records, 77 % per run; a records
#: file of several runs still gets one speed per block).
SPEED_BLOCK = 2000


def block_speeds(records: Sequence[Mapping[str, Any]]) -> list[dict[str, float] | None]:
    """Each record's pooled speed: the median of every reference over its block of
    :data:`SPEED_BLOCK` consecutive records that carry one (a short last block joins the one
    before); None for a record without speed.

    >>> recs = [{"speed": {"conv": v}} for v in (10.0, 30.0, 11.0)] + [{}]
    >>> block_speeds(recs)
    [{'conv': 11.0}, {'conv': 11.0}, {'conv': 11.0}, None]
    """
    out: list[dict[str, float] | None] = [None] * len(records)
    idx = [i for i, r in enumerate(records) if r.get("speed")]
    starts = list(range(0, len(idx), SPEED_BLOCK))
    if len(starts) > 1 and len(idx) - starts[-1] < SPEED_BLOCK // 2:
        starts.pop()  # the short tail joins the block before
    for b, start in enumerate(starts):
        block = idx[start : starts[b + 1] if b + 1 < len(starts) else len(idx)]
        reads: dict[str, list[float]] = {}
        for i in block:
            for name, v in records[i]["speed"].items():
                reads.setdefault(name, []).append(float(v))
        speed = {n: float(statistics.median(v)) for n, v in sorted(reads.items())}
        for i in block:
            out[i] = speed
    return out


def normalize_records(
    records: Iterable[Mapping[str, Any]], anchor: Mapping[str, float]
) -> list[dict[str, Any]]:
    """Copies of ``records`` with their times in the units of the machine of ``anchor``: each op
    record that carries a ``speed`` has its times net of the invoke overhead divided by its
    kernel family's index (:func:`family_index`) of its block's pooled speed
    (:func:`block_speeds`), and the overhead by :data:`OVERHEAD_FAMILY`'s; each model record (a
    model runs every family) by its ops' indices weighted by their measured time (the blended
    :func:`speed_index` when none of its ops is in ``records``), times its :func:`memory_index`
    (its own ``dram_us``, read beside it, against the anchor's; its spill from the bytes its
    ops move and the caches of its device record); ``speed_index``, ``overhead_index`` and, on
    model records, ``memory_index`` fields added. Others are copied as they are.

    >>> r = {"type": "op", "kind": "ADD", "latency_us": 20.0, "speed": {"conv": 4.0, "add": 2.0}}
    >>> normalize_records([r], {"conv": 1.0, "add": 1.0})[0]["latency_us"]
    10.0
    """
    records = list(records)
    caches = {
        r.get("device"): fingerprint_caches(r.get("fingerprint"))
        for r in records
        if r.get("type") == "device"
    }
    out: list[dict[str, Any]] = []
    index: dict[str, float] = {}  # op key -> its index
    raw: dict[str, float] = {}  # op key -> its measured latency
    models: list[tuple[dict[str, Any], float, float]] = []
    for r, speed in zip(records, block_speeds(records), strict=True):
        r = dict(r)
        out.append(r)
        if not (speed and anchor):
            continue
        if r.get("type") == "model":
            models.append(
                (r, speed_index(speed, anchor), family_index(speed, anchor, OVERHEAD_FAMILY))
            )
            continue
        fam = reference_family(r["kind"], r.get("inference_type")) if r.get("kind") else None
        s = family_index(speed, anchor, fam)
        if r.get("type") == "op" and isinstance(r.get("latency_us"), (int, float)):
            index[str(r.get("key"))], raw[str(r.get("key"))] = s, float(r["latency_us"])
        _scale(r, s, family_index(speed, anchor, OVERHEAD_FAMILY))
    by_key = records_by_key(records) if models else {}
    for r, blended, overhead in models:
        # a model runs every family: its index is that of its ops, weighted by their time
        ops = [(raw[k], index[k], c) for k, c in r.get("ops", []) if k in index]
        total = sum(c * t for t, _, c in ops)
        s = total / sum(c * t / s for t, s, c in ops) if total > 0 else blended
        spill = spill_level(ops_and_bytes(r, by_key)[1], caches.get(r.get("device")))
        memory = memory_index(r.get("dram_us"), anchor.get(MEMORY_KEY), spill)
        _scale(r, s * memory, overhead)
        r["memory_index"] = memory
    return out


def _scale(r: dict[str, Any], s: float, s_overhead: float) -> None:
    """Put a record's times in the anchor's units: the invoke overhead divided by
    ``s_overhead``, the rest of each time by ``s``; both indices recorded (``speed_index``,
    ``overhead_index``)."""
    overhead = r.get("overhead_us")
    overhead = float(overhead) if isinstance(overhead, (int, float)) else 0.0
    for f in TIMED_FIELDS:
        if f != "overhead_us" and isinstance(r.get(f), (int, float)):
            r[f] = overhead / s_overhead + (r[f] - overhead) / s
    if isinstance(r.get("overhead_us"), (int, float)):
        r["overhead_us"] = overhead / s_overhead
    r["speed_index"], r["overhead_index"] = s, s_overhead

"""Facts about single ops the cost models share: inference type, FLOPs, memory traffic.

- :func:`inference_type` follows TAC's ``GetInferenceType`` (tac/common/utils.cc): look at the
  op's operands; float32 plus quantized 8-bit is ``HYBRID`` (dynamic-range), only quantized int8
  is ``QUANTIZED_INT8``, only uint8 ``QUANTIZED_UINT8``, anything else ``FLOAT``; int8 and uint8
  together is ``UNKNOWN``.
- :func:`op_counts` gives FLOPs (multiply and add counted separately, so a MAC is 2) and bytes
  read / written for every op kind of the shared zoo and the fused ops. Rules live in small
  tables (:data:`ELEMENTWISE_FLOPS`, :data:`MOVEMENT`) plus one function per structured kind.
  Unknown kinds count one FLOP per output element (and are flagged ``exact=False``).
- WHILE costs its body (and its condition) times the trip count, read from the condition
  graph when it compares a loop counter with a constant (:func:`trip_count`); when that fails
  the estimate is one trip, flagged in the result. IF costs its more expensive branch.

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> ts = [Tensor("x", (1, 8), "float32"), Tensor("w", (4, 8), "float32"),
...       Tensor("y", (1, 4), "float32")]
>>> G = make_graph("g", ts, [Op("fc_0", "FULLY_CONNECTED", ("x", "w", None), ("y",))],
...                ["x", "w"], ["y"])
>>> c = op_counts(G, "fc_0")
>>> c.flops, c.bytes_read, c.bytes_written
(64.0, 160.0, 16.0)
>>> inference_type(G, "fc_0")
'FLOAT'
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from tacopt.errors import GraphError
from tacopt.fusion.ir import DTYPE_NBYTES, Op, Tensor

# --------------------------------------------------------------------------------------------
# inference type
# --------------------------------------------------------------------------------------------


def tensor_kind(t: Tensor) -> str:
    """``"f32"``, ``"qi8"``, ``"qui8"`` or ``"other"`` as TAC's type predicates see ``t``."""
    if t.dtype == "float32":
        return "f32"
    if t.dtype == "int8" and t.is_quantized:
        return "qi8"
    if t.dtype == "uint8" and t.is_quantized:
        return "qui8"
    return "other"


def inference_type(G: nx.MultiDiGraph, node: str) -> str:
    """TAC's inference type of op ``node`` from its operand types.

    >>> from tacopt.fusion.ir import Op, Quantization, Tensor, make_graph
    >>> q = Quantization((0.5,), (0,))
    >>> ts = [Tensor("x", (2, 4), "float32"), Tensor("w", (3, 4), "int8", quantization=q),
    ...       Tensor("y", (2, 3), "float32")]
    >>> G = make_graph("g", ts, [Op("fc", "FULLY_CONNECTED", ("x", "w"), ("y",))], ["x", "w"],
    ...                ["y"])
    >>> inference_type(G, "fc")
    'HYBRID'
    """
    tensors = G.graph["tensors"]
    seen = {tensor_kind(tensors[t]) for t in G.nodes[node]["op"].inputs if t is not None}
    if "qi8" in seen and "qui8" in seen:
        return "UNKNOWN"
    if "f32" in seen:
        return "HYBRID" if seen & {"qi8", "qui8"} else "FLOAT"
    if "qi8" in seen:
        return "QUANTIZED_INT8"
    if "qui8" in seen:
        return "QUANTIZED_UINT8"
    return "FLOAT"


# --------------------------------------------------------------------------------------------
# counts
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpCounts:
    """FLOPs and bytes of one op; ``exact`` is False when a rule had to estimate."""

    flops: float
    bytes_read: float
    bytes_written: float
    exact: bool = True
    note: str = ""

    @property
    def nbytes(self) -> float:
        return self.bytes_read + self.bytes_written

    def scaled(self, k: float) -> OpCounts:
        return OpCounts(
            self.flops * k, self.bytes_read * k, self.bytes_written * k, self.exact, self.note
        )

    def __add__(self, other: OpCounts) -> OpCounts:
        return OpCounts(
            self.flops + other.flops,
            self.bytes_read + other.bytes_read,
            self.bytes_written + other.bytes_written,
            self.exact and other.exact,
            "; ".join(n for n in (self.note, other.note) if n),
        )


#: FLOPs per output element of element-wise ops (rough instruction counts of the reference
#: kernels: a transcendental is ~8 basic ops, a division ~4).
ELEMENTWISE_FLOPS: dict[str, float] = {
    **dict.fromkeys(
        "ADD SUB MUL MAXIMUM MINIMUM NEG RELU RELU6 RELU_N1_TO_1 RELU_0_TO_1 ABS LEAKY_RELU PRELU "
        "LESS LESS_EQUAL GREATER GREATER_EQUAL EQUAL NOT_EQUAL LOGICAL_AND LOGICAL_OR "
        "LOGICAL_NOT SELECT SELECT_V2 SQUARE FLOOR CEIL ROUND SIGN ADD_N CAST".split(),
        1.0,
    ),
    "SQUARED_DIFFERENCE": 2.0,
    **dict.fromkeys(
        "DIV FLOOR_DIV FLOOR_MOD SQRT RSQRT HARD_SWISH QUANTIZE DEQUANTIZE".split(), 4.0
    ),
    **dict.fromkeys("LOGISTIC TANH EXP LOG SIN COS ELU".split(), 8.0),
    "POW": 16.0,
    "GELU": 14.0,
    "SOFTMAX": 10.0,
    "LOG_SOFTMAX": 12.0,
    "L2_NORMALIZATION": 4.0,
    "LOCAL_RESPONSE_NORMALIZATION": 8.0,
}

#: Pure data movement: no FLOPs, every input byte read once and every output byte written.
MOVEMENT = frozenset(
    "RESHAPE SQUEEZE EXPAND_DIMS TRANSPOSE SLICE STRIDED_SLICE CONCATENATION SPLIT SPLIT_V PAD "
    "PADV2 MIRROR_PAD REVERSE_V2 UNPACK PACK BROADCAST_TO TILE SPACE_TO_DEPTH DEPTH_TO_SPACE "
    "SPACE_TO_BATCH_ND BATCH_TO_SPACE_ND SHAPE ZEROS_LIKE ONES_LIKE FILL RANGE DENSIFY "
    # the learned model's kernel kind of a STRIDED_SLICE with strides (fitting.features)
    "STRIDED_SLICE_BUILTIN".split()
)
#: Reductions: one FLOP per input element.
REDUCTIONS = frozenset(
    "MEAN SUM REDUCE_MAX REDUCE_MIN REDUCE_PROD REDUCE_ANY REDUCE_ALL ARG_MAX ARG_MIN".split()
)
#: Ops reading only the rows they gather from their table (input 0 for GATHER, 1 for lookup).
GATHERS = {"GATHER": 0, "GATHER_ND": 0, "EMBEDDING_LOOKUP": 1}
#: Recurrent fused ops: input 0 is the sequence; 2-D constant operands are weight matrices.
RECURRENT = frozenset(
    "UNIDIRECTIONAL_SEQUENCE_LSTM BIDIRECTIONAL_SEQUENCE_LSTM UNIDIRECTIONAL_SEQUENCE_RNN "
    "BIDIRECTIONAL_SEQUENCE_RNN LSTM RNN SVDF UNIDIRECTIONAL_SEQUENCE_GRU".split()
)


def _elems(t: Tensor) -> int:
    return t.num_elements


def _tensor_bytes(t: Tensor) -> float:
    return _elems(t) * DTYPE_NBYTES.get(t.dtype, 0)


def _io(G: nx.MultiDiGraph, op: Op) -> tuple[list[Tensor | None], list[Tensor]]:
    tensors = G.graph["tensors"]
    return (
        [None if t is None else tensors[t] for t in op.inputs],
        [tensors[t] for t in op.outputs],
    )


def _activation_flops(op: Op, outs: list[Tensor]) -> float:
    act = op.options.get("fused_activation_function", "NONE")
    return 0.0 if act in (None, "NONE") else float(_elems(outs[0]))


def _conv_like(op: Op, ins: list[Tensor | None], outs: list[Tensor]) -> float:
    # TAC / TOCO: 2 x weight elements x output positions (+ bias adds).
    w, out = ins[1], outs[0]
    assert w is not None
    cols = math.prod(out.shape[:-1]) if out.shape else 1
    flops = 2.0 * _elems(w) * cols
    if len(ins) > 2 and ins[2] is not None:
        flops += _elems(out)
    return flops


def _transpose_conv(op: Op, ins: list[Tensor | None], outs: list[Tensor]) -> float:
    w, x = ins[1], ins[2]
    assert w is not None and x is not None
    return 2.0 * _elems(w) * math.prod(x.shape[:-1])


def _batch_matmul(op: Op, ins: list[Tensor | None], outs: list[Tensor]) -> float:
    a = ins[0]
    assert a is not None
    k = a.shape[-2] if op.options.get("adj_x") else a.shape[-1]
    return 2.0 * _elems(outs[0]) * max(k, 1)


def _pool(op: Op, ins: list[Tensor | None], outs: list[Tensor]) -> float:
    window = op.options.get("filter_height", 1) * op.options.get("filter_width", 1)
    return float(_elems(outs[0]) * window)


def _recurrent(op: Op, ins: list[Tensor | None], outs: list[Tensor]) -> float:
    x = ins[0]
    assert x is not None
    steps = math.prod(x.shape[:-1]) if len(x.shape) > 1 else 1
    weights = sum(_elems(t) for t in ins[1:] if t is not None and len(t.shape) == 2)
    cells = sum(_elems(t) for t in ins[1:] if t is not None and len(t.shape) == 1)
    # one MAC per weight per step, ~8 element-wise ops per gate cell per step
    return float(steps * (2 * weights + 8 * cells))


STRUCTURED: dict[str, Callable[[Op, list[Tensor | None], list[Tensor]], float]] = {
    "CONV_2D": _conv_like,
    "DEPTHWISE_CONV_2D": _conv_like,
    "FULLY_CONNECTED": _conv_like,
    "CONV_3D": _conv_like,
    "TRANSPOSE_CONV": _transpose_conv,
    "BATCH_MATMUL": _batch_matmul,
    "AVERAGE_POOL_2D": _pool,
    "MAX_POOL_2D": _pool,
    "L2_POOL_2D": _pool,
    **dict.fromkeys(RECURRENT, _recurrent),
}


def op_counts(G: nx.MultiDiGraph, node: str, *, root: nx.MultiDiGraph | None = None) -> OpCounts:
    """FLOPs and bytes read / written of op ``node`` of ``G``.

    Parameters
    ----------
    G : the graph holding the op (the main graph or a nested one).
    node : the op's name.
    root : the main graph holding the nested graphs (default ``G``); needed for WHILE / IF
        ops inside nested graphs.

    Returns
    -------
    OpCounts
        ``exact`` is False for estimates (unknown kind, WHILE with unknown trip count).

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> ts = [Tensor("x", (2, 3), "float32"), Tensor("y", (2, 3), "float32")]
    >>> G = make_graph("g", ts, [Op("tanh_0", "TANH", ("x",), ("y",))], ["x"], ["y"])
    >>> op_counts(G, "tanh_0").flops
    48.0
    """
    if node not in G:
        raise GraphError(f"graph '{G.graph.get('name')}': no op '{node}'")
    op: Op = G.nodes[node]["op"]
    root = G if root is None else root
    if op.kind in ("WHILE", "IF", "CALL_ONCE", "CALL"):
        return _control_flow_counts(G, op, root)
    ins, outs = _io(G, op)
    written = float(sum(_tensor_bytes(t) for t in outs))
    unique_ins = list({t.name: t for t in ins if t is not None}.values())
    read = float(sum(_tensor_bytes(t) for t in unique_ins))
    exact, note = True, ""
    kind = "CUSTOM" if op.is_custom else op.kind
    if kind in GATHERS:
        slot = GATHERS[kind]
        table = ins[slot]
        if table is not None:  # only the gathered rows of the table are read
            read = read - _tensor_bytes(table) + written
        flops = 0.0
    elif kind in STRUCTURED:
        flops = STRUCTURED[kind](op, ins, outs)
    elif kind in ELEMENTWISE_FLOPS:
        flops = ELEMENTWISE_FLOPS[kind] * max((_elems(t) for t in outs), default=0)
    elif kind in MOVEMENT:
        flops = 0.0
    elif kind in REDUCTIONS:
        flops = float(max((_elems(t) for t in unique_ins), default=0))
    else:
        flops = float(sum(_elems(t) for t in outs))
        exact, note = False, f"no FLOP rule for {kind}: one per output element"
    flops += _activation_flops(op, outs)
    return OpCounts(flops, read, written, exact, note)


def _control_flow_counts(G: nx.MultiDiGraph, op: Op, root: nx.MultiDiGraph) -> OpCounts:
    subgraphs = root.graph.get("subgraphs", {})

    def graph_total(name: str) -> OpCounts:
        if name not in subgraphs:
            raise GraphError(f"op '{op.name}' ({op.kind}) calls missing subgraph '{name}'")
        S = subgraphs[name]
        total = OpCounts(0.0, 0.0, 0.0)
        for n in S.nodes:
            total = total + op_counts(S, n, root=root)
        return total

    if op.kind == "WHILE":
        trips, known = trip_count(G, op.name, root=root)
        body = graph_total(op.options["body_subgraph"]).scaled(trips)
        cond = graph_total(op.options["cond_subgraph"]).scaled(trips + 1)
        total = body + cond
        if not known:
            return OpCounts(
                total.flops,
                total.bytes_read,
                total.bytes_written,
                False,
                f"{op.name}: trip count unknown, estimated as {trips}",
            )
        return total
    if op.kind == "IF":
        branches = [
            graph_total(op.options[k])
            for k in ("then_subgraph", "else_subgraph")
            if k in op.options
        ]
        return max(branches, key=lambda c: c.flops, default=OpCounts(0.0, 0.0, 0.0))
    total = OpCounts(0.0, 0.0, 0.0)
    for name in op.called_subgraphs:
        total = total + graph_total(name)
    return total


#: Trips assumed for a WHILE loop whose bound cannot be read from its condition.
DEFAULT_TRIP_COUNT = 1
_COMPARISONS = {"LESS": 0, "LESS_EQUAL": 1, "GREATER": 0, "GREATER_EQUAL": 1, "NOT_EQUAL": 0}


def trip_count(
    G: nx.MultiDiGraph, node: str, *, root: nx.MultiDiGraph | None = None
) -> tuple[int, bool]:
    """Trip count of WHILE op ``node``: ``(trips, known)``.

    Read from the condition graph: each comparison ``counter < bound`` (or ``<=``, ``>``, ...)
    where the counter is a loop variable whose initial value and the bound are constants (in the
    condition graph, or fed to the WHILE as constants) bounds the loop; the smallest bound wins
    (Keras loops compare both a step counter and a time index). Otherwise
    ``(DEFAULT_TRIP_COUNT, False)``.
    """
    root = G if root is None else root
    op: Op = G.nodes[node]["op"]
    cond = root.graph.get("subgraphs", {}).get(op.options.get("cond_subgraph", ""))
    if cond is None:
        return DEFAULT_TRIP_COUNT, False
    outer = G.graph["tensors"]

    def value(S: nx.MultiDiGraph, name: str) -> int | None:
        t = S.graph["tensors"][name]
        if name in S.graph["inputs"]:
            k = S.graph["inputs"].index(name)
            if k < len(op.inputs) and op.inputs[k] is not None:
                t = outer[op.inputs[k]]
        if t.buffer is None or t.buffer.is_placeholder or t.num_elements != 1:
            return None
        try:
            return int(np.asarray(t.data()).reshape(-1)[0])
        except (GraphError, ValueError, TypeError):
            return None

    found: list[int] = []
    for _, cop in cond.nodes(data="op"):
        if cop.kind not in _COMPARISONS or len(cop.inputs) != 2 or None in cop.inputs:
            continue
        a, b = cop.inputs
        va, vb = value(cond, a), value(cond, b)
        if va is None or vb is None:
            continue
        lo, hi = (va, vb) if cop.kind in ("LESS", "LESS_EQUAL", "NOT_EQUAL") else (vb, va)
        found.append(max(hi - lo + _COMPARISONS[cop.kind], 0))
    if not found:
        return DEFAULT_TRIP_COUNT, False
    return min(found), True

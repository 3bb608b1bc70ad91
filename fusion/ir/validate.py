"""The one checker of the IR's invariants (:func:`validate_graph`; one tensor record:
:func:`tensor_problem`).

Examples
--------
>>> from tacopt.fusion.ir.graph import make_graph
>>> from tacopt.fusion.ir.records import Op, Tensor
>>> G = make_graph("g", [Tensor("x", (2,), "float32"), Tensor("y", (3,), "float32")],
...                [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
>>> validate_graph(G)
Traceback (most recent call last):
...
tacopt.errors.GraphError: graph 'g': op 'relu_0' (RELU): output shape (3,), ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import networkx as nx
import numpy as np

from tacopt.errors import GraphError
from tacopt.fusion.ir.graph import ops_of
from tacopt.fusion.ir.records import DTYPE_NBYTES, Op, Quantization, Tensor

_ELEMENTWISE_BINARY = frozenset(
    {
        "ADD",
        "SUB",
        "MUL",
        "DIV",
        "MAXIMUM",
        "MINIMUM",
        "SQUARED_DIFFERENCE",
        "POW",
        "FLOOR_DIV",
        "FLOOR_MOD",
        "LESS",
        "LESS_EQUAL",
        "GREATER",
        "GREATER_EQUAL",
        "EQUAL",
        "NOT_EQUAL",
        "LOGICAL_AND",
        "LOGICAL_OR",
    }
)


_UNARY = frozenset(
    {
        "ABS", "CAST", "CEIL", "COS", "DEQUANTIZE", "ELU", "EXP", "FLOOR", "GELU", "HARD_SWISH",
        "L2_NORMALIZATION", "L2_POOL_2D", "LEAKY_RELU", "LOCAL_RESPONSE_NORMALIZATION", "LOG",
        "LOG_SOFTMAX", "LOGICAL_NOT", "LOGISTIC", "MAX_POOL_2D", "AVERAGE_POOL_2D", "NEG",
        "QUANTIZE", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "ROUND", "RSQRT", "SHAPE",
        "SIGN", "SIN", "SOFTMAX", "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "SQRT", "SQUARE", "SQUEEZE",
        "TANH", "ZEROS_LIKE", "ONES_LIKE", "RANK", "UNPACK", "CONCATENATION", "PACK",
        "UNIDIRECTIONAL_SEQUENCE_LSTM", "RESHAPE",
    }
)  # fmt: skip

#: Kinds with one input whose output has the input's shape.
_ELEMENTWISE_UNARY = frozenset(
    {
        "ABS", "CAST", "CEIL", "COS", "DEQUANTIZE", "ELU", "EXP", "FLOOR", "GELU", "HARD_SWISH",
        "L2_NORMALIZATION", "LEAKY_RELU", "LOG", "LOG_SOFTMAX", "LOGICAL_NOT", "LOGISTIC", "NEG",
        "QUANTIZE", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "ROUND", "RSQRT", "SIGN",
        "SIN", "SOFTMAX", "SQRT", "SQUARE", "TANH", "ZEROS_LIKE", "ONES_LIKE",
    }
)  # fmt: skip

#: Kinds whose inputs and outputs all have one rank (split pieces, concatenated parts).
_SAME_RANK = frozenset({"SPLIT", "SPLIT_V", "CONCATENATION"})

#: Required (non-omitted) leading inputs of kinds whose kernels and rewrite rules index them by
#: slot (optional trailing inputs, such as a convolution's bias, are not counted).
_REQUIRED_INPUTS: dict[str, int] = {
    **dict.fromkeys(_UNARY, 1),
    **dict.fromkeys(_ELEMENTWISE_BINARY, 2),
    "CONV_2D": 2, "DEPTHWISE_CONV_2D": 2, "FULLY_CONNECTED": 2, "TRANSPOSE_CONV": 3,
    "BATCH_MATMUL": 2, "EMBEDDING_LOOKUP": 2, "GATHER": 2, "GATHER_ND": 2, "TRANSPOSE": 2,
    "PAD": 2, "PADV2": 3, "MIRROR_PAD": 2, "MEAN": 2, "SUM": 2, "REDUCE_MAX": 2,
    "REDUCE_MIN": 2, "REDUCE_PROD": 2, "REDUCE_ANY": 2, "REDUCE_ALL": 2, "ARG_MAX": 2,
    "ARG_MIN": 2, "EXPAND_DIMS": 2, "TILE": 2, "BROADCAST_TO": 2, "FILL": 2, "PRELU": 2,
    "REVERSE_V2": 2, "RESIZE_BILINEAR": 2, "RESIZE_NEAREST_NEIGHBOR": 2, "CUMSUM": 2,
    "SPLIT": 2, "SPLIT_V": 3, "SLICE": 3, "STRIDED_SLICE": 4, "SELECT": 3, "SELECT_V2": 3,
    "ONE_HOT": 4, "TOPK_V2": 2,
}  # fmt: skip

#: Kinds with several outputs (every other kind in ``_REQUIRED_INPUTS`` has exactly one), and the
#: option giving their number.
_MULTI_OUTPUT = {"SPLIT": "num_splits", "SPLIT_V": "num_splits", "UNPACK": "num", "TOPK_V2": None}

#: Kinds that may have no outputs (state updates, calls); every other op needs at least one.
_NO_OUTPUT_KINDS = frozenset({"ASSIGN_VARIABLE", "CALL_ONCE", "CALL", "WHILE", "IF"})

#: The largest tensor accepted, in bytes (256 TiB): beyond any device, and small enough that
#: byte counts and products of sizes stay exact in float64 and never overflow int64.
MAX_TENSOR_BYTES = 1 << 48

#: Zero points must fit the storage type of their tensor.
_ZERO_POINT_RANGE = {
    "int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
    "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1),
}  # fmt: skip

#: The largest scale per dtype whose real values ``scale * (q - zero_point)`` stay finite in
#: float32 (dequantized weights are float32): float32's max over the storage type's range.
_MAX_SCALE = {
    dtype: float(np.finfo(np.float32).max) / 2.0 ** (8 * max(nbytes, 1))
    for dtype, nbytes in DTYPE_NBYTES.items()
}


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    if a == b:
        return tuple(a)  # the common case, without numpy's overhead
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def validate_graph(G: nx.MultiDiGraph, *, _root: nx.MultiDiGraph | None = None) -> None:
    """Check the IR invariants of ``G`` and its nested graphs; raise :class:`GraphError` if broken.

    Checked, for the main graph and every nested graph:

    - **structure**: every node holds an :class:`Op` named like the node; every tensor an op names
      exists; each tensor is produced at most once and never when it is a graph input; every
      consumed tensor is produced before, a graph input, a constant or a variable (so there is no
      cycle and node order is an execution order); edges are exactly the producer -> consumer
      pairs (one per tensor and consumer) and carry the table's tensor record;
    - **ops**: the required inputs and the number of outputs of each kind; element-wise binary ops
      broadcast; called graphs exist, agree in arity (WHILE, IF) and never call themselves,
      directly or through other graphs;
    - **tensors** (:func:`tensor_problem`): shapes, a size of at most :data:`MAX_TENSOR_BYTES`,
      constant and placeholder byte lengths equal to elements x element size, quantization
      parameters and sparsity parameters.

    Examples
    --------
    >>> from tacopt.fusion.ir.graph import make_graph
    >>> G = make_graph("g", [Tensor("x", (2,), "float32")], [], ["x"], ["x"])
    >>> validate_graph(G)
    >>> G.graph["outputs"] = ("nope",)
    >>> validate_graph(G)
    Traceback (most recent call last):
    ...
    tacopt.errors.GraphError: graph 'g': output tensor 'nope' does not exist
    """
    gname = G.graph.get("name", "?")
    root = G if _root is None else _root

    def fail(msg: str) -> None:
        raise GraphError(f"graph '{gname}': {msg}")

    for key in ("tensors", "inputs", "outputs"):
        if key not in G.graph:
            fail(f"missing graph attribute '{key}'")
    tensors: dict[str, Tensor] = G.graph["tensors"]
    inputs = set(G.graph["inputs"])
    for t in G.graph["inputs"]:
        if t not in tensors:
            fail(f"input tensor '{t}' does not exist")
    for rec in tensors.values():
        problem = tensor_problem(rec)
        if problem is not None:
            fail(problem)

    producer: dict[str, str] = {}
    expected_edges: set[tuple[str, str, str]] = set()
    for n, data in G.nodes(data=True):
        op = data.get("op")
        if not isinstance(op, Op):
            fail(f"node '{n}' has no Op record")
        if op.name != n:
            fail(f"node '{n}' holds op named '{op.name}'")
        for slot, t in enumerate(op.inputs):
            if t is None:
                continue
            if t not in tensors:
                fail(f"op '{n}' input {slot}: tensor '{t}' does not exist")
            rec = tensors[t]
            if t in producer:
                expected_edges.add((producer[t], n, t))
            elif t not in inputs and not rec.is_constant and not rec.is_variable:
                later = next((m for m, o in ops_of(G) if t in o.outputs), None)
                if later is not None:
                    fail(
                        f"op '{n}' input {slot}: tensor '{t}' is produced later, by op "
                        f"'{later}' (a cycle, or ops out of execution order)"
                    )
                fail(
                    f"op '{n}' input {slot}: tensor '{t}' is not produced before it, "
                    "not a graph input, not a constant and not a variable"
                )
        for t in op.outputs:
            if t not in tensors:
                fail(f"op '{n}' output tensor '{t}' does not exist")
            if t in producer:
                fail(f"tensor '{t}' is produced by both '{producer[t]}' and '{n}'")
            if t in inputs:
                fail(f"graph input '{t}' is produced by op '{n}'")
            if tensors[t].is_constant:
                fail(f"op '{n}' writes constant tensor '{t}'")
            producer[t] = n
        _check_arity(op, fail)
        _check_shapes(G, op, tensors, fail)
        for sub in op.called_subgraphs:
            _check_call(root, op, sub, fail)

    for u, v, k, data in G.edges(keys=True, data=True):
        if (u, v, k) not in expected_edges:
            fail(f"edge {u} -> {v} for tensor '{k}' does not match the ops' inputs and outputs")
        rec = data.get("tensor")
        if rec is not tensors[k] and rec != tensors[k]:
            fail(f"edge {u} -> {v} carries a record of '{k}' that differs from the tensor table")
    if G.number_of_edges() != len(expected_edges):
        missing = sorted(expected_edges - set(G.edges(keys=True)))[:1]
        fail(f"missing edge {missing[0][0]} -> {missing[0][1]} for tensor '{missing[0][2]}'")

    for t in G.graph["outputs"]:
        if t not in tensors:
            fail(f"output tensor '{t}' does not exist")

    if G is root:
        subgraphs = G.graph.get("subgraphs", {})
        for sub in subgraphs.values():
            validate_graph(sub, _root=root)
        _check_recursion(G, subgraphs)


def tensor_problem(t: Tensor) -> str | None:
    """What is wrong with the tensor record ``t`` on its own, in one line (None if nothing).

    Checks the shape (no dimension below -1, none negative in a constant), the size (at most
    :data:`MAX_TENSOR_BYTES`), the byte length of the constant or placeholder (elements x element
    size; sub-byte types packed or one per byte), the quantization parameters (as many zero points
    as scales; one scale, or one per index of the quantized dimension, which must exist; scales
    finite and positive; zero points inside the storage type; as many min as max values, finite)
    and the sparsity parameters (see :func:`_sparsity_problem`).

    Examples
    --------
    >>> from tacopt.fusion.ir.records import Buffer
    >>> tensor_problem(Tensor("w", (2, 3), "float32", buffer=Buffer.from_bytes(bytes(24))))
    >>> tensor_problem(Tensor("w", (2, 3), "float32", buffer=Buffer.placeholder(2**33)))
    "tensor 'w': constant holds 8589934592 bytes, but shape (2, 3) of float32 needs 24"
    >>> tensor_problem(Tensor("x", (4,), "int8", quantization=Quantization((0.0,), (0,))))
    "tensor 'x': quantization scale 0.0 is not finite and positive"
    """
    shape = t.shape
    itemsize = DTYPE_NBYTES.get(t.dtype)
    if itemsize is None:
        return f"{_what(t)}: unknown dtype '{t.dtype}'"
    low = min(shape) if shape else 1
    if low < 1:
        if low < -1 or (low < 0 and t.buffer is not None):
            return f"{_what(t)}: shape {shape} has a negative dimension"
        elements = t.num_elements
    else:
        elements = math.prod(shape)
    if elements * max(itemsize, 1) > MAX_TENSOR_BYTES:
        return (
            f"{_what(t)}: shape {shape} of {t.dtype} is {elements * max(itemsize, 1):.3g} bytes, "
            f"more than the {MAX_TENSOR_BYTES:,} tacopt accepts"
        )
    if t.buffer is not None and t.sparsity is None and itemsize:
        elements = math.prod(shape)
        nbytes = t.buffer.nbytes
        want = math.ceil(elements * itemsize)
        if nbytes != want and not (itemsize < 1 and nbytes == elements):
            return (
                f"{_what(t)}: constant holds {nbytes} bytes, but shape {shape} of {t.dtype} "
                f"needs {want}"
            )
    if t.quantization is not None:
        problem = _quantization_problem(t, t.quantization)
        if problem is not None:
            return f"{_what(t)}: {problem}"
    if t.sparsity is not None:
        problem = _sparsity_problem(t, t.sparsity)
        if problem is not None:
            return f"{_what(t)}: sparsity: {problem}"
    return None


def _what(t: Tensor) -> str:
    if t.buffer is not None and t.buffer.index is not None:
        return f"tensor '{t.name}' (buffer {t.buffer.index})"
    return f"tensor '{t.name}'"


def _quantization_problem(t: Tensor, q: Quantization) -> str | None:
    if len(q.scale) == 1 and len(q.zero_point) == 1 and not q.min and not q.max and not q.axis:
        # The common per-tensor case, checked at once (validation runs on every model read).
        low, high = _ZERO_POINT_RANGE.get(t.dtype, (-math.inf, math.inf))
        if 0 < q.scale[0] <= _MAX_SCALE.get(t.dtype, 0) and low <= q.zero_point[0] <= high:
            return None
    if len(q.min) != len(q.max):
        return f"quantization has {len(q.min)} min but {len(q.max)} max values"
    if q.min and not math.isfinite(sum(q.min) + sum(q.max)):
        return "quantization min / max values are not finite"
    n = len(q.scale)
    if n == 0:
        return "quantization has zero points but no scales" if q.zero_point else None
    if len(q.zero_point) != n:
        return f"quantization has {n} scales but {len(q.zero_point)} zero points"
    rank = len(t.shape)
    if not 0 <= q.axis < max(rank, 1):
        return f"quantized dimension {q.axis} is out of range for shape {t.shape}"
    if n > 1 and (rank == 0 or t.shape[q.axis] != n):
        return f"{n} quantization scales for dimension {q.axis} of shape {t.shape}"
    if not (math.isfinite(sum(q.scale)) and min(q.scale) > 0):  # sum: NaN and inf stick
        bad = next(s for s in q.scale if not 0 < s < math.inf)
        return f"quantization scale {bad} is not finite and positive"
    if max(q.scale) > _MAX_SCALE.get(t.dtype, 0):
        return (
            f"quantization scale {max(q.scale):.3g} makes {t.dtype} values overflow float32 "
            f"(at most {_MAX_SCALE.get(t.dtype, 0):.3g})"
        )
    low, high = _ZERO_POINT_RANGE.get(t.dtype, (-math.inf, math.inf))
    if q.zero_point.count(0) == n:
        return None  # symmetric (weights): one pass
    if not low <= min(q.zero_point) or not max(q.zero_point) <= high:
        bad_zero = next(z for z in q.zero_point if not low <= z <= high)
        return f"zero point {bad_zero} does not fit {t.dtype}"
    return None


def _sparsity_problem(t: Tensor, sp: Mapping[str, Any]) -> str | None:
    """Sparsity parameters that do not describe ``t``'s buffer (TFLite's format, checked whole).

    ``traversal_order`` is a permutation of the rank + block dimensions, ``block_map`` names
    distinct dimensions, one ``dim_metadata`` per traversed dimension; DENSE levels multiply the
    stored count by ``dense_size``, SPARSE_CSR levels have one segment per stored entry (plus
    one), non-decreasing from 0, and as many indices (each inside the dimension) as the last
    segment says; the buffer holds exactly the stored count of values.
    """
    rank = len(t.shape)
    order = tuple(sp.get("traversal_order") or ())
    blocks = tuple(sp.get("block_map") or ())
    dims = tuple(sp.get("dim_metadata") or ())
    if sorted(order) != list(range(rank + len(blocks))):
        return f"traversal order {order} is not a permutation of {rank + len(blocks)} dimensions"
    if len(set(blocks)) != len(blocks) or any(not 0 <= b < rank for b in blocks):
        return f"block map {blocks} does not name distinct dimensions of rank {rank}"
    if len(dims) != len(order):
        return f"{len(dims)} dimension metadata for {len(order)} traversed dimensions"
    count = 1
    for level, (d, meta) in enumerate(zip(order, dims)):
        size = t.shape[d] if d < rank else t.shape[blocks[d - rank]]
        fmt = meta.get("format") if isinstance(meta, Mapping) else None
        if fmt == "DENSE":
            dense = meta.get("dense_size")
            if not isinstance(dense, int) or not 0 <= dense <= max(size, 0):
                return f"level {level}: dense size {dense} for a dimension of {size}"
            count *= dense
        elif fmt == "SPARSE_CSR":
            segments = tuple((meta.get("array_segments") or {}).get("values") or ())
            indices = tuple((meta.get("array_indices") or {}).get("values") or ())
            if len(segments) != count + 1 or segments[0] != 0:
                return f"level {level}: {len(segments)} segments for {count} entries"
            if any(a > b for a, b in zip(segments, segments[1:])):
                return f"level {level}: segments decrease"
            if len(indices) != segments[-1] or any(not 0 <= i < size for i in indices):
                return f"level {level}: indices do not match the segments or the dimension"
            count = len(indices)
        else:
            return f"level {level}: unknown format {fmt!r}"
    itemsize = DTYPE_NBYTES.get(t.dtype, 0)
    if t.buffer is not None and itemsize and t.buffer.nbytes != math.ceil(count * itemsize):
        return f"buffer holds {t.buffer.nbytes} bytes for {count} stored values of {t.dtype}"
    return None


def _check_arity(op: Op, fail: Any) -> None:
    required = _REQUIRED_INPUTS.get(op.kind)
    if not op.outputs and op.kind not in _NO_OUTPUT_KINDS:
        fail(f"op '{op.name}' ({op.kind}) has no outputs")
    if required is None:
        return
    if len(op.inputs) < required or any(t is None for t in op.inputs[:required]):
        fail(f"op '{op.name}' ({op.kind}) needs its first {required} inputs, has {op.inputs}")
    if op.kind in _MULTI_OUTPUT:
        key = _MULTI_OUTPUT[op.kind]
        want = op.options.get(key) if key is not None else None
        if want is not None and want != len(op.outputs):
            fail(f"op '{op.name}' ({op.kind}) has {len(op.outputs)} outputs but {key}={want}")
    elif len(op.outputs) != 1:
        fail(f"op '{op.name}' ({op.kind}) has {len(op.outputs)} outputs, expected 1")


def _check_shapes(G: nx.MultiDiGraph, op: Op, tensors: dict[str, Tensor], fail: Any) -> None:
    if op.kind in _SAME_RANK:
        # Pieces of a split, and parts of a concatenation, have the rank of the whole.
        whole = op.inputs[1] if op.kind == "SPLIT" else op.inputs[0]
        parts = op.inputs if op.kind == "CONCATENATION" else op.outputs
        if op.kind == "CONCATENATION":
            whole = op.outputs[0]
        rank = len(tensors[whole].shape)  # type: ignore[index]
        for t in parts:
            if t is not None and len(tensors[t].shape) != rank:
                fail(
                    f"op '{op.name}' ({op.kind}): tensor '{t}' has rank {len(tensors[t].shape)}"
                    f", '{whole}' has rank {rank}"
                )
        return
    if op.kind in _ELEMENTWISE_UNARY:
        if len(op.inputs) != 1:
            fail(f"op '{op.name}' ({op.kind}) has {len(op.inputs)} inputs, expected 1")
        x, y = tensors[op.inputs[0]], tensors[op.outputs[0]]  # type: ignore[index]
        if x.shape != y.shape and not any(-1 in (t.shape_signature or ()) for t in (x, y)):
            fail(f"op '{op.name}' ({op.kind}): output shape {y.shape}, input shape {x.shape}")
        return
    if op.kind in _ELEMENTWISE_BINARY and len(op.inputs) == 2 and all(op.inputs):
        a, b = (tensors[t] for t in op.inputs if t is not None)
        out = tensors[op.outputs[0]]
        dynamic = any(-1 in (t.shape_signature or ()) for t in (a, b, out))
        want = _broadcast(a.shape, b.shape)
        if want is None:
            fail(f"op '{op.name}' ({op.kind}): shapes {a.shape} and {b.shape} do not broadcast")
        if not dynamic and want is not None and tuple(out.shape) != want:
            fail(f"op '{op.name}' ({op.kind}): output shape {out.shape}, expected {want}")


def _check_call(root: nx.MultiDiGraph, op: Op, sub: str, fail: Any) -> None:
    subgraphs = root.graph.get("subgraphs", {})
    if sub not in subgraphs:
        fail(f"op '{op.name}' ({op.kind}) calls missing subgraph '{sub}'")
    S = subgraphs[sub]
    n_in, n_out = len(S.graph["inputs"]), len(S.graph["outputs"])
    if op.kind == "WHILE":
        n = len(op.inputs)
        if n_in != n:
            fail(f"op '{op.name}' (WHILE) has {n} inputs but '{sub}' takes {n_in}")
        if len(op.outputs) != n:
            fail(f"op '{op.name}' (WHILE) has {n} inputs but {len(op.outputs)} outputs")
        if sub == op.options.get("body_subgraph") and n_out != n:
            fail(f"op '{op.name}' (WHILE) has {n} inputs but body '{sub}' returns {n_out}")
        if sub == op.options.get("cond_subgraph") and n_out != 1:
            fail(f"op '{op.name}' (WHILE): condition '{sub}' returns {n_out} values, expected 1")
    elif op.kind == "IF":
        if n_in != len(op.inputs) - 1 or n_out != len(op.outputs):
            fail(
                f"op '{op.name}' (IF) has {len(op.inputs)} inputs and {len(op.outputs)} outputs "
                f"but branch '{sub}' takes {n_in} and returns {n_out}"
            )


def _check_recursion(G: nx.MultiDiGraph, subgraphs: Mapping[str, nx.MultiDiGraph]) -> None:
    """No graph calls itself, directly or through others (TFLite control flow cannot recurse)."""
    if not subgraphs:
        return  # a call to a missing graph was refused already
    calls = {
        g.graph.get("name"): sorted({s for _, op in ops_of(g) for s in op.called_subgraphs})
        for g in [G, *subgraphs.values()]
    }
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in calls:
        stack = [(start, iter(calls[start]))]
        state[start] = state.get(start) or 1
        if state[start] == 2:
            continue
        while stack:
            name, todo = stack[-1]
            nxt = next(todo, None)
            if nxt is None:
                state[name] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                path = " -> ".join([s for s, _ in stack] + [nxt])
                raise GraphError(f"graph '{nxt}' calls itself ({path}); recursion is not allowed")
            elif nxt in calls and state.get(nxt) is None:
                state[nxt] = 1
                stack.append((nxt, iter(calls[nxt])))

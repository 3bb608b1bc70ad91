"""The graph IR every tacopt pass reads and writes.

A model is a :class:`networkx.MultiDiGraph` ``G``:

- a **node** is an op name (``str``) with attribute ``op``: a frozen :class:`Op`;
- an **edge** ``u -> v`` (key = tensor name, attribute ``tensor``: a frozen :class:`Tensor`) exists
  for every activation tensor that ``u`` produces and ``v`` consumes, one edge per consumer;
- ``G.graph`` holds ``name``, ``tensors`` (name -> :class:`Tensor`, every tensor of the graph,
  constants included), ``inputs`` and ``outputs`` (tuples of tensor names), and on the main graph
  ``model`` (a :class:`ModelInfo`) and ``subgraphs`` (name -> nested graph, the bodies of WHILE /
  IF / CALL_ONCE ops, which reference them by name in their options and are never inlined).

Node insertion order is a valid execution order. :func:`validate_graph` is the one checker of
these invariants; every pass calls it on its output in the tests.

Examples
--------
>>> G = make_graph(
...     "g",
...     tensors=[Tensor("x", (1, 4), "float32"), Tensor("y", (1, 4), "float32"),
...              Tensor("z", (1, 4), "float32")],
...     ops=[Op("relu_0", "RELU", ("x",), ("y",)), Op("neg_1", "NEG", ("y",), ("z",))],
...     inputs=("x",), outputs=("z",))
>>> validate_graph(G)
>>> list(G.edges(keys=True))
[('relu_0', 'neg_1', 'y')]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from tacopt.fusion.errors import GraphError

# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------

#: TFLite ``TensorType`` enum value -> tacopt dtype name (numpy spelling where numpy has one).
TFLITE_DTYPES: dict[int, str] = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    5: "string",
    6: "bool",
    7: "int16",
    8: "complex64",
    9: "int8",
    10: "float64",
    11: "complex128",
    12: "uint64",
    13: "resource",
    14: "variant",
    15: "uint32",
    16: "uint16",
    17: "int4",
    18: "bfloat16",
    19: "int2",
    20: "uint4",
    21: "float8_e4m3fn",
    22: "float8_e5m2",
}
DTYPE_TO_TFLITE: dict[str, int] = {name: code for code, name in TFLITE_DTYPES.items()}

#: Bytes per element. Sub-byte types count as one byte (their storage is packed by TFLite, but
#: cost models and transfers reason in whole elements); string / resource / variant as zero.
DTYPE_NBYTES: dict[str, float] = {
    "float32": 4,
    "float16": 2,
    "int32": 4,
    "uint8": 1,
    "int64": 8,
    "string": 0,
    "bool": 1,
    "int16": 2,
    "complex64": 8,
    "int8": 1,
    "float64": 8,
    "complex128": 16,
    "uint64": 8,
    "resource": 0,
    "variant": 0,
    "uint32": 4,
    "uint16": 2,
    "int4": 0.5,
    "bfloat16": 2,
    "int2": 0.25,
    "uint4": 0.5,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}

_NUMPY_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "int32": np.int32,
    "uint8": np.uint8,
    "int64": np.int64,
    "bool": np.bool_,
    "int16": np.int16,
    "complex64": np.complex64,
    "int8": np.int8,
    "float64": np.float64,
    "complex128": np.complex128,
    "uint64": np.uint64,
    "uint32": np.uint32,
    "uint16": np.uint16,
}

FLOAT_DTYPES = frozenset({"float32", "float16", "float64", "bfloat16"})


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that stores ``dtype`` element by element (uint8 for packed/opaque types)."""
    return np.dtype(_NUMPY_DTYPES.get(dtype, np.uint8))


# --------------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Quantization:
    """Affine quantization: ``real = scale * (q - zero_point)``, per tensor or along ``axis``."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int = 0
    min: tuple[float, ...] = ()
    max: tuple[float, ...] = ()

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1


class Buffer:
    """Constant bytes of a tensor, viewed lazily from the bytes they were read from.

    Three states: a **view** into a source buffer (``source`` + ``offset`` + ``nbytes``; nothing is
    copied until :meth:`tobytes`), **owned** bytes (``Buffer.from_bytes``), or a **placeholder**
    whose bytes were dropped (structure-only models: only ``nbytes`` is known).
    """

    __slots__ = ("_source", "_offset", "nbytes")

    def __init__(self, source: Any, offset: int, nbytes: int) -> None:
        self._source = source
        self._offset = offset
        self.nbytes = int(nbytes)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview | np.ndarray) -> Buffer:
        raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        return cls(raw, 0, len(raw))

    @classmethod
    def placeholder(cls, nbytes: int) -> Buffer:
        return cls(None, 0, nbytes)

    @property
    def is_placeholder(self) -> bool:
        return self._source is None

    def view(self) -> memoryview:
        """The bytes as a read-only memoryview (no copy); raises :class:`GraphError` if dropped."""
        if self._source is None:
            raise GraphError(
                f"constant of {self.nbytes} bytes was dropped (structure-only model); "
                "fill it first with `tacopt rehydrate`"
            )
        mv = memoryview(self._source).cast("B")
        return mv[self._offset : self._offset + self.nbytes].toreadonly()

    def tobytes(self) -> bytes:
        return bytes(self.view())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Buffer):
            return NotImplemented
        if self.nbytes != other.nbytes or self.is_placeholder != other.is_placeholder:
            return False
        return self.is_placeholder or self.view() == other.view()

    def __hash__(self) -> int:
        return hash((self.nbytes, self.is_placeholder))

    def __repr__(self) -> str:
        state = "placeholder" if self.is_placeholder else "data"
        return f"Buffer({state}, nbytes={self.nbytes})"


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor record. ``buffer`` is set for constants (weights); activations have none."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    shape_signature: tuple[int, ...] | None = None
    quantization: Quantization | None = None
    is_variable: bool = False
    buffer: Buffer | None = field(default=None, compare=True)
    #: Sparsity parameters of a sparse constant (input of DENSIFY) as a plain dict.
    sparsity: Mapping[str, Any] | None = None

    @property
    def is_constant(self) -> bool:
        return self.buffer is not None

    @property
    def num_elements(self) -> int:
        return math.prod(max(d, 1) for d in self.shape) if self.shape else 1

    @property
    def nbytes(self) -> int:
        """Stored constant size, else elements x element size (dynamic dims count as 1)."""
        if self.buffer is not None and self.buffer.nbytes:
            return self.buffer.nbytes
        return math.ceil(self.num_elements * DTYPE_NBYTES.get(self.dtype, 0))

    @property
    def is_quantized(self) -> bool:
        return self.quantization is not None and bool(self.quantization.scale)

    def data(self) -> np.ndarray:
        """The constant's values as a read-only numpy view of shape ``shape`` (no copy).

        Raises :class:`GraphError` for an activation tensor or a dropped (placeholder) constant.
        """
        if self.buffer is None:
            raise GraphError(f"tensor '{self.name}' is not a constant")
        arr = np.frombuffer(self.buffer.view(), dtype=numpy_dtype(self.dtype))
        if arr.size == self.num_elements:
            return arr.reshape(self.shape)
        return arr  # packed (int4) or string data: raw storage


@dataclass(frozen=True, slots=True)
class Op:
    """An operator.

    ``kind`` is the builtin name (``"CONV_2D"``) or ``"CUSTOM:<code>"``. ``inputs`` are tensor names
    in slot order, ``None`` for an omitted optional input. ``options`` are the decoded builtin
    options (enums as names, e.g. ``{"padding": "SAME", "fused_activation_function": "RELU6"}``;
    subgraph references by name under keys such as ``cond_subgraph`` / ``body_subgraph``); treat
    it as read-only. ``origin`` lists the indices of the original ops this op stands for.
    """

    name: str
    kind: str
    inputs: tuple[str | None, ...]
    outputs: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    version: int = 1
    custom_options: bytes | None = None
    intermediates: tuple[str, ...] = ()
    origin: tuple[int, ...] = ()

    @property
    def is_custom(self) -> bool:
        return self.kind.startswith("CUSTOM:")

    def input(self, i: int) -> str:
        """The name of required input ``i``; :class:`GraphError` if it is omitted or missing.

        Examples
        --------
        >>> op = Op("fc_0", "FULLY_CONNECTED", ("x", "w", None), ("y",))
        >>> op.input(1)
        'w'
        >>> op.input(2)
        Traceback (most recent call last):
        ...
        tacopt.fusion.errors.GraphError: op 'fc_0' (FULLY_CONNECTED): input 2 is omitted
        """
        name = self.inputs[i] if -len(self.inputs) <= i < len(self.inputs) else None
        if name is None:
            raise GraphError(f"op '{self.name}' ({self.kind}): input {i} is omitted")
        return name

    @property
    def called_subgraphs(self) -> tuple[str, ...]:
        """Names of nested graphs this op calls (WHILE, IF, CALL_ONCE, CALL, composites)."""
        return tuple(
            v
            for k, v in sorted(self.options.items())
            if k.endswith("_subgraph") or k == "subgraph"
            if isinstance(v, str)
        )


@dataclass(frozen=True, slots=True)
class SignatureDef:
    """A named entry point: (public name, tensor name) pairs of a subgraph's inputs and outputs."""

    key: str
    subgraph: str
    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """Model-level facts kept on the main graph so a rewritten model keeps them."""

    version: int = 3
    description: str = ""
    metadata: tuple[tuple[str, bytes], ...] = ()
    signature_defs: tuple[SignatureDef, ...] = ()
    source: str | None = field(default=None, compare=False)


# --------------------------------------------------------------------------------------------
# building and reading graphs
# --------------------------------------------------------------------------------------------


def make_graph(
    name: str,
    tensors: Iterable[Tensor],
    ops: Iterable[Op],
    inputs: Iterable[str],
    outputs: Iterable[str],
    *,
    model: ModelInfo | None = None,
    subgraphs: Mapping[str, nx.MultiDiGraph] | None = None,
) -> nx.MultiDiGraph:
    """Build a graph from records; ops must come in execution order.

    This and :func:`add_op` are the only ways passes create graphs, so edges always agree with
    the ops' inputs and outputs.
    """
    G = nx.MultiDiGraph()
    G.graph["name"] = name
    G.graph["tensors"] = {t.name: t for t in tensors}
    G.graph["inputs"] = tuple(inputs)
    G.graph["outputs"] = tuple(outputs)
    if model is not None:
        G.graph["model"] = model
    if subgraphs is not None:
        G.graph["subgraphs"] = dict(subgraphs)
    producer: dict[str, str] = {}
    for op in ops:
        _add_op(G, op, producer)
    return G


def add_op(G: nx.MultiDiGraph, op: Op) -> None:
    """Append ``op`` to ``G`` (in place) and connect it to the producers of its inputs."""
    _add_op(G, op, producers(G))


def _add_op(G: nx.MultiDiGraph, op: Op, producer: dict[str, str]) -> None:
    if op.name in G:
        raise GraphError(f"graph '{G.graph.get('name')}': duplicate op name '{op.name}'")
    G.add_node(op.name, op=op)
    tensors = G.graph["tensors"]
    for t in dict.fromkeys(i for i in op.inputs if i is not None):
        src = producer.get(t)
        if src is not None:
            G.add_edge(src, op.name, key=t, tensor=tensors[t])
    for t in op.outputs:
        producer[t] = op.name


def producers(G: nx.MultiDiGraph) -> dict[str, str]:
    """Tensor name -> name of the op producing it."""
    return {t: n for n, op in ops_of(G) for t in op.outputs}


def consumers(G: nx.MultiDiGraph) -> dict[str, list[str]]:
    """Tensor name -> names of the ops consuming it, in execution order (each op once)."""
    out: dict[str, list[str]] = {}
    for n, op in ops_of(G):
        for t in dict.fromkeys(i for i in op.inputs if i is not None):
            out.setdefault(t, []).append(n)
    return out


def ops_of(G: nx.MultiDiGraph) -> Iterator[tuple[str, Op]]:
    """(name, op) pairs in execution order."""
    for n, data in G.nodes(data=True):
        yield n, data["op"]


def op_of(G: nx.MultiDiGraph, name: str) -> Op:
    return G.nodes[name]["op"]


def tensor_of(G: nx.MultiDiGraph, name: str) -> Tensor:
    return G.graph["tensors"][name]


def constant_inputs(G: nx.MultiDiGraph, name: str) -> list[tuple[int, Tensor]]:
    """(slot, tensor) pairs of the constant inputs (weights) of op ``name``."""
    tensors = G.graph["tensors"]
    return [
        (slot, tensors[t])
        for slot, t in enumerate(op_of(G, name).inputs)
        if t is not None and tensors[t].is_constant
    ]


def all_graphs(G: nx.MultiDiGraph) -> list[nx.MultiDiGraph]:
    """The main graph followed by its nested graphs in their stored order."""
    return [G, *G.graph.get("subgraphs", {}).values()]


# --------------------------------------------------------------------------------------------
# the checker
# --------------------------------------------------------------------------------------------

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


#: Required (non-omitted) leading inputs of kinds whose kernels index them by slot.
_REQUIRED_INPUTS = {
    "CONV_2D": 2, "DEPTHWISE_CONV_2D": 2, "FULLY_CONNECTED": 2, "TRANSPOSE_CONV": 3,
    "BATCH_MATMUL": 2, "EMBEDDING_LOOKUP": 2, "GATHER": 2, "RESHAPE": 1, "TRANSPOSE": 2,
}  # fmt: skip


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def validate_graph(G: nx.MultiDiGraph, *, _root: nx.MultiDiGraph | None = None) -> None:
    """Check the IR invariants of ``G`` and its nested graphs; raise :class:`GraphError` if broken.

    Checked: every node holds an :class:`Op` named like the node; every tensor an op names exists;
    each tensor is produced at most once and never when it is a graph input; every consumed tensor
    is produced, a graph input, a constant or a variable; edges are exactly the producer -> consumer
    pairs (one per tensor and consumer) and carry the table's tensor record; node order is an
    execution order (so the graph is acyclic); element-wise binary ops broadcast; WHILE bodies and
    called graphs exist and agree in arity.

    Examples
    --------
    >>> G = make_graph("g", [Tensor("x", (2,), "float32")], [], ["x"], ["x"])
    >>> validate_graph(G)
    >>> G.graph["outputs"] = ("nope",)
    >>> validate_graph(G)
    Traceback (most recent call last):
    ...
    tacopt.fusion.errors.GraphError: graph 'g': output tensor 'nope' does not exist
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
        _check_shapes(G, op, tensors, fail)
        for sub in op.called_subgraphs:
            _check_call(root, op, sub, fail)

    for u, v, k, data in G.edges(keys=True, data=True):
        if (u, v, k) not in expected_edges:
            fail(f"edge {u} -> {v} for tensor '{k}' does not match the ops' inputs and outputs")
        if data.get("tensor") != tensors[k]:
            fail(f"edge {u} -> {v} carries a record of '{k}' that differs from the tensor table")
    if G.number_of_edges() != len(expected_edges):
        missing = sorted(expected_edges - set(G.edges(keys=True)))[:1]
        fail(f"missing edge {missing[0][0]} -> {missing[0][1]} for tensor '{missing[0][2]}'")

    for t in G.graph["outputs"]:
        if t not in tensors:
            fail(f"output tensor '{t}' does not exist")

    if G is root:
        for sub in G.graph.get("subgraphs", {}).values():
            validate_graph(sub, _root=root)


def _check_shapes(G: nx.MultiDiGraph, op: Op, tensors: dict[str, Tensor], fail: Any) -> None:
    required = _REQUIRED_INPUTS.get(op.kind, 0)
    if len(op.inputs) < required or any(t is None for t in op.inputs[:required]):
        fail(f"op '{op.name}' ({op.kind}) needs its first {required} inputs, has {op.inputs}")
    if op.kind in _ELEMENTWISE_BINARY and len(op.inputs) == 2 and all(op.inputs):
        if len(op.outputs) != 1:
            fail(f"op '{op.name}' ({op.kind}) has {len(op.outputs)} outputs, expected 1")
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
    if op.kind == "WHILE":
        S = subgraphs[sub]
        n_in = len(S.graph["inputs"])
        if n_in != len(op.inputs):
            fail(f"op '{op.name}' (WHILE) has {len(op.inputs)} inputs but '{sub}' takes {n_in}")


# --------------------------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------------------------


def ir_diff(A: nx.MultiDiGraph, B: nx.MultiDiGraph, *, limit: int = 10) -> list[str]:
    """Human-readable differences between two IRs (empty when they are identical).

    Compares, for the main and every nested graph: ops (name, kind, version, options, inputs,
    outputs, custom options, intermediates) in order, tensor records (constant bytes included),
    inputs and outputs; and the model info. Used by the reader/writer round-trip tests.
    """
    diffs: list[str] = []
    if A.graph.get("model") != B.graph.get("model"):
        diffs.append("model info differs")
    subs_a = [A, *A.graph.get("subgraphs", {}).values()]
    subs_b = [B, *B.graph.get("subgraphs", {}).values()]
    if len(subs_a) != len(subs_b):
        diffs.append(f"{len(subs_a)} vs {len(subs_b)} graphs")
    for GA, GB in zip(subs_a, subs_b):
        name = GA.graph.get("name")
        for key in ("name", "inputs", "outputs"):
            if GA.graph.get(key) != GB.graph.get(key):
                diffs.append(f"graph '{name}': {key} differ")
        ops_a, ops_b = list(ops_of(GA)), list(ops_of(GB))
        if len(ops_a) != len(ops_b):
            diffs.append(f"graph '{name}': {len(ops_a)} vs {len(ops_b)} ops")
        for (_, oa), (_, ob) in zip(ops_a, ops_b):
            if oa != ob:
                diffs.append(f"graph '{name}': op '{oa.name}' differs: {oa} != {ob}")
        ta, tb = GA.graph["tensors"], GB.graph["tensors"]
        if set(ta) != set(tb):
            diffs.append(f"graph '{name}': tensor names differ: {sorted(set(ta) ^ set(tb))[:5]}")
        for t in sorted(set(ta) & set(tb)):
            if ta[t] != tb[t]:
                diffs.append(f"graph '{name}': tensor '{t}' differs: {ta[t]} != {tb[t]}")
        if sorted(GA.edges(keys=True)) != sorted(GB.edges(keys=True)):
            diffs.append(f"graph '{name}': edges differ")
        if len(diffs) >= limit:
            break
    return diffs[:limit]

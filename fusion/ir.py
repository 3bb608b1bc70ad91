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

    __slots__ = ("_source", "_offset", "nbytes", "index")

    def __init__(self, source: Any, offset: int, nbytes: int, index: int | None = None) -> None:
        self._source = source
        self._offset = offset
        self.nbytes = int(nbytes)
        #: Index of the buffer in the file it was read from (for messages only; not compared).
        self.index = index

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview | np.ndarray) -> Buffer:
        raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        return cls(raw, 0, len(raw))

    @classmethod
    def placeholder(cls, nbytes: int, index: int | None = None) -> Buffer:
        return cls(None, 0, nbytes, index)

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
        keys = [k for k in self.options if k.endswith("subgraph")]  # most ops: none, at once
        return tuple(
            v
            for k in sorted(keys)
            if k.endswith("_subgraph") or k == "subgraph"
            if isinstance(v := self.options[k], str)
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

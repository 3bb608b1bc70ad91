"""Write small models from primitive ops: the graph builder every test uses.

:class:`GraphBuilder` hands out tensor names: :meth:`~GraphBuilder.input` declares a graph input,
:meth:`~GraphBuilder.const` a constant from a numpy array, :meth:`~GraphBuilder.op` appends an op
whose output shape and dtype are inferred for the common kinds (or given with ``shape=`` /
``dtype=``), and :meth:`~GraphBuilder.build` returns the IR of :mod:`tacopt.fusion.ir` through
:func:`tacopt.fusion.ir.make_graph`. Ops are named like the reader names them,
``f"{kind.lower()}_{index}"``; an op's single output tensor gets the op's name (``name:i`` when
there are several). Options use the schema's field names (``padding``, ``stride_w``,
``fused_activation_function``, ...) with enums as names; unset options of the common kinds get
TFLite's defaults.

A conv with a folded-away batch norm left as MUL + ADD::

    x (1,8,8,3) ──CONV_2D(w, b)──MUL(s)──ADD(t)──► y

>>> import numpy as np
>>> b = GraphBuilder("bn")
>>> x = b.input("x", (1, 8, 8, 3))
>>> h = b.op("CONV_2D", x, np.ones((4, 3, 3, 3)), np.zeros(4), padding="SAME")
>>> y = b.op("ADD", b.op("MUL", h, np.full(4, 2.0)), np.ones(4))
>>> G = b.build(outputs=[y])
>>> [(n, G.graph["tensors"][n].shape) for n in G]
[('conv_2d_0', (1, 8, 8, 4)), ('mul_1', (1, 8, 8, 4)), ('add_2', (1, 8, 8, 4))]

A composite region, the way ``tf.function(experimental_implements="embedding_lookup")`` marks
one; ``G.graph["composites"]`` records it (inputs in first-use order, constants included)::

    ids (4,) int32 ──┐
                     ├─[ embedding_lookup: GATHER ]──► rows (4, 8)
    table (100, 8) ──┘

>>> b = GraphBuilder("emb")
>>> ids = b.input("ids", (4,), "int32")
>>> with b.composite("embedding_lookup", max_norm=0.0):
...     rows = b.op("GATHER", np.zeros((100, 8), np.float32), ids, axis=0)
>>> G = b.build(outputs=[rows])
>>> c = G.graph["composites"][0]
>>> c.implements, c.inputs, c.outputs, c.ops
('embedding_lookup', ('const_0', 'ids'), ('gather_0',), ('gather_0',))

The decorator form marks every call of a function as a new region:

>>> b = GraphBuilder("swish")
>>> @b.composite("swish")
... def swish(t):
...     return b.op("MUL", t, b.op("LOGISTIC", t))
>>> G = b.build(outputs=[swish(b.input("x", (2, 3)))])
>>> G.graph["composites"][0].ops
('logistic_0', 'mul_1')
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import networkx as nx
import numpy as np

from tacopt.errors import GraphError
from tacopt.fusion.ir import Buffer, Composite, ModelInfo, Op, Quantization, Tensor, make_graph

#: Options every op of a kind gets unless given (TFLite's schema defaults, enums as names).
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "CONV_2D": {
        "padding": "SAME",
        "stride_w": 1,
        "stride_h": 1,
        "dilation_w_factor": 1,
        "dilation_h_factor": 1,
        "fused_activation_function": "NONE",
    },
    "DEPTHWISE_CONV_2D": {
        "padding": "SAME",
        "stride_w": 1,
        "stride_h": 1,
        "depth_multiplier": 1,
        "dilation_w_factor": 1,
        "dilation_h_factor": 1,
        "fused_activation_function": "NONE",
    },
    "TRANSPOSE_CONV": {
        "padding": "SAME",
        "stride_w": 1,
        "stride_h": 1,
        "fused_activation_function": "NONE",
    },
    "FULLY_CONNECTED": {
        "fused_activation_function": "NONE",
        "weights_format": "DEFAULT",
        "keep_num_dims": False,
        "asymmetric_quantize_inputs": False,
    },
    "AVERAGE_POOL_2D": {
        "padding": "VALID",
        "stride_w": 1,
        "stride_h": 1,
        "filter_width": 1,
        "filter_height": 1,
        "fused_activation_function": "NONE",
    },
    "ADD": {"fused_activation_function": "NONE"},
    "SUB": {"fused_activation_function": "NONE"},
    "MUL": {"fused_activation_function": "NONE"},
    "DIV": {"fused_activation_function": "NONE"},
    "CONCATENATION": {"axis": 0, "fused_activation_function": "NONE"},
    "SOFTMAX": {"beta": 1.0},
    "MEAN": {"keep_dims": False},
    "SUM": {"keep_dims": False},
    "REDUCE_MAX": {"keep_dims": False},
    "GATHER": {"axis": 0, "batch_dims": 0},
    "BATCH_MATMUL": {"adj_x": False, "adj_y": False, "asymmetric_quantize_inputs": False},
    "GELU": {"approximate": False},
    "LEAKY_RELU": {"alpha": 0.2},
    "L2_NORMALIZATION": {"fused_activation_function": "NONE"},
}
DEFAULT_OPTIONS["MAX_POOL_2D"] = DEFAULT_OPTIONS["AVERAGE_POOL_2D"]

#: Kinds whose output has the first input's shape and dtype.
SAME_SHAPE_KINDS = frozenset(
    "RELU RELU6 RELU_N1_TO_1 RELU_0_TO_1 LOGISTIC TANH HARD_SWISH GELU ELU LEAKY_RELU PRELU NEG "
    "ABS EXP LOG SQRT RSQRT SQUARE SIN COS FLOOR CEIL ROUND SIGN SOFTMAX LOG_SOFTMAX "
    "L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION REVERSE_V2 QUANTIZE ZEROS_LIKE ONES_LIKE "
    "LOGICAL_NOT".split()
)
#: Element-wise binary kinds (output: broadcast shape; comparisons give bool).
BINARY_KINDS = frozenset(
    "ADD SUB MUL DIV POW MAXIMUM MINIMUM SQUARED_DIFFERENCE FLOOR_DIV FLOOR_MOD".split()
)
COMPARISON_KINDS = frozenset(
    "LESS LESS_EQUAL GREATER GREATER_EQUAL EQUAL NOT_EQUAL LOGICAL_AND LOGICAL_OR".split()
)
_REDUCE_KINDS = frozenset("MEAN SUM REDUCE_MAX REDUCE_MIN REDUCE_PROD".split())

_BUILDER_KEYS = ("shape", "dtype", "name", "outputs", "quantization", "n_outputs")


def window_out(size: int, kernel: int, stride: int, padding: str, dilation: int = 1) -> int:
    """Output length of a window (convolution, pooling) sliding over ``size`` positions, as
    TFLite computes it: ceil(size / stride) with SAME padding, else (VALID) the positions a
    dilated kernel fits whole.

    >>> window_out(7, 3, 2, "SAME"), window_out(7, 3, 2, "VALID"), window_out(7, 3, 1, "VALID", 2)
    (4, 3, 3)
    """
    if padding == "SAME":
        return -(-size // stride)
    return (size - dilation * (kernel - 1) - 1) // stride + 1


class GraphBuilder:
    """Builds one graph (and its nested graphs) op by op; see the module docstring.

    Parameters
    ----------
    name : str
        Name of the graph (``G.graph["name"]``).
    """

    def __init__(self, name: str = "main") -> None:
        self.name = name
        self._tensors: dict[str, Tensor] = {}
        self._ops: list[Op] = []
        self._inputs: list[str] = []
        self._kind_counter = 0
        self._const_counter = 0
        self._children: dict[str, GraphBuilder] = {}
        self._composites: list[tuple[str, dict[str, Any], list[str]]] = []
        self._region: list[str] | None = None
        self._outputs_for_build: tuple[str, ...] = ()

    # ---- tensors -------------------------------------------------------------------------

    def input(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str = "float32",
        *,
        quantization: Quantization | None = None,
    ) -> str:
        """Declare a graph input; returns its tensor name."""
        self._add_tensor(Tensor(name, tuple(shape), dtype, quantization=quantization))
        self._inputs.append(name)
        return name

    def const(
        self,
        value: Any,
        name: str | None = None,
        *,
        dtype: str | None = None,
        quantization: Quantization | None = None,
        dropped: bool = False,
    ) -> str:
        """Add a constant tensor from a numpy array (or anything ``np.asarray`` takes).

        float64 values become float32 and Python / int64 integers int32 unless ``dtype`` says
        otherwise. ``dropped=True`` keeps only the byte size (a structure-only weight).
        """
        arr = np.asarray(value)
        if dtype is None:
            dtype = {"float64": "float32", "int64": "int32"}.get(arr.dtype.name, arr.dtype.name)
        arr = np.ascontiguousarray(arr.astype(dtype if dtype != "bool" else np.bool_))
        if name is None:
            name = f"const_{self._const_counter}"
            self._const_counter += 1
        buf = Buffer.placeholder(arr.nbytes) if dropped else Buffer.from_bytes(arr)
        self._add_tensor(
            Tensor(name, tuple(arr.shape), dtype, quantization=quantization, buffer=buf)
        )
        return name

    def variable(self, name: str, shape: Sequence[int], dtype: str = "float32") -> str:
        """Add a variable tensor (an RNN's state, zero when the model is loaded)."""
        self._add_tensor(Tensor(name, tuple(shape), dtype, is_variable=True))
        return name

    def tensor(self, name: str) -> Tensor:
        """The record of tensor ``name``."""
        return self._tensors[name]

    def _add_tensor(self, t: Tensor) -> None:
        if t.name in self._tensors:
            raise GraphError(f"graph '{self.name}': duplicate tensor name '{t.name}'")
        self._tensors[t.name] = t

    def _as_tensor(self, x: Any) -> str | None:
        if x is None or isinstance(x, str):
            return x
        return self.const(x)

    # ---- ops -----------------------------------------------------------------------------

    def op(self, kind: str, *inputs: Any, **kwargs: Any) -> Any:
        """Append an op; returns its output tensor name (a tuple when it has several).

        Parameters
        ----------
        kind : str
            Builtin name (``"CONV_2D"``) or ``"CUSTOM:<code>"``.
        *inputs
            Tensor names, numpy arrays / scalars (made constants), or ``None`` (omitted input).
        **kwargs
            Op options (schema field names), plus the builder's own keys: ``shape`` / ``dtype``
            (explicit output shape and dtype: a tuple of shapes for several outputs),
            ``n_outputs``, ``outputs`` (output tensor names), ``name`` (op name),
            ``quantization`` (of the output), ``custom_options`` (bytes).

        Raises
        ------
        GraphError
            Unknown input tensor, or a kind whose output shape cannot be inferred without
            ``shape=``.

        Examples
        --------
        >>> b = GraphBuilder()
        >>> a, c = b.op("SPLIT", 1, b.input("x", (2, 6)), num_splits=2)
        >>> b.tensor(a).shape
        (2, 3)
        """
        builder = {k: kwargs.pop(k) for k in _BUILDER_KEYS if k in kwargs}
        custom_options = kwargs.pop("custom_options", None)
        options = {**DEFAULT_OPTIONS.get(kind, {}), **kwargs}
        names = tuple(self._as_tensor(x) for x in inputs)
        for t in names:
            if t is not None and t not in self._tensors:
                raise GraphError(f"graph '{self.name}': {kind} input tensor '{t}' does not exist")
        op_name = builder.get("name") or f"{_sanitise(kind)}_{self._kind_counter}"
        self._kind_counter += 1
        specs = self._output_specs(kind, names, options, builder)
        out_names = builder.get("outputs") or (
            [op_name] if len(specs) == 1 else [f"{op_name}:{i}" for i in range(len(specs))]
        )
        quant = builder.get("quantization")
        for out, (shape, dtype) in zip(out_names, specs):
            self._add_tensor(Tensor(out, tuple(shape), dtype, quantization=quant))
        self._ops.append(
            Op(op_name, kind, names, tuple(out_names), options, custom_options=custom_options)
        )
        if self._region is not None:
            self._region.append(op_name)
        return out_names[0] if len(out_names) == 1 else tuple(out_names)

    def _output_specs(
        self, kind: str, inputs: tuple[str | None, ...], options: dict[str, Any], builder: dict
    ) -> list[tuple[tuple[int, ...], str]]:
        n_out = builder.get("n_outputs") or len(builder.get("outputs") or ()) or None
        shape, dtype = builder.get("shape"), builder.get("dtype")
        if shape is not None:
            shapes = (
                [tuple(s) for s in shape]
                if shape and isinstance(shape[0], Sequence)
                else [tuple(shape)] * (n_out or 1)
            )
            first = next((self._tensors[t].dtype for t in inputs if t is not None), "float32")
            dtypes = [dtype or first] * len(shapes) if not isinstance(dtype, list) else dtype
            return list(zip(shapes, dtypes))
        try:
            specs = self._infer(kind, inputs, options)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise GraphError(
                f"graph '{self.name}': cannot infer the output of {kind}: {exc}; pass shape="
            ) from exc
        if specs is None:
            raise GraphError(
                f"graph '{self.name}': no shape inference for {kind}; pass shape= (and dtype=)"
            )
        if dtype is not None:
            specs = [(s, dtype) for s, _ in specs]
        return specs

    def _infer(
        self, kind: str, inputs: tuple[str | None, ...], o: dict[str, Any]
    ) -> list[tuple[tuple[int, ...], str]] | None:
        def t(i: int) -> Tensor:
            name = inputs[i] if i < len(inputs) else None
            if name is None:
                raise ValueError(f"input {i} is omitted")
            return self._tensors[name]

        x = t(0)
        if kind in SAME_SHAPE_KINDS or kind in ("DEQUANTIZE", "CAST"):
            out_dtype = "float32" if kind == "DEQUANTIZE" else x.dtype
            return [(x.shape, out_dtype)]
        if kind in BINARY_KINDS or kind in COMPARISON_KINDS:
            shape = tuple(np.broadcast_shapes(t(0).shape, t(1).shape))
            return [(shape, "bool" if kind in COMPARISON_KINDS else x.dtype)]
        if kind in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            n, h, w, _ = x.shape
            f = t(1).shape
            kh, kw, cout = (f[1], f[2], f[0] if kind == "CONV_2D" else f[3])
            return [((n, *self._spatial(h, w, kh, kw, o), cout), x.dtype)]
        if kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            n, h, w, c = x.shape
            return [
                ((n, *self._spatial(h, w, o["filter_height"], o["filter_width"], o), c), x.dtype)
            ]
        if kind == "TRANSPOSE_CONV":
            return [(tuple(int(v) for v in self._value(inputs[0])), t(2).dtype)]
        if kind == "FULLY_CONNECTED":
            units, depth = t(1).shape
            if o.get("keep_num_dims"):
                return [((*x.shape[:-1], units), x.dtype)]
            return [((math.prod(x.shape) // depth, units), x.dtype)]
        if kind in _REDUCE_KINDS:
            axes = {int(a) % len(x.shape) for a in np.ravel(self._value(inputs[1]))}
            keep = o.get("keep_dims", False)
            shape = tuple((1 if keep else None) if i in axes else d for i, d in enumerate(x.shape))
            return [(tuple(d for d in shape if d is not None), x.dtype)]
        if kind == "RESHAPE":
            new = self._value(inputs[1]) if len(inputs) > 1 and inputs[1] else o["new_shape"]
            return [(tuple(int(d) for d in np.reshape(np.empty(x.shape), new).shape), x.dtype)]
        if kind == "CONCATENATION":
            axis = o["axis"] % len(x.shape)
            dims = list(x.shape)
            dims[axis] = sum(t(i).shape[axis] for i in range(len(inputs)))
            return [(tuple(dims), x.dtype)]
        if kind == "SPLIT":
            v = t(1)
            axis = int(np.ravel(self._value(inputs[0]))[0]) % len(v.shape)
            k = o["num_splits"]
            dims = list(v.shape)
            dims[axis] //= k
            return [(tuple(dims), v.dtype)] * k
        if kind in ("PAD", "PADV2", "MIRROR_PAD"):
            pads = self._value(inputs[1]).reshape(-1, 2)
            return [(tuple(d + int(p.sum()) for d, p in zip(x.shape, pads)), x.dtype)]
        if kind == "TRANSPOSE":
            perm = [int(p) for p in self._value(inputs[1])]
            return [(tuple(x.shape[p] for p in perm), x.dtype)]
        if kind == "GATHER":
            axis = o["axis"] % len(x.shape)
            return [((*x.shape[:axis], *t(1).shape, *x.shape[axis + 1 :]), x.dtype)]
        if kind == "EMBEDDING_LOOKUP":
            return [((*x.shape, *t(1).shape[1:]), t(1).dtype)]
        if kind == "BATCH_MATMUL":
            a, b = x.shape, t(1).shape
            m = a[-1] if o.get("adj_x") else a[-2]
            n = b[-2] if o.get("adj_y") else b[-1]
            batch = np.broadcast_shapes(a[:-2], b[:-2])
            return [((*batch, m, n), x.dtype)]
        return None

    def _spatial(self, h: int, w: int, kh: int, kw: int, o: dict[str, Any]) -> tuple[int, int]:
        pad, dh, dw = o["padding"], o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)
        return window_out(h, kh, o["stride_h"], pad, dh), window_out(w, kw, o["stride_w"], pad, dw)

    def _value(self, name: str | None) -> np.ndarray:
        if name is None:
            raise KeyError("missing constant input")
        return self._tensors[name].data()

    # ---- regions and nested graphs -----------------------------------------------------------

    @contextlib.contextmanager
    def composite(self, implements: str, **attrs: Any) -> Iterator[None]:
        """Mark the ops created inside the block (or each call of a decorated function) as one
        composite implementing ``implements`` with attributes ``attrs``.

        Raises
        ------
        GraphError
            Composites are nested (a region belongs to one composite).
        """
        if self._region is not None:
            raise GraphError(f"graph '{self.name}': composite '{implements}' nested in another")
        self._region = []
        try:
            yield
        finally:
            region, self._region = self._region, None
        self._composites.append((implements, dict(attrs), region))

    def subgraph(self, name: str) -> GraphBuilder:
        """A builder for a nested graph (a WHILE body or cond) built into ``subgraphs``."""
        if name in self._children:
            raise GraphError(f"graph '{self.name}': duplicate subgraph '{name}'")
        self._children[name] = GraphBuilder(name)
        return self._children[name]

    # ---- output ---------------------------------------------------------------------------

    def build(self, outputs: Sequence[str], *, model: ModelInfo | None = None) -> nx.MultiDiGraph:
        """The graph with the given output tensors (nested graphs and composites included)."""
        G = self._build_one(outputs)
        G.graph["model"] = model or ModelInfo()
        G.graph["subgraphs"] = {}
        for name, child in self._children.items():
            if child._children:
                raise GraphError(f"subgraph '{name}': nested graphs must hang off the main graph")
            G.graph["subgraphs"][name] = child._build_one(child._outputs_for_build)
        return G

    def set_outputs(self, outputs: Sequence[str]) -> None:
        """Outputs of a nested graph (the main graph gets them from :meth:`build`)."""
        self._outputs_for_build = tuple(outputs)

    def _build_one(self, outputs: Sequence[str]) -> nx.MultiDiGraph:
        for t in outputs:
            if t not in self._tensors:
                raise GraphError(f"graph '{self.name}': output tensor '{t}' does not exist")
        G = make_graph(self.name, self._tensors.values(), self._ops, self._inputs, outputs)
        G.graph["composites"] = tuple(
            _composite_record(G, implements, attrs, region)
            for implements, attrs, region in self._composites
            if region
        )
        return G


def _composite_record(
    G: nx.MultiDiGraph, implements: str, attrs: Mapping[str, Any], region: list[str]
) -> Composite:
    inside = set(region)
    produced: list[str] = []
    inputs: dict[str, None] = {}
    for n in region:
        op = G.nodes[n]["op"]
        for t in op.inputs:
            if t is not None and t not in produced:
                inputs.setdefault(t)
        produced.extend(op.outputs)
    graph_outputs = set(G.graph["outputs"])
    read_outside = {k for u, v, k in G.edges(keys=True) if u in inside and v not in inside}
    outputs = tuple(t for t in produced if t in read_outside or t in graph_outputs)
    return Composite(implements, dict(attrs), tuple(inputs), outputs, tuple(region))


def _sanitise(kind: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in kind.lower())

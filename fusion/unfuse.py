"""``unfuse``: the inverse of the tier-1 fusion rules, so real models can be unfused and re-fused.

Each fused op is expanded into the primitive ops the rules recognize:

=========================================  ==================================================
fused                                      expanded
=========================================  ==================================================
op with ``fused_activation_function`` A    op (NONE) -> A (RELU / RELU6 / RELU_N1_TO_1 only)
CONV_2D / DEPTHWISE / FC / TRANSPOSE_CONV  the op with a zero bias -> ADD(bias)  (float only)
HARD_SWISH                                 ADD(x, 3) -> RELU6 -> MUL(1/6) -> MUL(x, .)
GELU (approximate)                         0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
GELU (exact)                               0.5 x (1 + CUSTOM:Erf(x / sqrt 2))
CUSTOM:Swish                               LOGISTIC -> MUL(x, .)
CUSTOM:LayerNorm                           Keras' MEAN / SQUARED_DIFFERENCE / RSQRT lowering
BIDIRECTIONAL_SEQUENCE_LSTM (float)        UNIDIRECTIONAL_SEQUENCE_LSTM over x, and one over
                                           REVERSE_V2(x) reversed back (CONCATENATION when
                                           ``merge_outputs``): tf-keras' form
=========================================  ==================================================

Nested graphs are expanded too. The result is a new graph; ``fuse(unfuse(G))`` gives back the op
kinds and counts of ``fuse(G)`` (and of ``G`` itself when ``G`` is already fused as far as the
rules go).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from flatbuffers import flexbuffers

from tacopt.fusion.ir import Op, Tensor, ops_of
from tacopt.fusion.rnn.bilstm import BIDI, N_WEIGHTS
from tacopt.fusion.rules import custom as _custom  # noqa: F401  (registers the custom kernels)
from tacopt.fusion.rules.base import Editor, Rewrite
from tacopt.fusion.rules.patterns import ACT_PRODUCERS, ACTIVATIONS, FILTER_SLOTS


class _Expander:
    """Builds the replacement ops of one fused op, with fresh tensor and op names."""

    def __init__(self, ed: Editor, op: Op) -> None:
        self.ed, self.op = ed, op
        self.ops: list[Op] = []
        self.tensors: list[Tensor] = []
        self.out = ed.tensor(op.outputs[0])

    def const(self, value, like: str | None = None) -> str:
        arr = np.asarray(value, np.float32)
        t = self.ed.const(f"{self.op.name}/c{len(self.tensors)}", arr, arr.shape, "float32")
        self.tensors.append(t)
        return t.name

    def emit(
        self, kind: str, *inputs: str | None, out: str | None = None, shape=None, **options
    ) -> str:
        if out is None:
            rec = self.out if shape is None else Tensor("", tuple(shape), self.out.dtype)
            out = self.ed.fresh(f"{self.op.outputs[0]}/{kind.lower()}{len(self.ops)}")
            self.tensors.append(Tensor(out, rec.shape, rec.dtype, quantization=rec.quantization))
        name = self.ed.fresh(f"{self.op.name}/{kind.lower()}{len(self.ops)}")
        custom = None
        if kind.startswith("CUSTOM:"):
            custom = options.pop("custom_options", b"") or bytes(flexbuffers.Dumps({}))
        if kind in ACT_PRODUCERS:
            options.setdefault("fused_activation_function", "NONE")
        self.ops.append(Op(name, kind, tuple(inputs), (out,), options, custom_options=custom))
        return out

    def rewrite(self) -> Rewrite:
        return Rewrite((self.op.name,), tuple(self.ops), tuple(self.tensors))


def _unfuse_bidirectional(ed: Editor, op: Op) -> Rewrite | None:
    """The forward and backward UNIDIRECTIONAL_SEQUENCE_LSTM of a float bidirectional LSTM."""
    if len(op.inputs) != 48 or any(op.inputs[39:]):
        return None  # auxiliary inputs
    if any(ed.tensor(t).dtype != "float32" for t in (*op.inputs, *op.outputs) if t is not None):
        return None
    x = op.input(0)
    seq = ed.tensor(x).shape
    axis = 0 if op.options.get("time_major", True) else 1
    e = _Expander(ed, op)
    axes = ed.const(f"{op.name}/time_axis", np.array([axis], np.int32), (1,), "int32")
    e.tensors.append(axes)
    lstm = {k: op.options[k] for k in ("fused_activation_function", "cell_clip", "proj_clip")}
    lstm |= {"time_major": axis == 0, "asymmetric_quantize_inputs": False}
    lstm["diagonal_recurrent_tensors"] = False
    merged = bool(op.options.get("merge_outputs", False))
    outs: list[str] = []
    for start, states in ((1, (35, 36)), (1 + N_WEIGHTS, (37, 38))):
        backward = start != 1
        source = e.emit("REVERSE_V2", x, axes.name, shape=seq) if backward else x
        shape = (*seq[:-1], ed.tensor(op.input(states[0])).shape[-1])
        target = None if merged or backward else op.outputs[len(outs)]
        inputs = (source, *op.inputs[start : start + N_WEIGHTS], *(op.inputs[k] for k in states))
        y = e.emit("UNIDIRECTIONAL_SEQUENCE_LSTM", *inputs, out=target, shape=shape, **lstm)
        if backward:
            target = None if merged else op.outputs[1]
            y = e.emit("REVERSE_V2", y, axes.name, out=target, shape=shape)
        outs.append(y)
    if merged:
        e.emit("CONCATENATION", *outs, out=op.outputs[0], axis=-1, fused_activation_function="NONE")
    return e.rewrite()


def _unfuse_op(ed: Editor, op: Op) -> Rewrite | None:
    if op.kind == BIDI:
        return _unfuse_bidirectional(ed, op)
    x, y = (op.inputs[0] if op.inputs else None), op.outputs[0] if op.outputs else None
    e = _Expander(ed, op)
    float_out = y is not None and ed.tensor(y).dtype == "float32" and not ed.tensor(y).is_quantized
    act = op.options.get("fused_activation_function", "NONE")
    if op.kind in FILTER_SLOTS and float_out and _unfold_bias(ed, op, e, act):
        return e.rewrite()
    if op.kind in ACT_PRODUCERS and act in ACTIVATIONS:
        pre = e.emit(
            op.kind,
            *op.inputs,
            fused_activation_function="NONE",
            **{k: v for k, v in op.options.items() if k != "fused_activation_function"},
        )
        e.emit(ACTIVATIONS[act], pre, out=y)
        return e.rewrite()
    if not float_out:
        return None
    if op.kind == "HARD_SWISH":
        r = e.emit("RELU6", e.emit("ADD", x, e.const(3.0)))
        e.emit("MUL", x, e.emit("MUL", r, e.const(1 / 6)), out=y)
    elif op.kind == "GELU" and op.options.get("approximate"):
        cube = e.emit("MUL", e.emit("MUL", x, x), x)
        inner = e.emit("ADD", x, e.emit("MUL", cube, e.const(0.044715)))
        t = e.emit("TANH", e.emit("MUL", inner, e.const(math.sqrt(2 / math.pi))))
        e.emit("MUL", e.emit("MUL", x, e.const(0.5)), e.emit("ADD", t, e.const(1.0)), out=y)
    elif op.kind == "GELU":
        t = e.emit("CUSTOM:Erf", e.emit("MUL", x, e.const(1 / math.sqrt(2))))
        e.emit("MUL", e.emit("MUL", x, e.const(0.5)), e.emit("ADD", t, e.const(1.0)), out=y)
    elif op.kind == "CUSTOM:Swish":
        e.emit("MUL", x, e.emit("LOGISTIC", x), out=y)
    elif op.kind == "CUSTOM:LayerNorm":
        opts = flexbuffers.Loads(bytes(op.custom_options or b"")) or {}
        shape = ed.tensor(op.input(0)).shape
        rank, keep = len(shape), shape[:-1] + (1,)
        axes = ed.const(f"{op.name}/axes", np.array([rank - 1], np.int32), (1,), "int32")
        e.tensors.append(axes)
        mean = e.emit("MEAN", x, axes.name, shape=keep, keep_dims=True)
        neg = e.emit("NEG", mean, shape=keep)
        var = e.emit(
            "MEAN", e.emit("SQUARED_DIFFERENCE", x, mean), axes.name, shape=keep, keep_dims=True
        )
        r = e.emit(
            "RSQRT", e.emit("ADD", var, e.const(opts.get("epsilon", 1e-3)), shape=keep), shape=keep
        )
        g = e.emit("MUL", r, op.inputs[1])
        e.emit("ADD", e.emit("MUL", x, g), e.emit("MUL", neg, g), out=y)
    else:
        return None
    return e.rewrite()


def _unfold_bias(ed: Editor, op: Op, e: _Expander, act: str) -> bool:
    _, b_slot = FILTER_SLOTS[op.kind]
    bias = op.inputs[b_slot] if len(op.inputs) > b_slot else None
    if bias is None or not ed.is_const(bias) or ed.tensor(bias).dtype != "float32":
        return False
    if act not in ("NONE", *ACTIVATIONS):
        return False
    zeros = ed.const(
        f"{op.name}/zero_bias",
        np.zeros(ed.tensor(bias).shape, np.float32),
        ed.tensor(bias).shape,
        "float32",
    )
    e.tensors.append(zeros)
    inputs = list(op.inputs)
    inputs[b_slot] = zeros.name
    opts = {**op.options, "fused_activation_function": "NONE"}
    pre = e.emit(op.kind, *inputs, **opts)
    if act == "NONE":
        e.emit("ADD", pre, bias, out=op.outputs[0])
    else:
        e.emit(ACTIVATIONS[act], e.emit("ADD", pre, bias), out=op.outputs[0])
    return True


def unfuse(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """Expand the fused ops of ``G`` (and its nested graphs) into primitive ops; a new graph.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        A graph in the IR (not modified).

    Returns
    -------
    networkx.MultiDiGraph
        The expanded graph; ``validate_graph`` holds.

    Examples
    --------
    >>> from tacopt.fusion.ir.builder import GraphBuilder
    >>> b = GraphBuilder()
    >>> G = b.build(outputs=[b.op("HARD_SWISH", b.input("x", (4,)))])
    >>> [op.kind for _, op in ops_of(unfuse(G))]
    ['ADD', 'RELU6', 'MUL', 'MUL']
    """
    out = _unfuse_one(G, G)
    for key in ("model", "composites"):
        if key in G.graph:
            out.graph[key] = G.graph[key]
    out.graph["subgraphs"] = {
        name: _unfuse_one(S, G) for name, S in G.graph.get("subgraphs", {}).items()
    }
    return out


def _unfuse_one(G: nx.MultiDiGraph, root: nx.MultiDiGraph) -> nx.MultiDiGraph:
    ed = Editor.of(G, root=root)
    for _, op in ops_of(G):
        rw = _unfuse_op(ed, op)
        if rw is not None:
            ed.apply(rw)
    return ed.to_graph()

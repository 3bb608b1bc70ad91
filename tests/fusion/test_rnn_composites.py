"""RNN interfaces as composites (keras_lstm, lingvo's LSTMCellSimple and its layer-normalized
form), from GraphBuilder regions and STABLEHLO_COMPOSITE ops, checked by execution in LiteRT."""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
import pytest
from flatbuffers import flexbuffers

from tacopt.errors import FusionError
from tacopt.fusion.fuse import fuse, op_histogram
from tacopt.fusion.ir import ops_of
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.writer import write_tflite
from tests.fusion.test_lstm import fuse_and_compare

B, T, N_IN, H = 2, 5, 3, 4  # batch, steps, features, units


def _weights(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.normal(0, 0.5, shape).astype(np.float32)


def keras_lstm_layer(
    b: GraphBuilder, args: list[str], *, sequence: bool, time_major: bool, go_backwards: bool
) -> str:
    """Keras' LSTM layer unrolled over T steps on ``args`` = x, h0, c0, kernel, recurrent
    kernel[, bias]."""
    x, h0, c0, kernel, rkernel = args[:5]
    bvec = args[5] if len(args) > 5 else None
    # the arguments are touched in the interface's order (a region's inputs: first-use order)
    if time_major:
        xt = b.op("RESHAPE", x, np.array([T, B, N_IN], np.int32))
    else:
        xt = b.op("TRANSPOSE", x, np.array([1, 0, 2], np.int32))
    h = b.op("RESHAPE", h0, np.array([B, H], np.int32))
    c = b.op("RESHAPE", c0, np.array([B, H], np.int32))
    xk = b.op("BATCH_MATMUL", xt, kernel)
    outs = []
    for t in reversed(range(T)) if go_backwards else range(T):
        # GATHER one step ([t]: the builder stores 0-d constants as 1-d), back to (B, 4H)
        xk_t = b.op("GATHER", xk, np.array([t], np.int32))
        xk_t = b.op("RESHAPE", xk_t, np.array([B, 4 * H], np.int32))
        z = b.op("ADD", xk_t, b.op("BATCH_MATMUL", h, rkernel))
        if bvec is not None:
            z = b.op("ADD", z, bvec)
        i, f, g, o = b.op("SPLIT", np.array([1], np.int32), z, num_splits=4)
        c = b.op(
            "ADD",
            b.op("MUL", b.op("LOGISTIC", f), c),
            b.op("MUL", b.op("LOGISTIC", i), b.op("TANH", g)),
        )
        h = b.op("MUL", b.op("LOGISTIC", o), b.op("TANH", c))
        outs.append(h)
    if not sequence:
        return h
    shape = (T, B, H) if time_major else (B, T, H)
    return b.op("PACK", *outs, axis=0 if time_major else 1, values_count=T, shape=shape)


def keras_lstm_graph(
    *,
    sequence: bool = True,
    time_major: bool = False,
    go_backwards: bool = False,
    state_inputs: bool = False,
    bias: bool = True,
    stablehlo: bool = False,
    seed: int = 0,
):
    """Keras' LSTM layer unrolled over T steps, as a ``keras_lstm`` region (or a
    STABLEHLO_COMPOSITE op whose decomposition is the same ops)::

        x ─┬─[ keras_lstm: per step z = x_t K + h R + b; i, f, g, o = SPLIT(z);
        h0 ─┤   c = σ(f) c + σ(i) tanh(g); h = σ(o) tanh(c) ]──► PACK(h_t) or h_T
        c0 ─┘
    """
    rng = np.random.default_rng(seed)
    b = GraphBuilder("keras_lstm")
    x = b.input("x", (T, B, N_IN) if time_major else (B, T, N_IN))
    if state_inputs:
        h0, c0 = b.input("h0", (B, H)), b.input("c0", (B, H))
    else:
        h0, c0 = b.const(np.zeros((B, H), np.float32)), b.const(np.zeros((B, H), np.float32))
    kernel, rkernel = b.const(_weights(rng, N_IN, 4 * H)), b.const(_weights(rng, H, 4 * H))
    args = [x, h0, c0, kernel, rkernel] + ([b.const(_weights(rng, 4 * H))] if bias else [])
    attrs = {"time_major": time_major, "go_backwards": go_backwards}
    layer = {"sequence": sequence, **attrs}
    if stablehlo:
        return _stablehlo_graph(
            b, "keras_lstm", args, attrs, lambda sub, a: keras_lstm_layer(sub, a, **layer)
        )
    with b.composite("keras_lstm", **attrs):
        y = keras_lstm_layer(b, args, **layer)
    return b.build(outputs=[b.op("RELU", y)])


def _stablehlo_graph(
    b: GraphBuilder, name: str, args: list[str], attrs: dict, body
) -> nx.MultiDiGraph:
    """``b``'s graph with one STABLEHLO_COMPOSITE op ``name`` over ``args``, whose decomposition
    subgraph is ``body(builder, arguments)``; a RELU after it."""
    sub = b.subgraph("decomposition")
    sub_args = [sub.input(f"arg{k}", b.tensor(t).shape) for k, t in enumerate(args)]
    out = body(sub, sub_args)
    sub.set_outputs([out])
    y = b.op(
        "STABLEHLO_COMPOSITE",
        *args,
        decomposition_subgraph="decomposition",
        composite_attributes=bytes(flexbuffers.Dumps(attrs)),
        composite_attributes_format="FLEXBUFFERS",
        version=0,
        shape=sub.tensor(out).shape,
    )
    G = b.build(outputs=[b.op("RELU", y)])
    for n, op in ops_of(G):
        if op.kind == "STABLEHLO_COMPOSITE":  # the builder takes name= as the op's name
            G.nodes[n]["op"] = dataclasses.replace(op, options={**op.options, "name": name})
    return G


KERAS_VARIANTS = {
    "sequence": {},
    "last": {"sequence": False},
    "time_major": {"time_major": True},
    "go_backwards": {"go_backwards": True},
    "go_backwards_last": {"go_backwards": True, "sequence": False},
    "state_inputs": {"state_inputs": True},
    "no_bias": {"bias": False},
}


@pytest.mark.parametrize("variant", sorted(KERAS_VARIANTS))
def test_keras_lstm_region_fuses_to_one_unidirectional_lstm(variant, tmp_path):
    kw = KERAS_VARIANTS[variant]
    r = fuse_and_compare(keras_lstm_graph(**kw), tmp_path)
    assert r.counts == {"keras_lstm": 1} and r.warnings == ()
    hist = op_histogram(r.graph)
    assert hist["UNIDIRECTIONAL_SEQUENCE_LSTM"] == 1
    assert hist.get("REVERSE_V2", 0) == int(kw.get("go_backwards", False))
    assert hist.get("ADD", 0) == (2 if kw.get("state_inputs") else 0)
    assert hist.get("STRIDED_SLICE", 0) == (0 if kw.get("sequence", True) else 1)
    (lstm,) = [op for _, op in ops_of(r.graph) if op.kind == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert lstm.options["time_major"] is kw.get("time_major", False)


def lingvo_cell(b: GraphBuilder, args: list[str], *, layer_norm: bool, cifg: bool) -> str:
    """lingvo's cell step from zero states on ``args`` = x, W, b[, P][, layer-norm scale]."""
    gates = 3 if cifg else 4
    n = b.tensor(args[1]).shape[1] // gates
    projection = len(args) == (5 if layer_norm else 4)
    # touch the arguments in the interface's order (a region's inputs are in first-use order)
    touched = [b.op("RESHAPE", t, np.array(b.tensor(t).shape, np.int32)) for t in args]
    xx, ww, bb = touched[:3]
    wx = b.op("SLICE", ww, np.array([0, 0], np.int32), np.array([N_IN, gates * n], np.int32),
              shape=(N_IN, gates * n))  # fmt: skip
    z = b.op("BATCH_MATMUL", xx, wx)
    if layer_norm:
        z3 = b.op("RESHAPE", z, np.array([B, gates, n], np.int32))
        axes = np.array([2], np.int32)
        d = b.op("SUB", z3, b.op("MEAN", z3, axes, keep_dims=True))
        var = b.op("MEAN", b.op("MUL", d, d), axes, keep_dims=True)
        z3 = b.op("MUL", d, b.op("RSQRT", b.op("ADD", var, np.float32(1e-8))))
        z = b.op("MUL", b.op("RESHAPE", z3, np.array([B, gates * n], np.int32)), touched[-1])
    z = b.op("ADD", z, bb)
    parts = b.op("SPLIT", np.array([1], np.int32), z, num_splits=gates)
    cg, og = parts[0], parts[-1]
    if cifg:  # i = 1 - f
        i_gate = b.op("SUB", np.float32(1.0), b.op("LOGISTIC", parts[1]))
    else:
        i_gate = b.op("LOGISTIC", parts[1])
    c = b.op("MUL", i_gate, b.op("TANH", cg))  # + σ(f) * 0
    m = b.op("MUL", b.op("LOGISTIC", og), b.op("TANH", c))
    return b.op("BATCH_MATMUL", m, touched[3]) if projection else m


def lingvo_graph(
    *,
    layer_norm: bool = False,
    projection: bool = True,
    cifg: bool = False,
    stablehlo: bool = False,
    seed: int = 0,
):
    """lingvo's LSTMCellSimple (LayerNormalizedLSTMCellSimple), one step from zero states, as a
    region or as a STABLEHLO_COMPOSITE op whose decomposition is the same ops::

        x ─┬─[ LSTMCellSimple: z = [x, 0] W (+ layer norm per gate, x scale) + b;
        W ─┤   c, i, f, o = SPLIT(z); c' = σ(i) tanh(c); m = σ(o) tanh(c') P ]──► m
        b ─┤
        P ─┘
    """
    n, o_dim, gates = H, 3 if projection else H, 3 if cifg else 4
    name = "LayerNormalizedLSTMCellSimple" if layer_norm else "LSTMCellSimple"
    rng = np.random.default_rng(seed)
    b = GraphBuilder("lingvo")
    x = b.input("x", (B, N_IN))
    w = b.const(_weights(rng, N_IN + o_dim, gates * n))
    bias = b.const(_weights(rng, gates * n))
    proj = b.const(_weights(rng, n, o_dim)) if projection else None
    scale = b.const(1 + _weights(rng, gates * n)) if layer_norm else None
    args = [t for t in (x, w, bias, proj, scale) if t is not None]
    attrs = {"couple_input_forget_gates": cifg, "cell_clip": 10.0}
    if stablehlo:
        cell = {"layer_norm": layer_norm, "cifg": cifg}
        return _stablehlo_graph(b, name, args, attrs, lambda sub, a: lingvo_cell(sub, a, **cell))
    with b.composite(name, **attrs):
        y = lingvo_cell(b, args, layer_norm=layer_norm, cifg=cifg)
    return b.build(outputs=[b.op("RELU", y)])


LINGVO_VARIANTS = {
    "simple": {},
    "no_projection": {"projection": False},
    "cifg": {"cifg": True},
    "layer_norm": {"layer_norm": True},
    "layer_norm_cifg_no_projection": {"layer_norm": True, "cifg": True, "projection": False},
}


@pytest.mark.parametrize("variant", sorted(LINGVO_VARIANTS))
def test_lingvo_cell_region_fuses_to_one_lstm(variant, tmp_path):
    kw = LINGVO_VARIANTS[variant]
    r = fuse_and_compare(lingvo_graph(**kw), tmp_path)
    name = "LayerNormalizedLSTMCellSimple" if kw.get("layer_norm") else "LSTMCellSimple"
    assert r.counts == {name: 1} and r.warnings == ()
    assert op_histogram(r.graph) == {"LSTM": 1, "RELU": 1}
    (lstm,) = [op for _, op in ops_of(r.graph) if op.kind == "LSTM"]
    assert len(lstm.inputs) == (24 if kw.get("layer_norm") else 20)
    assert (lstm.inputs[1] is None) is kw.get("cifg", False)  # CIFG: no input gate
    assert (lstm.inputs[16] is None) is not kw.get("projection", True)


@pytest.mark.parametrize("variant", ["simple", "layer_norm", "cifg"])
def test_stablehlo_composite_in_a_tflite_file_fuses_to_one_lstm(variant, tmp_path):
    # a STABLEHLO_COMPOSITE op (decomposition: the cell's ops) written and read back; LiteRT runs
    # the decomposition, which the fused op must match
    kw = LINGVO_VARIANTS[variant]
    G = read_tflite(write_tflite(lingvo_graph(**kw, stablehlo=True), tmp_path / "cell.tflite"))
    r = fuse_and_compare(G, tmp_path)
    name = "LayerNormalizedLSTMCellSimple" if kw.get("layer_norm") else "LSTMCellSimple"
    assert r.counts == {name: 1} and op_histogram(r.graph) == {"LSTM": 1, "RELU": 1}
    assert r.graph.graph["subgraphs"] == {}  # the decomposition is no longer called
    region = fuse(lingvo_graph(**kw)).graph  # the same weights, fused from a builder region
    (a,) = [op for _, op in ops_of(r.graph) if op.kind == "LSTM"]
    (b,) = [op for _, op in ops_of(region) if op.kind == "LSTM"]
    ta, tb = r.graph.graph["tensors"], region.graph["tensors"]
    for x, y in zip(a.inputs[1:], b.inputs[1:]):
        assert (x is None) == (y is None)
        if x is not None and ta[x].is_constant:
            np.testing.assert_array_equal(ta[x].data(), tb[y].data())


@pytest.mark.parametrize("variant", ["sequence", "last", "go_backwards"])
def test_keras_lstm_stablehlo_composite_in_a_tflite_file(variant, tmp_path):
    kw = KERAS_VARIANTS[variant]
    G = read_tflite(write_tflite(keras_lstm_graph(**kw, stablehlo=True), tmp_path / "lstm.tflite"))
    r = fuse_and_compare(G, tmp_path)
    assert r.counts == {"keras_lstm": 1} and r.graph.graph["subgraphs"] == {}
    assert op_histogram(r.graph)["UNIDIRECTIONAL_SEQUENCE_LSTM"] == 1


def test_refusals_leave_the_region_and_say_why():
    G = keras_lstm_graph()
    (c,) = G.graph["composites"]
    bad = type(c)(c.implements, c.attrs, c.inputs[:2], c.outputs, c.ops)  # too few arguments
    G.graph["composites"] = (bad,)
    r = fuse(G, rules=[])
    assert r.counts == {} and r.graph.number_of_nodes() == G.number_of_nodes()
    (warning,) = r.warnings
    assert "keras_lstm" in warning and "expected the arguments" in warning
    with pytest.raises(FusionError, match="expected the arguments"):
        fuse(G, rules=[], strict=True)


def test_lingvo_signature_mismatch_is_refused():
    G = lingvo_graph()  # 4 gates: 16 weight columns
    (c,) = G.graph["composites"]
    attrs = {**c.attrs, "couple_input_forget_gates": True}
    G.graph["composites"] = (type(c)(c.implements, attrs, c.inputs, c.outputs, c.ops),)
    r = fuse(G)
    assert "LSTMCellSimple" not in r.counts
    assert "has 16 columns, not a multiple of 3 gates" in r.warnings[0]


def test_keras_lstm_whose_state_is_read_outside_is_refused():
    G = keras_lstm_graph(sequence=False)
    (c,) = G.graph["composites"]
    cell = next(op for _, op in reversed(list(ops_of(G))) if op.kind == "ADD").outputs[0]
    G.graph["composites"] = (type(c)(c.implements, c.attrs, c.inputs, (*c.outputs, cell), c.ops),)
    r = fuse(G)
    assert "keras_lstm" not in r.counts and "2 outputs are read outside" in r.warnings[0]

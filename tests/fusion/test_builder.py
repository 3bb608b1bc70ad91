"""Tests of the graph builder: shapes inferred, composites recorded, IR valid."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.errors import GraphError
from tacopt.fusion.ir import ops_of, validate_graph
from tacopt.fusion.ir.builder import GraphBuilder


def test_mobilenet_block_shapes_and_options():
    """x ─CONV_2D(s2)─DEPTHWISE─AVG_POOL─RESHAPE─FC─SOFTMAX─► y"""
    b = GraphBuilder("block")
    x = b.input("x", (1, 16, 16, 3))
    h = b.op("CONV_2D", x, np.ones((8, 3, 3, 3)), np.zeros(8), stride_w=2, stride_h=2)
    h = b.op("DEPTHWISE_CONV_2D", h, np.ones((1, 3, 3, 8)), np.zeros(8), padding="VALID")
    h = b.op("AVERAGE_POOL_2D", h, filter_width=6, filter_height=6)
    h = b.op("RESHAPE", h, np.array([1, 8]))
    h = b.op("FULLY_CONNECTED", h, np.ones((5, 8)), None)
    y = b.op("SOFTMAX", h)
    G = b.build(outputs=[y])
    validate_graph(G)
    shapes = [G.graph["tensors"][op.outputs[0]].shape for _, op in ops_of(G)]
    assert shapes == [(1, 8, 8, 8), (1, 6, 6, 8), (1, 1, 1, 8), (1, 8), (1, 5), (1, 5)]
    conv = G.nodes["conv_2d_0"]["op"]
    assert conv.options["fused_activation_function"] == "NONE"
    assert conv.options["stride_w"] == 2
    assert G.nodes["fully_connected_4"]["op"].inputs[2] is None
    assert list(G.edges(keys=True))[0] == ("conv_2d_0", "depthwise_conv_2d_1", "conv_2d_0")


def test_constants_keep_values_and_dtypes():
    b = GraphBuilder()
    w = b.const(np.arange(6.0).reshape(2, 3))
    i = b.const([1, 2])
    d = b.const(np.zeros(4, np.float16), dropped=True)
    assert b.tensor(w).dtype == "float32"
    assert b.tensor(i).dtype == "int32"
    np.testing.assert_array_equal(b.tensor(w).data(), np.arange(6.0).reshape(2, 3))
    assert b.tensor(d).buffer.is_placeholder and b.tensor(d).nbytes == 8


def test_split_and_concat_multi_outputs():
    b = GraphBuilder()
    x = b.input("x", (2, 8))
    parts = b.op("SPLIT", 1, x, num_splits=4)
    y = b.op("CONCATENATION", *reversed(parts), axis=1)
    G = b.build(outputs=[y])
    validate_graph(G)
    assert parts == ("split_0:0", "split_0:1", "split_0:2", "split_0:3")
    assert G.graph["tensors"][y].shape == (2, 8)


def test_composite_inputs_outputs_follow_uses():
    """
    x ──┬───────────────┐
        └─[ LOGISTIC ── MUL ]── ADD(1) ──► y
    """
    b = GraphBuilder()
    x = b.input("x", (3,))
    with b.composite("swish", tfl_fusable_op=True):
        s = b.op("MUL", x, b.op("LOGISTIC", x))
    y = b.op("ADD", s, np.float32(1))
    G = b.build(outputs=[y])
    (c,) = G.graph["composites"]
    assert (c.implements, dict(c.attrs)) == ("swish", {"tfl_fusable_op": True})
    assert (c.inputs, c.outputs, c.ops) == (("x",), ("mul_1",), ("logistic_0", "mul_1"))


def test_decorator_makes_one_region_per_call():
    b = GraphBuilder()

    @b.composite("double")
    def double(t):
        return b.op("ADD", t, t)

    y = double(double(b.input("x", (2,))))
    G = b.build(outputs=[y])
    assert [c.ops for c in G.graph["composites"]] == [("add_0",), ("add_1",)]


def test_nested_composites_and_unknown_inputs_raise():
    b = GraphBuilder()
    x = b.input("x", (2,))
    with pytest.raises(GraphError, match="nested"):
        with b.composite("a"):
            with b.composite("b"):
                pass
    with pytest.raises(GraphError, match="'nope' does not exist"):
        b.op("RELU", "nope")
    with pytest.raises(GraphError, match="no shape inference for STRIDED_SLICE"):
        b.op("STRIDED_SLICE", x, [0], [1], [1])
    y = b.op("STRIDED_SLICE", x, [0], [1], [1], shape=(1,))
    assert b.tensor(y).shape == (1,)


def test_while_body_as_subgraph():
    b = GraphBuilder()
    x = b.input("x", (2,))
    body = b.subgraph("body")
    bx = body.input("bx", (2,))
    body.set_outputs([body.op("RELU", bx)])
    cond = b.subgraph("cond")
    cx = cond.input("cx", (2,))
    cond.set_outputs([cond.op("LESS", cx, np.float32(0))])
    y = b.op("WHILE", x, cond_subgraph="cond", body_subgraph="body", shape=(2,))
    G = b.build(outputs=[y])
    validate_graph(G)
    assert sorted(G.graph["subgraphs"]) == ["body", "cond"]

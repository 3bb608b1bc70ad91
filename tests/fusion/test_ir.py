"""validate_graph: the IR checker every pass relies on."""

from __future__ import annotations

import pytest

from tacopt.fusion.errors import GraphError
from tacopt.fusion.ir import Op, Tensor, make_graph, validate_graph


def test_validate_graph_rejects_a_conv_without_its_filter() -> None:
    #  x -> [CONV_2D (no filter)] -> y
    ts = [Tensor("x", (1, 8, 8, 4), "float32"), Tensor("y", (1, 8, 8, 4), "float32")]
    G = make_graph("g", ts, [Op("conv_2d_0", "CONV_2D", ("x", None), ("y",))], ["x"], ["y"])
    with pytest.raises(GraphError, match="conv_2d_0.*needs its first 2 inputs"):
        validate_graph(G)


def test_validate_graph_rejects_a_tensor_produced_twice() -> None:
    #  x -> [RELU] -> y <- [NEG] <- x
    ts = [Tensor("x", (4,), "float32"), Tensor("y", (4,), "float32")]
    ops = [Op("relu_0", "RELU", ("x",), ("y",)), Op("neg_1", "NEG", ("x",), ("y",))]
    G = make_graph("g", ts, ops, ["x"], ["y"])
    with pytest.raises(GraphError, match="'y' is produced by both 'relu_0' and 'neg_1'"):
        validate_graph(G)


def test_validate_graph_rejects_an_edge_the_ops_do_not_explain() -> None:
    #  x -> [RELU] -> y -> [NEG] -> z, plus a stray edge NEG -> RELU
    ts = [Tensor(n, (4,), "float32") for n in "xyz"]
    ops = [Op("relu_0", "RELU", ("x",), ("y",)), Op("neg_1", "NEG", ("y",), ("z",))]
    G = make_graph("g", ts, ops, ["x"], ["z"])
    G.add_edge("neg_1", "relu_0", key="z", tensor=G.graph["tensors"]["z"])
    with pytest.raises(GraphError, match="edge neg_1 -> relu_0"):
        validate_graph(G)


def test_validate_graph_rejects_a_binary_op_without_output() -> None:
    #  x, y -> [MUL] -> (nothing): found by fuzzing a bundled model
    ts = [Tensor("x", (4,), "float32"), Tensor("y", (4,), "float32")]
    G = make_graph("g", ts, [Op("mul_0", "MUL", ("x", "y"), ())], ["x", "y"], ["x"])
    with pytest.raises(GraphError, match="mul_0.*has no outputs"):
        validate_graph(G)

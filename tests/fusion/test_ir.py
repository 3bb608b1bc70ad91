"""validate_graph: the IR checker every pass relies on."""

from __future__ import annotations

import networkx as nx
import pytest

from tacopt.errors import GraphError
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph, validate_graph


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


def _one_op(kind: str, inputs: list[Tensor], outputs: list[Tensor], **options: object) -> Op:
    return Op(f"{kind.lower()}_0", kind, tuple(t.name for t in inputs),
              tuple(t.name for t in outputs), options)  # fmt: skip


def _check(tensors: list[Tensor], ops: list[Op], inputs: list[str], outputs: list[str]) -> None:
    validate_graph(make_graph("g", tensors, ops, inputs, outputs))


def test_validate_graph_names_a_cycle() -> None:
    #  x -> [ADD x, z] -> y -> [NEG] -> z   (ADD reads what a later op writes)
    ts = [Tensor(n, (4,), "float32") for n in "xyz"]
    ops = [Op("add_0", "ADD", ("x", "z"), ("y",)), Op("neg_1", "NEG", ("y",), ("z",))]
    with pytest.raises(GraphError, match="'z' is produced later, by op 'neg_1'.*cycle"):
        _check(ts, ops, ["x"], ["z"])


@pytest.mark.parametrize(
    ("nbytes", "placeholder", "message"),
    [
        (23, False, "holds 23 bytes, but shape \\(2, 3\\) of float32 needs 24"),
        (2**33, True, "holds 8589934592 bytes, but shape \\(2, 3\\) of float32 needs 24"),
    ],
)
def test_validate_graph_checks_constant_byte_lengths(
    nbytes: int, placeholder: bool, message: str
) -> None:
    data = None if placeholder else Buffer.from_bytes(bytes(nbytes))
    w = Tensor("w", (2, 3), "float32", buffer=data or Buffer.placeholder(nbytes, index=7))
    with pytest.raises(GraphError, match=message):
        _check([w], [], [], ["w"])


def test_validate_graph_names_the_buffer_of_a_bad_placeholder() -> None:
    w = Tensor("w", (2, 3), "float32", buffer=Buffer.placeholder(2**52, index=2))
    with pytest.raises(GraphError, match=r"tensor 'w' \(buffer 2\)"):
        _check([w], [], [], ["w"])


def test_validate_graph_refuses_absurd_tensor_sizes() -> None:
    x = Tensor("x", (2**31 - 1,) * 4, "float32")
    with pytest.raises(GraphError, match="more than the .* tacopt accepts"):
        _check([x], [], ["x"], ["x"])


@pytest.mark.parametrize(
    ("q", "message"),
    [
        (Quantization((0.0,), (0,)), "scale 0.0 is not finite and positive"),
        (Quantization((float("nan"),), (0,)), "scale nan"),
        (Quantization((float("inf"),), (0,)), "scale inf"),
        (Quantization((-1.0,), (0,)), "scale -1.0"),
        (Quantization((1e37,), (0,)), "scale 1e\\+37 makes int8 values overflow float32"),
        (Quantization((0.1, 0.2), (0, 0), axis=1), "2 quantization scales for dimension 1"),
        (Quantization((0.1,) * 3, (0,) * 2, axis=0), "3 scales but 2 zero points"),
        (Quantization((0.1,) * 3, (0,) * 3, axis=7), "quantized dimension 7 is out of range"),
        (Quantization((0.1,), (300,)), "zero point 300 does not fit int8"),
        (Quantization((0.1,), (0,), min=(0.0,), max=()), "1 min but 0 max"),
    ],
)
def test_validate_graph_checks_quantization(q: Quantization, message: str) -> None:
    w = Tensor("w", (3, 4), "int8", quantization=q, buffer=Buffer.from_bytes(bytes(12)))
    with pytest.raises(GraphError, match=message):
        _check([w], [], [], ["w"])


def test_validate_graph_accepts_per_channel_quantization() -> None:
    q = Quantization((0.1, 0.2, 0.3), (0, 1, -1), axis=0)
    _check([Tensor("w", (3, 4), "int8", quantization=q, buffer=Buffer.from_bytes(bytes(12)))],
           [], [], ["w"])  # fmt: skip


def _csr(dense: int, segments: tuple[int, ...], indices: tuple[int, ...]) -> dict:
    return {
        "traversal_order": (0, 1),
        "block_map": (),
        "dim_metadata": (
            {"format": "DENSE", "dense_size": dense},
            {"format": "SPARSE_CSR", "array_segments": {"values": segments},
             "array_indices": {"values": indices}},
        ),
    }  # fmt: skip


def test_validate_graph_checks_sparsity() -> None:
    #  a 2 x 4 matrix with 3 stored values: row 0 at columns 1, 3; row 1 at column 0
    good = _csr(2, (0, 2, 3), (1, 3, 0))
    w = Tensor("w", (2, 4), "float32", buffer=Buffer.from_bytes(bytes(12)), sparsity=good)
    _check([w], [], [], ["w"])
    for bad, message in [
        (_csr(2, (0, 2), (1, 3)), "2 segments for 2 entries"),
        (_csr(2, (0, 2, 3), (1, 4, 0)), "indices do not match"),
        (_csr(3, (0, 2, 3, 3), (1, 3, 0)), "dense size 3 for a dimension of 2"),
        ({**good, "traversal_order": (0, 0)}, "not a permutation"),
    ]:
        t = Tensor("w", (2, 4), "float32", buffer=Buffer.from_bytes(bytes(12)), sparsity=bad)
        with pytest.raises(GraphError, match=message):
            _check([t], [], [], ["w"])


def test_validate_graph_refuses_ops_without_outputs_and_unary_shape_changes() -> None:
    x, y = Tensor("x", (1, 4), "float32"), Tensor("y", (1, 1), "float32")
    with pytest.raises(GraphError, match="'conv_2d_0' \\(CONV_2D\\) needs its first 2 inputs"):
        _check([x, y], [_one_op("CONV_2D", [], [y])], ["x"], ["y"])
    with pytest.raises(GraphError, match="'neg_0' \\(NEG\\): output shape \\(1, 1\\)"):
        _check([x, y], [_one_op("NEG", [x], [y])], ["x"], ["y"])


def test_validate_graph_refuses_recursion() -> None:
    #  main: x -> [WHILE cond, body] -> y;  body: a -> [WHILE cond, body] -> b  (calls itself)
    def graph(name: str, a: str, b: str, ops: list[Op]) -> nx.MultiDiGraph:
        return make_graph(name, [Tensor(a, (1,), "float32"), Tensor(b, (1,), "float32")], ops,
                          [a], [b])  # fmt: skip

    calls = {"cond_subgraph": "cond", "body_subgraph": "body"}
    cond = make_graph("cond", [Tensor("c", (1,), "float32"), Tensor("k", (1,), "bool")],
                      [Op("less_0", "LESS", ("c", "c"), ("k",))], ["c"], ["k"])  # fmt: skip
    body = graph("body", "a", "b", [Op("while_0", "WHILE", ("a",), ("b",), calls)])
    G = graph("main", "x", "y", [Op("while_0", "WHILE", ("x",), ("y",), calls)])
    G.graph["subgraphs"] = {"cond": cond, "body": body}
    with pytest.raises(GraphError, match="graph 'body' calls itself \\(main -> body -> body\\)"):
        validate_graph(G)


def test_validate_graph_refuses_split_pieces_of_another_rank() -> None:
    #  axis, x (2 x 4) -> [SPLIT] -> a (2 x 2), b (4,)   (found by the fuzz campaign, seed 14)
    axis = Tensor("axis", (), "int32", buffer=Buffer.from_bytes(bytes(4)))
    ts = [axis, Tensor("x", (2, 4), "float32"), Tensor("a", (2, 2), "float32"),
          Tensor("b", (4,), "float32")]  # fmt: skip
    op = Op("split_0", "SPLIT", ("axis", "x"), ("a", "b"), {"num_splits": 2})
    with pytest.raises(GraphError, match="tensor 'b' has rank 1, 'x' has rank 2"):
        _check(ts, [op], ["x"], ["a", "b"])

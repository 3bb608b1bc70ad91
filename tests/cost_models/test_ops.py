"""Inference types, FLOP / byte counts and WHILE trip counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tacopt.cost_models.ops import inference_type, op_counts, trip_count
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, all_graphs, make_graph, ops_of

Q = Quantization((0.5,), (0,))


def one_op(kind: str, ins: list[Tensor], outs: list[Tensor], **options) -> object:
    #  ins -> [kind] -> outs
    op = Op(
        f"{kind.lower()}_0", kind, tuple(t.name for t in ins), tuple(t.name for t in outs), options
    )
    inputs = [t.name for t in ins if not t.is_constant]
    return make_graph("g", [*ins, *outs], [op], inputs, [t.name for t in outs])


@pytest.mark.parametrize(
    ("dtypes", "expected"),
    [
        (["float32", "float32"], "FLOAT"),
        (["int8", "int8"], "QUANTIZED_INT8"),
        (["uint8", "uint8"], "QUANTIZED_UINT8"),
        (["float32", "int8"], "HYBRID"),
        (["int8", "uint8"], "UNKNOWN"),
        (["int32", "int32"], "FLOAT"),
    ],
)
def test_inference_type_follows_tac(dtypes: list[str], expected: str) -> None:
    ins = [
        Tensor(f"t{i}", (4,), d, quantization=Q if d in ("int8", "uint8") else None)
        for i, d in enumerate(dtypes)
    ]
    G = one_op("MUL", ins, [Tensor("y", (4,), "float32")])
    assert inference_type(G, "mul_0") == expected


def test_conv_depthwise_matmul_pool_counts() -> None:
    x = Tensor("x", (1, 8, 8, 3), "float32")
    w = Tensor("w", (16, 3, 3, 3), "float32", buffer=Buffer.placeholder(16 * 27 * 4))
    y = Tensor("y", (1, 8, 8, 16), "float32")
    c = op_counts(one_op("CONV_2D", [x, w], [y], fused_activation_function="RELU"), "conv_2d_0")
    assert c.flops == 2 * 16 * 27 * 64 + 64 * 16
    assert c.bytes_read == (192 + 432) * 4 and c.bytes_written == 1024 * 4 and c.exact
    dw = Tensor("dw", (1, 3, 3, 3), "float32", buffer=Buffer.placeholder(27 * 4))
    y3 = Tensor("y3", (1, 8, 8, 3), "float32")
    assert (
        op_counts(one_op("DEPTHWISE_CONV_2D", [x, dw], [y3]), "depthwise_conv_2d_0").flops
        == 2 * 27 * 64
    )
    a, b = Tensor("a", (2, 4, 5), "float32"), Tensor("b", (2, 5, 6), "float32")
    assert (
        op_counts(
            one_op("BATCH_MATMUL", [a, b], [Tensor("c", (2, 4, 6), "float32")]), "batch_matmul_0"
        ).flops
        == 2 * 48 * 5
    )
    p = one_op(
        "MAX_POOL_2D", [x], [Tensor("p", (1, 4, 4, 3), "float32")], filter_height=2, filter_width=2
    )
    assert op_counts(p, "max_pool_2d_0").flops == 48 * 4


def test_gather_reads_only_rows_and_unknown_kind_is_flagged() -> None:
    table = Tensor("t", (1000, 16), "float32", buffer=Buffer.placeholder(64000))
    ids = Tensor("i", (4,), "int32")
    G = one_op("GATHER", [table, ids], [Tensor("y", (4, 16), "float32")])
    c = op_counts(G, "gather_0")
    assert c.bytes_read == 4 * 16 * 4 + 16 and c.flops == 0
    G = one_op("CUSTOM:Foo", [ids], [Tensor("y", (4,), "int32")])
    c = op_counts(G, "custom:foo_0")
    assert not c.exact and "no FLOP rule" in c.note


def test_zoo_counts_cover_every_kind(zoo_dir: Path) -> None:
    from tacopt.fusion.tflite.reader import read_tflite

    rows = json.loads((zoo_dir / "MANIFEST.json").read_text())
    kinds = {k for r in rows for k, _ in r["op_histogram"]}
    seen: set[str] = set()
    for name in (
        "keras__text_lstm_float32",
        "keras__mobilenet_v3_small_int8",
        "keras__text_lstm_tfkeras_float32",
        "torch__bert_tiny_random_float32",
    ):
        G = read_tflite(zoo_dir / f"{name}.tflite")
        for S in all_graphs(G):
            for n, op in ops_of(S):
                c = op_counts(S, n, root=G)
                assert c.exact, (name, n, c.note)
                assert c.flops >= 0 and c.nbytes > 0
                seen.add(op.kind)
    assert seen <= kinds


def test_while_trip_count_read_from_condition(zoo_dir: Path) -> None:
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(zoo_dir / "keras__text_lstm_float32.tflite")
    (loop,) = [n for n, op in ops_of(G) if op.kind == "WHILE"]
    assert trip_count(G, loop) == (64, True)  # sequence length 64
    body = G.graph["subgraphs"][G.nodes[loop]["op"].options["body_subgraph"]]
    per_trip = sum(op_counts(body, n, root=G).flops for n in body)
    assert op_counts(G, loop).flops > 64 * per_trip

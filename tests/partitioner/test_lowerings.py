"""Every lowering preserves numerics: LiteRT gives the same outputs before and after."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.fusion.ir import Quantization, Tensor, make_graph, validate_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.litert import random_inputs, run_graph
from tacopt.partitioner.lowerings import LOWERINGS, lower_graph


def _lower_away(G, kind):
    """Lower every op of ``kind`` (and whatever the rewrite needs for a 4-D-only device)."""

    def supports(H, n):
        op = H.nodes[n]["op"]
        rank = len(H.graph["tensors"][op.outputs[0]].shape)
        return op.kind != kind and not (op.kind in ("SLICE", "CONCATENATION") and rank < 4)

    return lower_graph(G, supports)


def _assert_same(G, H, *, atol=1e-5):
    validate_graph(H)
    feeds = random_inputs(G, seed=1)
    want, got = run_graph(G, feeds), run_graph(H, feeds)
    assert want.keys() == got.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=atol)


def _graph(kind, inputs, consts=(), **options):
    b = GraphBuilder(kind.lower())
    xs = [b.input(f"x{i}", shape) for i, shape in enumerate(inputs)]
    y = b.op(kind, *xs, *consts, **options)
    return b.build(outputs=[y])


CASES = [
    (
        "pack_to_concat",
        "PACK",
        [(2, 3), (2, 3), (2, 3)],
        (),
        {"axis": 1, "values_count": 3, "shape": (2, 3, 3)},
    ),
    ("sub_to_add", "SUB", [(1, 4, 4, 3), (3,)], (), {}),
    ("neg_to_mul", "NEG", [(2, 5)], (), {}),
    ("squared_difference_to_mul", "SQUARED_DIFFERENCE", [(2, 3, 4), (2, 3, 4)], (), {}),
    (
        "slice_to_4d",
        "SLICE",
        [(6, 5)],
        (np.array([1, 2], np.int32), np.array([3, -1], np.int32)),
        {"shape": (3, 3)},
    ),
    ("concat_to_4d", "CONCATENATION", [(2, 3), (2, 4)], (), {"axis": -1}),
    (
        "mean_to_average_pool",
        "MEAN",
        [(1, 5, 7, 3)],
        (np.array([1, 2], np.int32),),
        {"keep_dims": True},
    ),
    (
        "mean_to_average_pool",
        "MEAN",
        [(2, 4, 4, 3)],
        (np.array([2, 1], np.int32),),
        {"keep_dims": False},
    ),
    (
        "fully_connected_to_conv",
        "FULLY_CONNECTED",
        [(3, 8)],
        (
            np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32),
            np.arange(5, dtype=np.float32),
        ),
        {},
    ),
]


@pytest.mark.parametrize(
    ("name", "kind", "inputs", "consts", "options"),
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_lowering_preserves_numerics(name, kind, inputs, consts, options):
    G = _graph(kind, inputs, consts, **options)
    H, used = _lower_away(G, kind)
    assert name in used
    assert kind not in {H.nodes[n]["op"].kind for n in H} or kind in ("SLICE", "CONCATENATION")
    _assert_same(G, H)


@pytest.mark.parametrize("kind", ["SPLIT", "SPLIT_V"])
def test_split_becomes_slices(kind):
    #   x (4, 6) ──SPLIT(axis 1)──► three (4, 2) / SPLIT_V sizes (1, -1, 2)
    b = GraphBuilder("split")
    x = b.input("x", (4, 6))
    if kind == "SPLIT":
        outs = b.op(
            "SPLIT",
            np.array([1], np.int32),
            x,
            num_splits=3,
            n_outputs=3,
            shape=[(4, 2)] * 3,
            dtype="float32",  # with shape= the builder takes input 0's dtype (the axis)
        )
    else:
        outs = b.op(
            "SPLIT_V",
            x,
            np.array([1, -1, 2], np.int32),
            np.array([1], np.int32),
            num_splits=3,
            n_outputs=3,
            shape=[(4, 1), (4, 3), (4, 2)],
        )
    G = b.build(outputs=list(outs))
    H, used = _lower_away(G, kind)
    assert used[0].startswith("split")
    assert {H.nodes[n]["op"].kind for n in H} == {"SLICE", "RESHAPE"}
    _assert_same(G, H)


def test_int8_mean_requantizes_after_the_pool():
    q_in, q_out = Quantization((0.05,), (3,)), Quantization((0.02,), (-1,))
    axes = np.array([1, 2], np.int32)
    from tacopt.fusion.ir import Buffer, Op

    G = make_graph(
        "m",
        [
            Tensor("x", (1, 4, 4, 2), "int8", quantization=q_in),
            Tensor("axes", (2,), "int32", buffer=Buffer.from_bytes(axes)),
            Tensor("y", (1, 1, 1, 2), "int8", quantization=q_out),
        ],
        [Op("mean_0", "MEAN", ("x", "axes"), ("y",), {"keep_dims": True})],
        ["x"],
        ["y"],
    )
    H, used = _lower_away(G, "MEAN")
    assert [H.nodes[n]["op"].kind for n in H] == ["AVERAGE_POOL_2D", "QUANTIZE"]
    feeds = random_inputs(G, seed=2)
    want, got = run_graph(G, feeds)["y"], run_graph(H, feeds)["y"]
    assert np.abs(want.astype(int) - got.astype(int)).max() <= 1


def test_unlowerable_op_is_kept_and_nothing_changes():
    G = _graph("TANH", [(2, 2)])
    H, used = lower_graph(G, lambda H, n: False)
    assert H is G and used == ()


def test_table_rows_are_unique_and_named():
    names = [row.name for row in LOWERINGS]
    assert len(names) == len(set(names))

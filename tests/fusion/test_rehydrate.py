"""Rehydration: every dropped constant gets seeded random values of its dtype, nothing else."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from tacopt.errors import GraphError, ResourceLimitError
from tacopt.fusion.ir import Buffer, Op, Tensor, all_graphs, ir_diff, make_graph, validate_graph
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import rehydrate, strip_weights
from tacopt.fusion.tflite.writer import write_tflite
from tests.conftest import bundled_files


def _constants(G: nx.MultiDiGraph) -> list[Tensor]:
    return [t for g in all_graphs(G) for t in g.graph["tensors"].values() if t.is_constant]


@pytest.mark.parametrize(
    "name", ["keras__mobilenet_v2_int8.tflite", "keras__text_lstm_float32.tflite"]
)
def test_fills_every_placeholder_and_keeps_the_rest(
    name: str, bundled_models: dict[str, Path]
) -> None:
    G = read_tflite(bundled_models[name])
    H = rehydrate(G, seed=0)
    validate_graph(H)
    before, after = _constants(G), _constants(H)
    assert [t.name for t in before] == [t.name for t in after]
    assert any(t.buffer.is_placeholder for t in before)
    for old, new in zip(before, after):
        assert not new.buffer.is_placeholder
        assert new.buffer.nbytes == old.buffer.nbytes
        if not old.buffer.is_placeholder:
            assert new.buffer is old.buffer  # kept constants are untouched (still views)
        else:
            values = new.data()
            assert values.shape == new.shape
            if new.dtype == "int8":
                assert values.min() >= -127 and values.max() <= 127
            if new.dtype == "float32":
                assert np.isfinite(values).all() and np.abs(values).max() <= 2.0
    # the input graph is not modified
    assert [t.buffer.is_placeholder for t in _constants(G)] == [
        t.buffer.is_placeholder for t in before
    ]
    assert H.graph["model"] == G.graph["model"]


def test_seeds_are_deterministic(bundled_models: dict[str, Path]) -> None:
    G = read_tflite(bundled_models["keras__mobilenet_v2_float32.tflite"])
    a, b, c = rehydrate(G, seed=1), rehydrate(G, seed=1), rehydrate(G, seed=2)
    assert ir_diff(a, b) == []
    assert ir_diff(a, c) != []


def test_shared_placeholder_stays_shared_and_ops_are_kept() -> None:
    #  x --ADD(x, w)--> y --SUB(y, w2)--> z ;  w and w2 share one dropped buffer
    shared = Buffer.placeholder(4 * 32)
    tensors = [
        Tensor("x", (32,), "float32"),
        Tensor("w", (32,), "float32", buffer=shared),
        Tensor("w2", (32,), "float32", buffer=shared),
        Tensor("y", (32,), "float32"),
        Tensor("z", (32,), "float32"),
    ]
    ops = [Op("add_0", "ADD", ("x", "w"), ("y",)), Op("sub_1", "SUB", ("y", "w2"), ("z",))]
    H = rehydrate(make_graph("main", tensors, ops, ["x"], ["z"]), seed=0)
    t = H.graph["tensors"]
    assert t["w"].buffer is t["w2"].buffer and not t["w"].buffer.is_placeholder
    assert np.abs(t["w"].data()).max() <= 0.1  # vectors: small values
    assert list(H.nodes) == ["add_0", "sub_1"]
    assert H.edges["add_0", "sub_1", "y"]["tensor"] == t["y"]


@pytest.mark.parametrize(
    ("dtype", "shape", "nbytes"),
    [("float16", (8, 16), 256), ("int32", (40,), 160), ("bool", (100,), 100), ("int4", (64,), 32)],
)
def test_dtypes_get_their_own_values(dtype: str, shape: tuple, nbytes: int) -> None:
    w = Tensor("w", shape, dtype, buffer=Buffer.placeholder(nbytes))
    G = make_graph("main", [w], [], [], [])
    t = rehydrate(G, seed=5).graph["tensors"]["w"]
    assert t.buffer.nbytes == nbytes
    if dtype == "int32":
        assert np.abs(t.data()).max() <= 64
    if dtype == "bool":
        assert set(np.unique(t.data().view(np.uint8))) <= {0, 1}
    if dtype == "float16":
        assert np.isfinite(t.data()).all()


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_strip_weights_inverts_rehydrate(path: Path) -> None:
    # the zoo's structure-only convention is reproduced exactly: same placeholders, same kept bytes
    G = read_tflite(path)
    H = strip_weights(rehydrate(G, seed=0))
    validate_graph(H)
    assert ir_diff(G, H) == []


def test_strip_weights_keeps_small_and_shape_like_buffers() -> None:
    shape = Buffer.from_bytes(np.arange(40, dtype=np.int32))
    tensors = [
        Tensor("big", (100,), "float32", buffer=Buffer.from_bytes(bytes(400))),
        Tensor("small", (16,), "float32", buffer=Buffer.from_bytes(bytes(64))),
        Tensor("shape", (40,), "int32", buffer=shape),
    ]
    t = strip_weights(make_graph("main", tensors, [], [], [])).graph["tensors"]
    assert t["big"].buffer.is_placeholder and t["big"].buffer.nbytes == 400
    assert not t["small"].buffer.is_placeholder and t["shape"].buffer is shape


def test_make_zoo_structure_only_step_reproduces_the_manifest(
    bundled_models: dict[str, Path], bundled_manifest: dict[str, dict], tmp_path: Path
) -> None:
    from tacopt.benchmarks.scripts.zoo.make_zoo import structure_only

    name = "keras__text_lstm_tfkeras_int8.tflite"
    full = tmp_path / "full.tflite"
    write_tflite(rehydrate(read_tflite(bundled_models[name]), seed=0), full)
    row = structure_only(full, tmp_path / name)
    want = bundled_manifest[name]
    for key in ("subgraphs", "ops", "tensors", "op_histogram", "inputs", "outputs"):
        assert row[key] == want[key], key
    assert row["bytes"] < row["original_bytes"]
    assert ir_diff(read_tflite(tmp_path / name), read_tflite(bundled_models[name])) == []


def _placeholder_graph(nbytes: int) -> nx.MultiDiGraph:
    #  x -> [FULLY_CONNECTED w] -> y, w dropped (a placeholder claiming nbytes)
    w = Tensor("w", (4, 8), "float32", buffer=Buffer.placeholder(nbytes, index=3))
    ts = [Tensor("x", (1, 8), "float32"), w, Tensor("y", (1, 4), "float32")]
    return make_graph("main", ts, [Op("fc_0", "FULLY_CONNECTED", ("x", "w"), ("y",))],
                      ["x"], ["y"])  # fmt: skip


@pytest.mark.parametrize("claim", [2**30, 2**33, 2**52])
def test_a_size_claim_that_contradicts_the_shape_is_refused_before_allocating(claim: int) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(GraphError, match=r"tensor 'w' \(buffer 3\): constant holds"):
            rehydrate(_placeholder_graph(claim), seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_the_weight_cap_is_checked_up_front_and_can_be_raised() -> None:
    G = _placeholder_graph(128)
    with pytest.raises(ResourceLimitError, match=r"'w' \(buffer 3\).*over the cap of 100"):
        rehydrate(G, seed=0, max_bytes=100)
    assert rehydrate(G, seed=0, max_bytes=128).graph["tensors"]["w"].data().shape == (4, 8)

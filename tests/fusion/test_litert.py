"""The LiteRT runner: graphs with custom fused ops run in segments, tolerances per dtype, and
one-line errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from flatbuffers import flexbuffers

from tacopt.errors import ExecutionError
from tacopt.fusion.fuse import fuse
from tacopt.fusion.ir import Quantization, Tensor, make_graph, ops_of
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.litert import (
    assert_same_outputs,
    check_fused_regions,
    output_mismatches,
    random_inputs,
    run_graph,
)
from tacopt.fusion.unfuse import unfuse


def _swish_then_layer_norm():
    """x ─MUL(x, LOGISTIC x)─ADD(1)─┬─ Keras LayerNorm lowering ─► y
    (fused: CUSTOM:Swish ─ ADD ─ CUSTOM:LayerNorm: two kernels around one LiteRT segment)"""
    b = GraphBuilder()
    x = b.input("x", (2, 8))
    h = b.op("ADD", b.op("MUL", x, b.op("LOGISTIC", x)), np.float32(1))
    axes = np.array([-1], np.int32)
    m = b.op("MEAN", h, axes, keep_dims=True)
    v = b.op("MEAN", b.op("SQUARED_DIFFERENCE", h, m), axes, keep_dims=True)
    g = b.op("MUL", b.op("RSQRT", b.op("ADD", v, np.float32(1e-3))), np.linspace(0.5, 2, 8))
    return b.build(outputs=[b.op("ADD", b.op("MUL", h, g), b.op("MUL", b.op("NEG", m), g))])


def test_custom_ops_run_between_litert_segments():
    G = _swish_then_layer_norm()
    F = fuse(G).graph
    assert [op.kind for _, op in ops_of(F)] == ["CUSTOM:Swish", "ADD", "CUSTOM:LayerNorm"]
    got = assert_same_outputs(G, F)
    (y,) = F.graph["outputs"]
    assert got[y].shape == (2, 8) and np.isfinite(got[y]).all()
    assert check_fused_regions(G, F) == 2
    assert_same_outputs(F, unfuse(F), seed=4)


def test_a_wrong_kernel_is_caught_per_region():
    G = _swish_then_layer_norm()
    F = fuse(G).graph
    name, op = next((n, op) for n, op in ops_of(F) if op.kind == "CUSTOM:LayerNorm")
    # epsilon 0.5 instead of 1e-3: the kernel's output drifts from the region it replaced
    options = bytes(flexbuffers.Dumps({"epsilon": 0.5, "axis": -1}))
    F.nodes[name]["op"] = dataclasses.replace(op, custom_options=options)
    with pytest.raises(ExecutionError, match=f"fused op '{name}' \\(CUSTOM:LayerNorm\\)"):
        check_fused_regions(G, F)
    with pytest.raises(ExecutionError, match="max error"):
        assert_same_outputs(G, F)


def test_tolerances_per_dtype():
    ts = {
        "f": Tensor("f", (2,), "float32"),
        "q": Tensor("q", (2,), "int8", quantization=Quantization((0.1,), (0,))),
        "i": Tensor("i", (2,), "int32"),
    }
    want = {"f": np.array([100.0, -1.0]), "q": np.array([5, 6], np.int8), "i": np.array([1, 2])}
    near = {"f": want["f"] + 5e-3, "q": np.array([6, 5], np.int8), "i": want["i"]}
    assert output_mismatches(want, near, ts) == []  # 5e-3 <= 1e-4 * 100; one step
    far = {"f": want["f"] + 2e-2, "q": np.array([7, 6], np.int8), "i": want["i"] + 1}
    assert [line.split()[0] for line in output_mismatches(want, far, ts)] == ["f", "q", "i"]
    assert output_mismatches(want, {}, ts) == ["f: missing", "q: missing", "i: missing"]


def test_missing_input_and_unrunnable_model_are_one_line_errors():
    G = make_graph(
        "g",
        [Tensor("x", (2,), "float32"), Tensor("y", (2,), "float32")],
        [],
        ["x"],
        ["y"],
    )
    with pytest.raises(ExecutionError, match="no value for input 'x'"):
        run_graph(G, {})
    b = GraphBuilder()
    y = b.op("CUSTOM:NoSuchKernel", b.input("x", (2,)), shape=(2,))
    with pytest.raises(ExecutionError) as err:
        run_graph(b.build(outputs=[y]), {"x": np.zeros(2, np.float32)})
    assert str(err.value) == "graph 'main': LiteRT: Encountered unresolved custom op: NoSuchKernel."


def test_random_inputs_are_reproducible_and_index_in_range():
    b = GraphBuilder()
    ids = b.input("ids", (64,), "int32")
    x = b.input("x", (3, 4))
    q = b.input("q", (5,), "int8", quantization=Quantization((0.5,), (3,)))
    G = b.build(outputs=[b.op("GATHER", np.zeros((7, 2), np.float32), ids), x, q])
    a, c = random_inputs(G, seed=3), random_inputs(G, seed=3)
    assert all(np.array_equal(a[k], c[k]) for k in a)
    assert not np.array_equal(a["x"], random_inputs(G, seed=4)["x"])
    assert a["ids"].min() >= 0 and a["ids"].max() < 7  # indexes the 7-row table
    assert a["x"].dtype == np.float32 and np.abs(a["x"]).max() <= 1 and a["q"].dtype == np.int8

"""The fusion registry and the composite pass."""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers

from tacopt.errors import FusionError
from tacopt.fusion.fuse import fuse
from tacopt.fusion.ir import Op, ops_of, validate_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.rules.base import Rewrite
from tacopt.fusion.rules.composites import get_fusion, register_fusion, unregister_fusion
from tacopt.fusion.tflite.litert import assert_same_outputs


def _embedding_graph(max_norm=0.0):
    """ids ─[ embedding_lookup: GATHER(table, ids) ]─ RELU ─► y"""
    b = GraphBuilder()
    ids = b.input("ids", (5,), "int32")
    table = np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32)
    with b.composite("embedding_lookup", max_norm=max_norm):
        rows = b.op("GATHER", table, ids)
    return b.build(outputs=[b.op("RELU", rows)])


def test_embedding_lookup_composite_becomes_embedding_lookup():
    G = _embedding_graph()
    r = fuse(G)
    validate_graph(r.graph)
    assert [op.kind for _, op in ops_of(r.graph)] == ["EMBEDDING_LOOKUP", "RELU"]
    assert r.counts == {"embedding_lookup": 1} and r.graph.graph["composites"] == ()
    inputs = {"ids": np.array([0, 9, 3, 3, 1], np.int32)}
    assert_same_outputs(G, r.graph, inputs)


def test_failed_signature_warns_or_raises_and_leaves_region():
    G = _embedding_graph(max_norm=1.0)
    r = fuse(G)
    assert [op.kind for _, op in ops_of(r.graph)] == ["GATHER", "RELU"]
    assert (
        len(r.warnings) == 1 and "embedding_lookup" in r.warnings[0] and "max_norm" in r.warnings[0]
    )
    with pytest.raises(FusionError, match="gather_0.*max_norm"):
        fuse(G, strict=True)


def test_tfl_fusable_op_becomes_custom_op_with_flexbuffer_options():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    with b.composite("my_scale", tfl_fusable_op=True, name="MyScale", factor=2.5):
        y = b.op("MUL", x, np.float32(2.5))
    r = fuse(b.build(outputs=[y]), rules=[])
    (op,) = [op for _, op in ops_of(r.graph)]
    assert op.kind == "CUSTOM:MyScale" and op.inputs == ("x", "const_0") and op.outputs == (y,)
    assert flexbuffers.Loads(op.custom_options) == {"factor": 2.5}


def test_unknown_composite_warns_with_known_names():
    b = GraphBuilder()
    with b.composite("nobody_knows"):
        y = b.op("RELU", b.input("x", (2,)))
    r = fuse(b.build(outputs=[y]))
    assert "embedding_lookup" in r.warnings[0]
    with pytest.raises(FusionError, match="known: .*embedding_lookup"):
        get_fusion("nobody_knows")


def test_user_registered_fusion_from_outside_the_package():
    def verify(ed, c):
        acts = [t for t in c.inputs if not ed.is_const(t)]
        return None if len(acts) == 1 else "expected one activation input"

    def rewrite(ed, c):
        return Rewrite(
            c.ops,
            (
                Op(
                    "double_0",
                    "ADD",
                    ("x", "x"),
                    c.outputs,
                    {"fused_activation_function": "NONE"},
                ),
            ),
        )

    register_fusion("double_it", verify, rewrite)
    try:
        with pytest.raises(FusionError, match="already registered"):
            register_fusion("double_it", verify, rewrite)
        b = GraphBuilder()
        x = b.input("x", (3,))
        with b.composite("double_it"):
            y = b.op("MUL", x, np.float32(2))
        G = b.build(outputs=[y])
        r = fuse(G, rules=[])
        assert r.counts == {"double_it": 1}
        assert_same_outputs(G, r.graph, seed=0)
    finally:
        unregister_fusion("double_it")

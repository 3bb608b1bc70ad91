"""fuse() on real zoo models: valid graphs, origins, idempotence, input untouched."""

from __future__ import annotations

import pytest

from tacopt.fusion.fuse import BUILTIN_ONLY_RULES, fuse, op_histogram
from tacopt.fusion.ir import ir_diff, ops_of, validate_graph
from tacopt.fusion.tflite.reader import read_tflite

MODELS = {
    "keras__convnext_tiny_float32.tflite": {"layer_norm": 23},
    "keras__efficientnet_b0_float32.tflite": {"swish": 49},
    "keras__mobilenet_v2_float32.tflite": {},
    "keras__text_transformer_float32.tflite": {"layer_norm": 4},
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fuse_zoo_model(zoo_dir, name):
    G = read_tflite(zoo_dir / name)
    before = read_tflite(zoo_dir / name)
    r = fuse(G)
    validate_graph(r.graph)
    assert r.counts == MODELS[name]
    assert ir_diff(G, before) == []  # the input is not mutated
    assert r.ops_before == G.number_of_nodes() and r.ops_after == r.graph.number_of_nodes()
    origins = [i for _, op in ops_of(r.graph) for i in op.origin]
    assert sorted(origins) == list(range(G.number_of_nodes()))  # each original op, once
    assert fuse(r.graph).counts == {}  # a fixed point


def test_builtin_only_rules_leave_no_custom_ops(zoo_dir):
    r = fuse(read_tflite(zoo_dir / "keras__convnext_tiny_float32.tflite"), rules=BUILTIN_ONLY_RULES)
    assert not any(k.startswith("CUSTOM:") for k in op_histogram(r.graph))

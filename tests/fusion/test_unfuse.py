"""unfuse -> fuse round trip (zoo and bundled models, builder graphs): op kinds and counts, and
numerics in LiteRT."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.fusion.fuse import fuse, op_histogram
from tacopt.fusion.ir import ops_of, validate_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.litert import assert_same_outputs, check_fused_regions, random_inputs
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import rehydrate
from tacopt.fusion.unfuse import unfuse

STRUCTURE = [
    "keras__densenet121_int8.tflite",
    "keras__mobilenet_v3_large_float32.tflite",
    "keras__nasnet_mobile_float32.tflite",
    "keras__resnet50_float32.tflite",
    "torch__vit_b_16_float32.tflite",
    "keras__convnext_tiny_float32.tflite",
]
NUMERICS = [
    "keras__mobilenet_v3_small_float32.tflite",
    "keras__text_transformer_float32.tflite",
    "keras__mobilenet_v1_int8.tflite",
]


@pytest.mark.parametrize("name", STRUCTURE)
def test_round_trip_structure(zoo_dir, name):
    G = read_tflite(zoo_dir / name)
    U = unfuse(G)
    validate_graph(U)
    assert U.number_of_nodes() > G.number_of_nodes()
    assert op_histogram(fuse(U).graph) == op_histogram(fuse(G).graph)
    if name != "keras__convnext_tiny_float32.tflite":  # convnext fuses further (LayerNorm)
        assert op_histogram(fuse(U).graph) == op_histogram(G)


@pytest.mark.parametrize("name", NUMERICS)
def test_round_trip_numerics(zoo_dir, name):
    R = rehydrate(read_tflite(zoo_dir / name), seed=0)
    U = unfuse(R)
    F = fuse(U).graph
    inputs = random_inputs(R, seed=1)
    for H in (U, F):
        assert_same_outputs(R, H, inputs)
    check_fused_regions(U, F)


def _filters(b, x):
    """x ─CONV_2D(relu6)─DEPTHWISE(relu)─TRANSPOSE_CONV─AVERAGE_POOL_2D(relu)─ADD(relu_n1_to_1)─►"""
    rng = np.random.default_rng(0)
    w = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    h = b.op("CONV_2D", x, w(4, 3, 3, 3), w(4), fused_activation_function="RELU6")
    h = b.op("DEPTHWISE_CONV_2D", h, w(1, 3, 3, 4), w(4), fused_activation_function="RELU")
    h = b.op("TRANSPOSE_CONV", np.array([1, 6, 6, 2], np.int32), w(2, 3, 3, 4), h, w(2))
    h = b.op("AVERAGE_POOL_2D", h, fused_activation_function="RELU")
    return b.op("ADD", h, w(2), fused_activation_function="RELU_N1_TO_1")


def _dense(b, x):
    """x ─FULLY_CONNECTED(relu)─MUL(relu6)─►"""
    rng = np.random.default_rng(1)
    w, bias = rng.standard_normal((5, 8)), rng.standard_normal(5)
    h = b.op("FULLY_CONNECTED", x, w.astype(np.float32), bias.astype(np.float32),
             fused_activation_function="RELU")  # fmt: skip
    return b.op("MUL", h, np.float32(3), fused_activation_function="RELU6")


@pytest.mark.parametrize("build, shape", [(_filters, (1, 6, 6, 3)), (_dense, (2, 8))])
def test_unfused_bias_and_activations_match_in_litert(build, shape):
    """Every bias (CONV_2D, DEPTHWISE, TRANSPOSE_CONV, FC) and fused activation unfolds into
    its own op, and the unfused graph gives the same outputs in LiteRT."""
    b = GraphBuilder()
    G = b.build(outputs=[build(b, b.input("x", shape))])
    U = unfuse(G)
    validate_graph(U)
    acts = {"RELU", "RELU6", "RELU_N1_TO_1"}
    assert all(
        op.options.get("fused_activation_function", "NONE") == "NONE" for _, op in ops_of(U)
    )
    assert sum(op.kind in acts for _, op in ops_of(U)) == sum(
        op.options.get("fused_activation_function", "NONE") != "NONE" for _, op in ops_of(G)
    )
    assert_same_outputs(G, U)
    assert op_histogram(fuse(U).graph) == op_histogram(G)


@pytest.mark.parametrize(
    "name, fusions",
    [
        ("keras__text_transformer_float32.tflite", {"layer_norm": 4}),
        ("keras__text_lstm_float32.tflite", {"lstm": 1}),
        ("keras__mobilenet_v2_float32.tflite", {}),
        ("keras__mobilenet_v2_int8.tflite", {}),
    ],
)
def test_bundled_models_fuse_and_unfuse_match_in_litert(bundled_models, name, fusions):
    """Always-present models (no zoo needed): fuse(G), unfuse(G) and fuse(unfuse(G)) give G's
    outputs in LiteRT, and every custom fused op matches the region it replaced."""
    G = rehydrate(read_tflite(bundled_models[name]), seed=0)
    r = fuse(G)
    assert r.counts == fusions
    U = unfuse(G)
    feeds = random_inputs(G, seed=2)
    for H in (r.graph, U, fuse(U).graph):
        assert_same_outputs(G, H, feeds)
    assert check_fused_regions(G, r.graph) == fusions.get("layer_norm", 0)

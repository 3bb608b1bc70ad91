"""unfuse -> fuse round trip on zoo models: op kinds and counts, and numerics in LiteRT."""

from __future__ import annotations

import pytest

from tacopt.fusion.fuse import fuse, op_histogram
from tacopt.fusion.ir import validate_graph
from tacopt.fusion.litert import assert_same_outputs, check_fused_regions, random_inputs
from tacopt.fusion.reader import read_tflite
from tacopt.fusion.rehydrate import rehydrate
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

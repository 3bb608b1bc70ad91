"""Exported partitioned models run in ai-edge-litert with the original model's outputs."""

from __future__ import annotations

import pytest

from tacopt.benchmarks.scripts.pipeline.check_partition import check_model

CASES = [
    ("keras__mobilenet_v2_int8.tflite", "GPU,NNAPI,CPU", "op"),
    ("keras__text_lstm_tfkeras_int8.tflite", "GPU,CPU", "subgraph"),
    ("torch__resnet18_float32.tflite", "NNAPI,CPU", "subgraph"),
    ("keras__text_transformer_float32.tflite", "GPU,CPU", "op"),
]


@pytest.mark.parametrize(("model", "devices", "granularity"), CASES)
def test_exported_model_matches_original(bundled_models, model, devices, granularity):
    check = check_model(bundled_models[model], devices, granularity)
    assert check.ok, check
    assert sum(check.devices_used.values()) > 0


def test_zoo_convnext_with_lowerings_matches(zoo_dir):
    check = check_model(zoo_dir / "keras__convnext_tiny_float32.tflite", "NNAPI,CPU", "op")
    assert check.ok and "NNAPI" in check.devices_used, check


def test_int8_units_run_as_float_match_the_same_typed_reference(zoo_dir):
    """Float views of int8 units differ from the int8 model (saturation), not from the plan."""
    check = check_model(zoo_dir / "keras__text_transformer_int8.tflite", "GPU,CPU", "op")
    assert check.ok and check.float_units > 0 and check.max_error == 0.0, check


def test_int8_mean_lowering_is_within_one_step_locally(zoo_dir):
    check = check_model(zoo_dir / "keras__resnet50_int8.tflite", "NNAPI,CPU", "subgraph")
    assert check.ok and check.lowered_units == 1 and check.float_units == 0, check
    assert check.vs_original == 0.0

"""Exported partitioned models run in ai-edge-litert with the original model's outputs."""

from __future__ import annotations

import pytest

from benchmarks.check_partition import check_model

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

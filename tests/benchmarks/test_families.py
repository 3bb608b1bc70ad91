"""The learned model's test families (issue 47): both sets are real .tflite files of the kinds
their docstrings promise, the second set kept apart from the first."""

from __future__ import annotations

from pathlib import Path

from tacopt.benchmarks.scripts.learned import families


def test_both_family_sets_are_written_as_models_of_their_kinds(tmp_path: Path) -> None:
    first = families.write_models(tmp_path / "first")
    held = families.write_models(tmp_path / "held", families.HELDOUT_FAMILIES)
    assert len(first) == 15 and len(held) == 18
    assert not {families.family_of(p.stem) for p in first} & set(families.HELDOUT_FAMILIES)
    kinds = families.family_kinds(held)
    assert {"DEPTH_TO_SPACE", "RESIZE_NEAREST_NEIGHBOR"} <= kinds["superres"]
    assert {"CUSTOM:Convolution2DTransposeBias", "CUSTOM:TransformLandmarks"} <= kinds["landmark"]
    assert {"GATHER", "SUM", "BATCH_MATMUL", "CONCATENATION"} <= kinds["recsys"]
    assert {"HARD_SWISH", "RELU6", "MEAN"} <= kinds["mobilenet"]
    assert {"ARG_MAX", "REDUCE_MAX", "STRIDED_SLICE", "EXP", "GREATER"} <= kinds["ssdpost"]
    assert {"AVERAGE_POOL_2D", "DEPTHWISE_CONV_2D", "SOFTMAX"} <= kinds["kws"]

"""The third held-out family set (issue 47, session 4): real .tflite files of the kinds its
docstring promises, families apart from both earlier sets."""

from __future__ import annotations

from pathlib import Path

from tacopt.benchmarks.scripts.learned import families
from tacopt.benchmarks.scripts.learned.family_sets.third import THIRD_FAMILIES


def test_third_set_is_written_as_models_of_its_kinds(tmp_path: Path) -> None:
    paths = families.write_models(tmp_path, THIRD_FAMILIES)
    assert len(paths) == 18
    assert not set(THIRD_FAMILIES) & (set(families.FAMILIES) | set(families.HELDOUT_FAMILIES))
    kinds = families.family_kinds(paths)
    assert {"RESIZE_NEAREST_NEIGHBOR", "CONCATENATION", "MAX_POOL_2D"} <= kinds["unet"]
    assert {"SOFTMAX", "BATCH_MATMUL", "TRANSPOSE", "REDUCE_MAX"} <= kinds["pose"]
    assert "ARG_MAX" not in kinds["pose"]
    assert {"SPLIT", "LOGISTIC", "MUL", "EXPAND_DIMS", "SQUEEZE", "TANH"} <= kinds["speech"]
    assert {"SQUARED_DIFFERENCE", "RSQRT", "MEAN", "GELU", "STRIDED_SLICE"} <= kinds["vit"]
    assert {"TRANSPOSE", "STRIDED_SLICE", "LOG_SOFTMAX"} <= kinds["crnn"]
    assert {"CUSTOM:TransformTensorBilinear", "CUSTOM:Convolution2DTransposeBias",
            "PRELU", "PAD"} <= kinds["facemesh"]  # fmt: skip


def test_families_write_third_set_from_the_command_line(tmp_path: Path) -> None:
    assert families.main(["write", str(tmp_path), "--set", "third"]) == 0
    assert len(list(tmp_path.glob("*.tflite"))) == 18

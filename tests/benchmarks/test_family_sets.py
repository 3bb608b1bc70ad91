"""The third and fourth held-out family sets (issue 47, sessions 4 and 5): real .tflite files of
the kinds their docstrings promise, families apart from every earlier set."""

from __future__ import annotations

from pathlib import Path

import pytest

from tacopt.benchmarks.scripts.learned import families
from tacopt.benchmarks.scripts.learned.family_sets.fourth import FOURTH_FAMILIES
from tacopt.benchmarks.scripts.learned.family_sets.third import THIRD_FAMILIES
from tacopt.errors import ExecutionError
from tacopt.fusion.ir.inputs import random_inputs
from tacopt.fusion.tflite.litert import run_tflite
from tacopt.fusion.tflite.reader import read_tflite


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


def test_fourth_set_is_written_as_models_of_its_kinds_that_run(tmp_path: Path) -> None:
    paths = families.write_models(tmp_path, FOURTH_FAMILIES)
    assert len(paths) == 21 and all(len(b) == 3 for b in FOURTH_FAMILIES.values())
    earlier = set(families.FAMILIES) | set(families.HELDOUT_FAMILIES) | set(THIRD_FAMILIES)
    assert not set(FOURTH_FAMILIES) & earlier
    kinds = families.family_kinds(paths)  # each read back and validated
    assert {"AVERAGE_POOL_2D", "LOGISTIC", "CONCATENATION", "DEPTHWISE_CONV_2D",
            "MUL"} <= kinds["ghostnet"]  # fmt: skip
    assert {"GATHER", "BATCH_MATMUL", "SOFTMAX", "FULLY_CONNECTED", "PAD", "CAST",
            "TANH"} <= kinds["mobilebert"]  # fmt: skip
    assert {"SPLIT_V", "TRANSPOSE", "SLICE", "RESIZE_NEAREST_NEIGHBOR", "TOPK_V2",
            "GATHER"} <= kinds["yolo"]  # fmt: skip
    assert {"RESIZE_BILINEAR", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "ARG_MAX",
            "MEAN"} <= kinds["aspp"]  # fmt: skip
    assert {"MIRROR_PAD", "TRANSPOSE_CONV", "RSQRT", "RESIZE_NEAREST_NEIGHBOR"} <= kinds["style"]
    assert {"CUSTOM:Landmarks2TransformMatrix", "MAXIMUM", "MINIMUM", "RESIZE_BILINEAR",
            "MAX_POOL_2D"} <= kinds["palm"]  # fmt: skip
    assert {"SLICE", "PAD", "CONCATENATION", "LOGISTIC", "SQUEEZE"} <= kinds["onset"]
    for path in paths:  # invoked once each: they run, nothing is timed
        G = read_tflite(path)
        feeds = random_inputs(G, seed=0)
        if any(G.nodes[n]["op"].kind.startswith("CUSTOM:") for n in G):
            with pytest.raises(ExecutionError, match="unresolved custom op: Landmarks2Transform"):
                run_tflite(path.read_bytes(), feeds, where=path.name)
            continue
        out = run_tflite(path.read_bytes(), feeds, where=path.name)
        tensors = G.graph["tensors"]
        assert {k: v.shape for k, v in out.items()} == {
            t: tensors[t].shape for t in G.graph["outputs"]
        }, path.name
    assert sum(path.stem.startswith("palm__") and "matrix" in path.stem for path in paths) == 1


def test_families_write_fourth_set_from_the_command_line(tmp_path: Path) -> None:
    assert families.main(["write", str(tmp_path), "--set", "fourth"]) == 0
    assert len(list(tmp_path.glob("*.tflite"))) == 21

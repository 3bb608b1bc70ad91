"""Learned-model files and records are checked against their schema when they are loaded: each
broken file is one line naming the field, never a traceback or a prediction that loops."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from tacopt.cost_models.learned.fitting.model import DEFAULT_MODEL
from tacopt.cost_models.learned.fitting.schema import (
    LIMITS,
    check_model_doc,
    check_records,
    check_trees,
)
from tacopt.cost_models.protocol import CostModelError
from tacopt.io import read_json
from tacopt.partitioner.cli import main


@pytest.fixture(scope="module")
def shipped() -> dict:
    return read_json(DEFAULT_MODEL, "model", 1 << 30)


def _first_inner(tree: dict) -> int:
    return next(i for i, f in enumerate(tree["feature"]) if f >= 0)


def _family_tree(doc: dict) -> dict:
    return doc["family_trees"][sorted(doc["family_trees"])[0]][0]


def _break(shipped: dict, how: str) -> dict:
    """``shipped`` with one fault; only the parts it changes are copied (the whole is 10 MB)."""
    doc = dict(shipped)
    family = sorted(doc["family_trees"])[0]
    doc["family_trees"] = {**doc["family_trees"], family: list(doc["family_trees"][family])}
    doc["family_trees"][family][0] = copy.deepcopy(doc["family_trees"][family][0])
    doc["fingerprint"] = dict(doc["fingerprint"])
    doc["fits"] = {**doc["fits"], "*": copy.deepcopy(doc["fits"]["*"])}
    kind = sorted(doc["kind_models"])[0]
    doc["kind_models"] = {**doc["kind_models"], kind: dict(doc["kind_models"][kind])}
    doc["kind_models"][kind]["trees"] = [copy.deepcopy(doc["kind_models"][kind]["trees"][0]),
                                         *doc["kind_models"][kind]["trees"][1:]]  # fmt: skip
    tree = _family_tree(doc)
    i = _first_inner(tree)
    if how == "cycle":
        tree["left"][i] = i
    elif how == "child out of range":
        tree["right"][i] = 10**6
    elif how == "empty tree":
        tree.update(feature=[], threshold=[], left=[], right=[], value=[])
    elif how == "feature 1e20":
        tree["feature"][i] = 1e20
    elif how == "feature past the inputs":
        tree["feature"][i] = len(doc["tree_features"])
    elif how == "threshold NaN":
        tree["threshold"][i] = float("nan")
    elif how == "two parents":
        tree["right"][i] = tree["left"][i]
    elif how == "version inf":
        doc["version"] = float("inf")
    elif how == "threads 1.5":
        doc["fingerprint"]["threads"] = 1.5
    elif how == "weights a string":
        doc["fits"]["*"]["w"][0] = "1"
    elif how == "kind model cycle":
        km = doc["kind_models"][sorted(doc["kind_models"])[0]]["trees"][0]
        km["left"][_first_inner(km)] = 0
    elif how == "overhead negative":
        doc["overhead_us"] = -1.0
    return doc


BROKEN = ("cycle", "child out of range", "empty tree", "feature 1e20", "feature past the inputs",
          "threshold NaN", "two parents", "version inf", "threads 1.5", "weights a string",
          "kind model cycle", "overhead negative")  # fmt: skip


def test_the_shipped_model_passes(shipped):
    check_model_doc(shipped, str(DEFAULT_MODEL))


@pytest.mark.parametrize("how", BROKEN)
def test_each_broken_model_is_refused_naming_the_field(shipped, how):
    with pytest.raises(CostModelError, match=r"^learned model 'm.json': \S+: "):
        check_model_doc(_break(shipped, how), "m.json")


def test_a_broken_model_file_is_one_line_and_exit_2(shipped, tmp_path, bundled_models, capsys):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(_break(shipped, "cycle")))
    model = bundled_models["keras__text_lstm_float32.tflite"]
    capsys.readouterr()
    code = main(["partition", str(model), "--devices", "CPU", "--cost-model", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"learned model '{path}'" in err and "a cycle" in err


def test_version_1e400_is_refused(shipped, tmp_path):
    text = json.dumps({**shipped, "version": 13}).replace('"version": 13', '"version": 1e400')
    with pytest.raises(CostModelError, match="version"):
        check_model_doc(json.loads(text), "m.json")


def _chain(depth: int) -> dict:
    """A tree ``depth`` levels deep: inner node 2i has its leaf at 2i + 1, the next at 2i + 2."""
    tree: dict[str, list] = {k: [] for k in ("feature", "threshold", "left", "right", "value")}
    for i in range(depth):
        tree["feature"] += [0, -1]
        tree["threshold"] += [0.0, 0.0]
        tree["left"] += [2 * i + 1, -1]
        tree["right"] += [2 * i + 2, -1]
        tree["value"] += [0.0, 1.0]
    for k, v in (("feature", -1), ("threshold", 0.0), ("left", -1), ("right", -1), ("value", 2.0)):
        tree[k].append(v)
    return tree


def test_a_tree_deeper_than_the_limit_is_refused():
    check_trees([_chain(LIMITS["tree_depth"])], 1, ValueError)
    with pytest.raises(ValueError, match="deeper than"):
        check_trees([_chain(LIMITS["tree_depth"] + 1)], 1, ValueError)


def test_random_mutations_of_a_tree_are_refused_or_predict(shipped):
    import numpy as np

    from tacopt.cost_models.learned.fitting.trees import predict_stacked, stack_trees

    rng = random.Random(0)
    tree = _family_tree(shipped)
    width = len(shipped["tree_features"])
    refused = 0
    for _ in range(500):
        t = copy.deepcopy(tree)
        key = rng.choice(["feature", "left", "right"])
        j = rng.randrange(len(t[key]))
        t[key][j] = rng.choice([-2, -1, 0, j, j + 1, len(t[key]), width, 2**40, 0.5])
        try:
            check_trees([t], width, ValueError)
        except ValueError:
            refused += 1
            continue
        X = np.zeros((3, width))
        assert np.isfinite(predict_stacked(stack_trees([t]), X)).all()
    assert refused > 100


def _op_record() -> dict:
    return {"type": "op", "kind": "ADD", "inference_type": "FLOAT", "latency_us": 1.5,
            "flops": 8.0, "bytes": 96.0,
            "inputs": [[[1, 8], "float32", False, False], None],
            "outputs": [[[1, 8], "float32", False, False]], "options": {}, "key": "k"}  # fmt: skip


@pytest.mark.parametrize(
    "field, value, said",
    [("inputs", "abc", "inputs: not a list"), ("latency_us", "1.5", "latency_us: not a number"),
     ("latency_us", float("nan"), "latency_us: not a finite number"),
     ("inputs", [[[float("nan"), 8], "float32", False, False]], "not a finite number"),
     ("outputs", [[[1.5], "float32", False, False]], "not a whole number"),
     ("options", {"stride": float("inf")}, "options.stride: not a finite number"),
     ("kind", 3, "kind: not a string")],
)  # fmt: skip
def test_broken_records_are_one_line(field, value, said, tmp_path, capsys):
    good = _op_record()
    assert check_records([good], "r") == [good]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({**good, field: value}) + "\n" + json.dumps(good) + "\n")
    capsys.readouterr()
    assert main(["evaluate", "learned", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "line 1" in err, err


def test_records_of_a_real_learn_pass():
    records = Path(__file__).parents[2] / "benchmarks" / "results"
    files = sorted(records.glob("**/*.records.jsonl.gz"))[:1]
    if not files:
        pytest.skip("no records file in benchmarks/results")
    from tacopt.cost_models.learned.measurement.records import read_records

    assert len(read_records(files[0])) > 100


def test_the_kind_model_weights_are_those_the_kind_models_take():
    from tacopt.cost_models.learned.fitting import kind_models
    from tacopt.cost_models.learned.fitting.schema import KIND_WEIGHTS

    assert KIND_WEIGHTS == (kind_models._BASE_W, kind_models._BASE_W + 1)

"""``tacopt measure`` and ``tacopt fit``: inputs and outputs checked first, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.fusion.ir import Op, Tensor, make_graph
from tacopt.partitioner.cli import main


def tanh_model(folder: Path, name: str = "tanh.tflite") -> Path:
    """x ─ TANH ─ y, written to ``folder / name``."""
    from tacopt.fusion.tflite.writer import write_tflite

    G = make_graph(
        "main", [Tensor(n, (1, 64), "float32") for n in "xy"],
        [Op("tanh_0", "TANH", ("x",), ("y",))], ["x"], ["y"],
    )  # fmt: skip
    return write_tflite(G, folder / name)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tacopt ")
    return err


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("empty folder", "model folder '{tmp}/models' holds no .tflite file"),
        ("out is a folder", "--out: '{tmp}/models' is a folder, not a file"),
        ("out in a missing folder", "--out: folder '{tmp}/nodir' does not exist"),
        ("out is a model", "--out: '{tmp}/models/tanh.tflite' is not JSON lines"),
        ("no repeats", "--repeats: must be at least 1, got 0"),
    ],
)
def test_measure_refuses_bad_paths_before_measuring(tmp_path, capsys, setup, message) -> None:
    models = tmp_path / "models"
    models.mkdir()
    out, extra = tmp_path / "r.jsonl", []
    if setup != "empty folder":
        tanh_model(models)
    if setup == "out is a folder":
        out = models
    elif setup == "out in a missing folder":
        out = tmp_path / "nodir" / "r.jsonl"
    elif setup == "out is a model":
        out = models / "tanh.tflite"
    elif setup == "no repeats":
        extra = ["--repeats", "0"]
    assert main(["measure", str(models), "--out", str(out), "--quiet", *extra]) == 2
    assert message.format(tmp=tmp_path) in one_error_line(capsys)
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--types", "int4"], "argument --types: unknown type 'int4' (known: "),
        (["--types", "int8,int8"], "argument --types: 'int8' is listed twice in 'int8,int8'"),
        (["--resolver", "gpu"], "argument --resolver: unknown op resolver 'gpu' (known: "),
        (["--sweep", "5", "--prior", "zoo"], "argument --prior: unknown prior 'zoo' (known: "),
        # a negative budget was taken: the sweep stopped before its first op, exit 0
        (["--sweep", "5", "--max-minutes", "-1"], "argument --max-minutes: must be positive"),
    ],
)
def test_measure_option_values_are_checked_as_parsed(tmp_path, capsys, argv, message) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["measure", "--out", str(out), "--quiet", *argv]) == 2
    assert message in one_error_line(capsys)
    assert not out.exists()


def test_measure_takes_a_folder_and_prints_no_xnnpack_line(tmp_path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    tanh_model(models, "b.tflite")
    tanh_model(models, "a.tflite")
    (models / "notes.txt").write_text("not a model")
    out = tmp_path / "r.jsonl"
    argv = ["measure", str(models), "--out", str(out), "--quiet", "--repeats", "1"]
    result = subprocess.run(
        [sys.executable, "-m", "tacopt.partitioner.cli", *argv, "--warmup", "0"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # LiteRT's "INFO: Created TensorFlow Lite XNNPACK delegate"
    assert json.loads(result.stdout)["models"] == 2
    assert [r["model"] for r in read_records(out) if r["type"] == "model"] == ["a", "b"]


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ("model", "records file: '{tmp}/tanh.tflite' is not JSON lines"),
        ("text", "records file: '{tmp}/notes.jsonl' is not JSON lines"),
        ("folder", "records file: '{tmp}' is a folder, not a records file"),
        ("missing", "records file: '{tmp}/none.jsonl' does not exist"),
    ],
)
def test_fit_refuses_what_is_not_records(tmp_path, capsys, records, message) -> None:
    paths = {
        "model": tanh_model(tmp_path),
        "text": tmp_path / "notes.jsonl",
        "folder": tmp_path,
        "missing": tmp_path / "none.jsonl",
    }
    (tmp_path / "notes.jsonl").write_text("just a note\n")
    out = tmp_path / "model.json"
    assert main(["fit", str(paths[records]), "-o", str(out)]) == 2
    assert message.format(tmp=tmp_path) in one_error_line(capsys)
    assert not out.exists()


def test_fit_writes_nothing_when_the_evaluation_fails(tmp_path, capsys) -> None:
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"type": "op"}) + "\n")
    out = tmp_path / "model.json"
    assert main(["fit", str(records), "-o", str(tmp_path / "nodir" / "m.json")]) == 2
    assert "-o: folder" in one_error_line(capsys)
    assert main(["fit", str(records), "-o", str(out), "--eval", str(tmp_path / "no.jsonl")]) == 2
    assert "--eval: '" in one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl"]


def test_fit_has_a_description(capsys) -> None:
    assert main(["fit", "--help"]) == 0
    assert "Fit a learned per-op latency model" in capsys.readouterr().out

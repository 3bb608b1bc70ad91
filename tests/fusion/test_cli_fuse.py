"""`tacopt fuse` end to end."""

from __future__ import annotations

import json

from tacopt.fusion.tflite.reader import read_tflite
from tacopt.partitioner.cli import main


def test_fuse_json_and_output(zoo_dir, tmp_path, capsys):
    out = tmp_path / "fused.tflite"
    code = main(
        ["fuse", str(zoo_dir / "keras__text_lstm_float32.tflite"), "--json", "-o", str(out)]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["ops_before"], report["ops_after"]) == (31, 10)
    assert report["fusions"] == {"lstm": 1}
    assert report["op_histogram"]["UNIDIRECTIONAL_SEQUENCE_LSTM"] == 1
    assert read_tflite(out).number_of_nodes() == 10


def test_fuse_missing_file_exits_2(tmp_path, capsys):
    assert main(["fuse", str(tmp_path / "nope.tflite")]) == 2
    assert "nope.tflite" in capsys.readouterr().err


def test_fuse_checks_the_output_path_before_reading(bundled_models, tmp_path, capsys):
    model = str(bundled_models["keras__text_lstm_float32.tflite"])
    assert main(["fuse", model, "-o", str(tmp_path / "nodir" / "f.tflite")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-o: folder" in err and "does not exist" in err
    assert main(["fuse", model, "-o", str(tmp_path)]) == 2
    assert "is a folder, not a file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_model_that_fails_leaves_no_output(tmp_path, capsys):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model")
    assert main(["fuse", str(bad), "-o", str(tmp_path / "f.tflite")]) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["bad.tflite"]


def test_fuse_has_a_description(capsys):
    assert main(["fuse", "--help"]) == 0
    assert "Replace the composites" in capsys.readouterr().out

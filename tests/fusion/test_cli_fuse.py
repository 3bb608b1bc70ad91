"""`tacopt fuse` end to end."""

from __future__ import annotations

import json

from tacopt.fusion.reader import read_tflite
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

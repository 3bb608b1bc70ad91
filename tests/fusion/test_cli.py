"""``tacopt inspect`` / ``tacopt rehydrate``: output, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import ai_edge_litert.schema_py_generated as fb
import flatbuffers
import numpy as np
import pytest

from tacopt.fusion.reader import read_tflite
from tacopt.partitioner.cli import main

LSTM = "keras__text_lstm_float32.tflite"  # small, with WHILE subgraphs and signature defs


def _repack(data: bytes, edit: Callable[[fb.ModelT], None]) -> bytes:
    """``data`` decoded with the object API, edited, and packed again (to corrupt indices)."""
    model = fb.ModelT.InitFromObj(fb.Model.GetRootAs(data, 0))
    edit(model)
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _first_while(model: fb.ModelT) -> fb.OperatorT:
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    return next(
        op
        for op in model.subgraphs[0].operators
        if codes[op.opcodeIndex] == fb.BuiltinOperator.WHILE
    )


def _set(obj: object, attr: str, value: object) -> None:
    setattr(obj, attr, value)


def _set_first(obj: object, attr: str, value: int) -> None:
    """Replace element 0 of a vector field (the object API gives read-only numpy views)."""
    setattr(obj, attr, [value, *list(getattr(obj, attr))[1:]])


CORRUPTIONS: dict[str, tuple[Callable[[fb.ModelT], None], str]] = {
    "tensor index": (
        lambda m: _set_first(m.subgraphs[0].operators[0], "inputs", 9999),
        "tensor index 9999 out of range",
    ),
    "buffer index": (
        lambda m: _set(m.subgraphs[0].tensors[0], "buffer", 9999),
        "buffer index 9999 out of range",
    ),
    "opcode index": (
        lambda m: _set(m.subgraphs[0].operators[0], "opcodeIndex", 99),
        "opcode index 99 out of range",
    ),
    "subgraph index": (
        lambda m: _set(_first_while(m).builtinOptions, "bodySubgraphIndex", 42),
        "subgraph index 42 out of range",
    ),
    "signature subgraph": (
        lambda m: _set(m.signatureDefs[0], "subgraphIndex", 7),
        "subgraph index 7 out of range",
    ),
    "graph output": (
        lambda m: _set_first(m.subgraphs[0], "outputs", -5),
        "tensor index -5 out of range",
    ),
}


def _bad_files(tmp_path: Path, good: bytes) -> dict[str, tuple[Path, str]]:
    """name -> (path, expected message fragment) for every bad-input case of the issue."""
    cases: dict[str, tuple[Path, str]] = {
        "missing": (tmp_path / "missing.tflite", "no such file"),
        "directory": (tmp_path, "is a directory"),
    }

    def put(name: str, data: bytes, message: str) -> None:
        path = tmp_path / f"{name.replace(' ', '_')}.tflite"
        path.write_bytes(data)
        cases[name] = (path, message)

    put("empty", b"", "empty file")
    put("not a flatbuffer", b"PK\x03\x04 this is a zip file, really" * 4, "not a TFLite model")
    put("wrong identifier", good[:4] + b"TFL2" + good[8:], "file identifier b'TFL2'")
    put("truncated", good[: len(good) // 3], "corrupt or truncated")
    flipped = bytearray(good)
    flipped[0] ^= 0x40  # the root table offset now points far outside the file
    put("bit flipped", bytes(flipped), "corrupt or truncated")
    for name, (edit, message) in CORRUPTIONS.items():
        put(name, _repack(good, edit), message)
    return cases


@pytest.fixture
def bad_files(tmp_path: Path, bundled_models: dict[str, Path]) -> dict[str, tuple[Path, str]]:
    return _bad_files(tmp_path, bundled_models[LSTM].read_bytes())


def test_repacked_good_model_still_reads(bundled_models: dict[str, Path]) -> None:
    data = bundled_models[LSTM].read_bytes()
    assert read_tflite(_repack(data, lambda m: None)).number_of_nodes() > 0


@pytest.mark.parametrize("command", ["inspect", "rehydrate"])
def test_every_bad_input_is_one_line_and_exit_2(
    command: str,
    bad_files: dict[str, tuple[Path, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for name, (path, message) in bad_files.items():
        target = out_dir / f"{name}.tflite"
        argv = [command, str(path)] + (
            [str(target), "--seed", "1"] if command == "rehydrate" else []
        )
        assert main(argv) == 2, name
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1, (name, captured.err)
        assert message in lines[0] and str(path) in lines[0], (name, lines[0])
        assert lines[0].startswith(f"tacopt {command}: error: ")
        assert captured.out == ""
    assert list(out_dir.iterdir()) == []  # no partial output file


def test_rehydrate_to_missing_folder_fails_cleanly(
    bundled_models: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no" / "such" / "dir.tflite"
    assert main(["rehydrate", str(bundled_models[LSTM]), str(target)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not target.parent.exists()


def test_inspect_json_matches_the_manifest(
    bundled_models: dict[str, Path],
    bundled_manifest: dict[str, dict],
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, path in bundled_models.items():
        assert main(["inspect", str(path), "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        row = bundled_manifest[name]
        assert (got["subgraphs"], got["ops"], got["tensors"]) == (
            row["subgraphs"],
            row["ops"],
            row["tensors"],
        )
        assert got["op_histogram"] == dict(row["op_histogram"])
        assert [[r["dtype"].upper(), r["shape"]] for r in got["inputs"]] == row["inputs"]
        assert [[r["dtype"].upper(), r["shape"]] for r in got["outputs"]] == row["outputs"]


def test_inspect_table(bundled_models: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(bundled_models["keras__mobilenet_v2_int8.tflite"])]) == 0
    out = capsys.readouterr().out
    assert "ops  65" in out and "CONV_2D" in out and "int8" in out and "dropped" in out


def test_rehydrate_writes_a_runnable_model(
    bundled_models: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "lstm.tflite"
    assert main(["rehydrate", str(bundled_models[LSTM]), str(target), "--seed", "4"]) == 0
    assert "seed 4" in capsys.readouterr().out
    G = read_tflite(target)
    consts = [t for t in G.graph["tensors"].values() if t.is_constant]
    assert consts and not any(t.buffer.is_placeholder for t in consts)
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(target))
    interpreter.allocate_tensors()
    (inp,) = interpreter.get_input_details()
    interpreter.set_tensor(inp["index"], np.ones(inp["shape"], dtype=inp["dtype"]))
    interpreter.invoke()
    (out,) = interpreter.get_output_details()
    assert np.isfinite(interpreter.get_tensor(out["index"])).all()


def test_real_subprocess_reports_bad_file(bad_files: dict[str, tuple[Path, str]]) -> None:
    path, message = bad_files["wrong identifier"]
    proc = subprocess.run(
        [sys.executable, "-m", "tacopt.partitioner.cli", "inspect", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and message in proc.stderr

"""``tacopt inspect`` / ``tacopt rehydrate``: output, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import ai_edge_litert.schema_py_generated as fb
import flatbuffers
import numpy as np
import pytest

from tacopt.fusion.tflite.reader import read_tflite
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


# -- issue 12: hostile models, every reproducer through every command -------------------------


def _tensor_of_op(m: fb.ModelT, op: int, slot: int) -> fb.TensorT:
    sg = m.subgraphs[0]
    return sg.tensors[sg.operators[op].inputs[slot]]


def _valid_conv_without_inputs(m: fb.ModelT) -> None:
    op = m.subgraphs[0].operators[0]
    op.builtinOptions.padding = fb.Padding.VALID
    op.inputs = []


def _while_in_its_own_body(m: fb.ModelT) -> None:
    outer = _first_while(m)
    body = m.subgraphs[outer.builtinOptions.bodySubgraphIndex]
    inner = fb.OperatorT()
    inner.opcodeIndex, inner.builtinOptionsType = outer.opcodeIndex, outer.builtinOptionsType
    inner.builtinOptions = outer.builtinOptions
    inner.inputs = list(body.inputs)
    inner.outputs = []
    for k in body.inputs:
        copy = fb.TensorT()
        copy.shape, copy.type, copy.name = body.tensors[k].shape, body.tensors[k].type, b"again"
        body.tensors.append(copy)
        inner.outputs.append(len(body.tensors) - 1)
    body.operators.append(inner)


def _scale(value: float) -> Callable[[fb.ModelT], None]:
    def edit(m: fb.ModelT) -> None:
        q = m.subgraphs[0].tensors[62].quantization
        q.scale = [*list(q.scale)[:3], value, *list(q.scale)[4:]]

    return edit


def _data(tensor: Callable[[fb.ModelT], fb.TensorT], nbytes: int) -> Callable[[fb.ModelT], None]:
    def edit(m: fb.ModelT) -> None:
        m.buffers[tensor(m).buffer].data = np.zeros(nbytes, np.uint8)

    return edit


MOBILENET = "keras__mobilenet_v2_float32.tflite"
MOBILENET_INT8 = "keras__mobilenet_v2_int8.tflite"
TRANSFORMER = "keras__text_transformer_float32.tflite"
LSTM_INT8 = "keras__text_lstm_tfkeras_int8.tflite"

#: The reproducers of issue 12: (model, edit, message fragment).
HOSTILE: dict[str, tuple[str, Callable[[fb.ModelT], None], str]] = {
    **{
        f"A placeholder 2**{e}": (MOBILENET, lambda m, e=e: _set(m.buffers[2], "size", 2**e),
                                  f"(buffer 2): constant holds {2**e} bytes")
        for e in (30, 33, 52)
    },
    "B fold_pad": (MOBILENET, _valid_conv_without_inputs, "needs its first 2 inputs"),
    "B layer norm": (TRANSFORMER, lambda m: _set(m.subgraphs[0].operators[1], "outputs", []),
                     "has no outputs"),
    "B lstm split": (LSTM, lambda m: _set(m.subgraphs[2].operators[8], "inputs", []),
                     "(SPLIT) needs its first 2 inputs"),
    "B two producers": (LSTM, lambda m: _set(m.subgraphs[0].operators[5], "outputs",
                                              list(m.subgraphs[0].operators[7].outputs)),
                        "(WHILE) has 6 inputs but 1 outputs"),
    "G two producers": (LSTM, lambda m: _set(m.subgraphs[0].operators[7], "outputs",
                                              list(m.subgraphs[0].operators[6].outputs)),
                        "is produced by both"),
    "B byte length": (LSTM, _data(lambda m: m.subgraphs[1].tensors[6], 11),
                      "constant holds 11 bytes"),
    "C byte length": (LSTM_INT8, _data(lambda m: m.subgraphs[0].tensors[7], 513),
                      "constant holds 513 bytes"),
    "C buffer 99": (MOBILENET_INT8, lambda m: _set(m.subgraphs[0].tensors[62], "buffer", 99),
                    "(buffer 99): constant holds 64 bytes"),
    "C shape []": (MOBILENET_INT8, lambda m: _set(m.subgraphs[0].tensors[37], "shape", []),
                   "shape () of int32 needs 4"),
    "F huge weight": (MOBILENET, lambda m: _set(_tensor_of_op(m, 0, 1), "shape", [2**31 - 1] * 4),
                      "tacopt accepts"),
    "G cycle": (MOBILENET, lambda m: _set_first(m.subgraphs[0].operators[1], "inputs",
                                                 m.subgraphs[0].operators[2].outputs[0]),
                "produced later"),
    "G recursion": (LSTM, _while_in_its_own_body, "calls itself"),
    "G scale zero": (MOBILENET_INT8, _scale(0.0), "scale 0.0 is not finite and positive"),
    "G scale nan": (MOBILENET_INT8, _scale(float("nan")), "scale nan"),
    "G scale inf": (MOBILENET_INT8, _scale(float("inf")), "scale inf"),
    "G scale negative": (MOBILENET_INT8, _scale(-1.0), "scale -1.0"),
    "G scale length": (MOBILENET_INT8,
                       lambda m: _set(m.subgraphs[0].tensors[62].quantization, "scale", [0.1] * 5),
                       "5 scales but 64 zero points"),
    "G scale axis": (MOBILENET_INT8,
                     lambda m: _set(m.subgraphs[0].tensors[62].quantization,
                                    "quantizedDimension", 7),
                     "quantized dimension 7 is out of range"),
}  # fmt: skip

HOSTILE_COMMANDS = {
    "inspect": ["inspect", "{m}"],
    "fuse": ["fuse", "{m}", "-o", "{o}/fused.tflite"],
    "partition": ["partition", "{m}", "--devices", "GPU,CPU", "--granularity", "op"],
    "export": ["partition", "{m}", "--devices", "GPU,CPU", "--export", "{o}/plan.tflite"],
    "rehydrate": ["rehydrate", "{m}", "{o}/full.tflite"],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_models_get_one_line_exit_2_and_no_output(
    case: str,
    bundled_models: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, edit, message = HOSTILE[case]
    model = tmp_path / "model.tflite"
    model.write_bytes(_repack(bundled_models[name].read_bytes(), edit))
    out = tmp_path / "out"
    out.mkdir()
    for command, argv in HOSTILE_COMMANDS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning line is a failure too
            code = main([a.format(m=model, o=out) for a in argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2, (case, command)
        assert len(err) == 1 and message in err[0], (case, command, err)
        assert list(out.iterdir()) == [], (case, command)


def test_inspect_prints_what_it_read_then_says_the_model_is_invalid(
    bundled_models: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "model.tflite"
    model.write_bytes(_repack(bundled_models[MOBILENET_INT8].read_bytes(), _scale(0.0)))
    assert main(["inspect", str(model), "--json"]) == 2
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["ops"] > 0 and summary["valid"] is False and "scale 0.0" in summary["problem"]
    assert captured.err.count("\n") == 1 and "invalid model" in captured.err


def test_rehydrate_refuses_past_the_weight_cap_before_writing(
    bundled_models: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "full.tflite"
    argv = ["rehydrate", str(bundled_models[MOBILENET]), str(target), "--max-weight-bytes", "1000"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "(buffer " in err[0] and "over the cap of 1,000" in err[0]
    assert not target.exists()


def test_inspect_shows_model_strings_escaped(tmp_path, capsys):
    import random

    from tacopt.benchmarks.fuzz.names import hostile_graph, hostile_names, terminal_problems
    from tacopt.fusion.tflite.writer import write_tflite

    rng = random.Random(3)
    for k in range(5):
        model = write_tflite(hostile_graph(hostile_names(rng, 12)), tmp_path / f"m{k}.tflite")
        capsys.readouterr()
        assert main(["inspect", str(model)]) == 0
        assert terminal_problems(capsys.readouterr().out) == []

"""The reader against the real zoo (counts and histograms equal the MANIFEST) and edge cases."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tacopt.errors import GraphError, ModelFormatError
from tacopt.fusion.ir import all_graphs, ops_of, validate_graph
from tacopt.fusion.tflite.reader import read_tflite
from tests.conftest import bundled_files, zoo_files


def _summary(G: Any) -> tuple[int, int, int, dict[str, int]]:
    graphs = all_graphs(G)
    hist = Counter(op.kind for g in graphs for _, op in ops_of(g))
    return (
        len(graphs),
        sum(g.number_of_nodes() for g in graphs),
        sum(len(g.graph["tensors"]) for g in graphs),
        dict(hist),
    )


def _expected(row: dict[str, Any]) -> tuple[int, int, int, dict[str, int]]:
    return row["subgraphs"], row["ops"], row["tensors"], dict(row["op_histogram"])


@pytest.mark.parametrize("path", zoo_files(), ids=lambda p: p.stem)
def test_zoo_model_matches_manifest(path: Path, manifest: dict[str, Any]) -> None:
    G = read_tflite(path)
    validate_graph(G)
    assert _summary(G) == _expected(manifest[path.name])
    row = manifest[path.name]
    tensors = G.graph["tensors"]
    got_inputs = [[tensors[t].dtype.upper(), list(tensors[t].shape)] for t in G.graph["inputs"]]
    assert got_inputs == row["inputs"]


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_bundled_model_matches_its_manifest(path: Path, bundled_manifest: dict[str, Any]) -> None:
    G = read_tflite(path)
    validate_graph(G)
    assert _summary(G) == _expected(bundled_manifest[path.name])


def test_bytes_path_and_memoryview_read_the_same(bundled_models: dict[str, Path]) -> None:
    path = bundled_models["keras__mobilenet_v2_int8.tflite"]
    data = path.read_bytes()
    a, b, c = read_tflite(path), read_tflite(data), read_tflite(memoryview(bytearray(data)))
    assert _summary(a) == _summary(b) == _summary(c)


def test_options_are_plain_names(bundled_models: dict[str, Path]) -> None:
    G = read_tflite(bundled_models["keras__mobilenet_v2_float32.tflite"])
    conv = next(op for _, op in ops_of(G) if op.kind == "CONV_2D")
    assert conv.options["padding"] in {"SAME", "VALID"}
    assert conv.options["fused_activation_function"] in {"NONE", "RELU6", "RELU"}
    assert isinstance(conv.options["stride_w"], int)
    assert conv.origin == (int(conv.name.rsplit("_", 1)[1]),)


def test_while_bodies_are_named_subgraphs(bundled_models: dict[str, Path]) -> None:
    G = read_tflite(bundled_models["keras__text_lstm_float32.tflite"])
    whiles = [op for _, op in ops_of(G) if op.kind == "WHILE"]
    assert whiles
    for op in whiles:
        assert set(op.called_subgraphs) == {
            op.options["cond_subgraph"],
            op.options["body_subgraph"],
        }
        assert all(s in G.graph["subgraphs"] for s in op.called_subgraphs)
        assert "cond_subgraph_index" not in op.options


def test_placeholders_and_kept_constants(bundled_models: dict[str, Path]) -> None:
    G = read_tflite(bundled_models["keras__mobilenet_v2_int8.tflite"])
    consts = [t for t in G.graph["tensors"].values() if t.is_constant]
    dropped = [t for t in consts if t.buffer.is_placeholder]
    kept = [t for t in consts if not t.buffer.is_placeholder]
    assert dropped and kept
    assert all(t.dtype == "int8" for t in dropped)
    bias = next(t for t in kept if t.dtype == "int32" and t.buffer.nbytes > 64)
    data = bias.data()
    assert data.shape == bias.shape and not data.flags.writeable
    # a view into the bytes the model was read from, not a copy
    assert data.base is not None


def test_constant_views_share_the_source_bytes(bundled_models: dict[str, Path]) -> None:
    data = bundled_models["keras__mobilenet_v2_int8.tflite"].read_bytes()
    G = read_tflite(data)
    t = next(t for t in G.graph["tensors"].values() if t.is_constant and t.dtype == "int32")
    arr = t.data()
    assert np.shares_memory(arr, np.frombuffer(data, np.uint8))


def test_unique_tensor_names_and_graph_inputs(bundled_models: dict[str, Path]) -> None:
    for path in bundled_models.values():
        G = read_tflite(path)
        for g in all_graphs(G):
            assert all(t in g.graph["tensors"] for t in g.graph["inputs"] + g.graph["outputs"])
        assert G.graph["model"].source == str(path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.tflite", "no such file"),
        (lambda d: d, "is a directory"),
        (lambda d: _write(d / "empty.tflite", b""), "empty file"),
        (lambda d: _write(d / "text.tflite", b"hello, world, not a model"), "not a TFLite model"),
        (lambda d: _write(d / "short.tflite", b"abc"), "too short"),
    ],
)
def test_bad_files_raise_model_format_error(tmp_path: Path, make: Any, message: str) -> None:
    path = make(tmp_path)
    with pytest.raises(ModelFormatError, match=message) as info:
        read_tflite(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_truncated_model_raises(bundled_models: dict[str, Path]) -> None:
    data = bundled_models["keras__mobilenet_v2_float32.tflite"].read_bytes()
    for cut in (16, 100, len(data) // 2, len(data) - 200):
        with pytest.raises(ModelFormatError):
            read_tflite(data[:cut])


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _edited(path: Path, edit: Any) -> bytes:
    import ai_edge_litert.schema_py_generated as fb
    import flatbuffers

    model = fb.ModelT.InitFromPackedBuf(bytearray(path.read_bytes()), 0)
    edit(model)
    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def test_reading_validates_once_and_names_the_file(tmp_path: Path) -> None:
    mobilenet = next(p for p in bundled_files() if p.name == "keras__mobilenet_v2_float32.tflite")
    path = tmp_path / "big.tflite"
    path.write_bytes(_edited(mobilenet, lambda m: setattr(m.buffers[2], "size", 2**33)))
    with pytest.raises(GraphError, match=f"^{path}: invalid model: .*\\(buffer 2\\)"):
        read_tflite(path)
    G = read_tflite(path, validate=False)  # what inspect shows before it judges
    with pytest.raises(GraphError, match="constant holds 8589934592 bytes"):
        validate_graph(G)


def test_an_options_table_of_another_kind_is_refused() -> None:
    #  CONV_2D's options left on an op whose opcode now says NEG
    import ai_edge_litert.schema_py_generated as fb

    mobilenet = next(p for p in bundled_files() if p.name == "keras__mobilenet_v2_float32.tflite")

    def edit(m: Any) -> None:
        conv = m.subgraphs[0].operators[0]
        code = fb.OperatorCodeT()
        code.builtinCode = code.deprecatedBuiltinCode = fb.BuiltinOperator.NEG
        m.operatorCodes.append(code)
        conv.opcodeIndex = len(m.operatorCodes) - 1

    with pytest.raises(ModelFormatError, match="op 0 \\(NEG\\): has Conv2DOptions, expected Neg"):
        read_tflite(_edited(mobilenet, edit))

"""The writer: read -> write -> read is the identity, and rewritten models run identically."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import ai_edge_litert.schema_py_generated as fb
import numpy as np
import pytest

from tacopt.errors import GraphError
from tacopt.fusion.ir import (
    Buffer,
    Op,
    Tensor,
    all_graphs,
    ir_diff,
    make_graph,
    ops_of,
    validate_graph,
)
from tacopt.fusion.tflite import schema
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import rehydrate
from tacopt.fusion.tflite.writer import serialize_tflite, write_tflite
from tests.conftest import bundled_files, zoo_files


def _roundtrip(G: Any, **kwargs: Any) -> Any:
    """Write and read ``G``; the result equals ``G`` up to the ops' ``origin`` (set on read)."""
    H = read_tflite(serialize_tflite(G, **kwargs))
    validate_graph(H)
    for A, B in zip(all_graphs(G), all_graphs(H)):
        assert [dataclasses.replace(op, origin=()) for _, op in ops_of(A)] == [
            dataclasses.replace(op, origin=()) for _, op in ops_of(B)
        ]
        assert A.graph["tensors"] == B.graph["tensors"]
        assert (A.graph["inputs"], A.graph["outputs"]) == (B.graph["inputs"], B.graph["outputs"])
    assert ir_diff(H, read_tflite(serialize_tflite(H, **kwargs))) == []
    return H


@pytest.mark.parametrize("path", zoo_files(), ids=lambda p: p.stem)
def test_zoo_roundtrip_is_identity(path: Path, zoo_dir: Path) -> None:
    G = read_tflite(path)
    data = serialize_tflite(G)
    assert ir_diff(G, read_tflite(data)) == []
    # structure-only stays structure-only: no dropped weight comes back as bytes
    assert len(data) < 2 * path.stat().st_size + 4096


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_bundled_roundtrip_is_identity_and_stable(path: Path) -> None:
    G = read_tflite(path)
    data = serialize_tflite(G)
    assert ir_diff(G, read_tflite(data)) == []
    assert serialize_tflite(read_tflite(data)) == data  # a second write changes no byte


# -- interpreter identity ------------------------------------------------------------------------


def _run(model: bytes, seed: int = 0) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(seed)
    for d in interpreter.get_input_details():
        dtype, shape = d["dtype"], d["shape"]
        if np.issubdtype(dtype, np.floating):
            x = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.int8:
            x = rng.integers(-128, 128, shape).astype(dtype)
        else:
            x = rng.integers(0, 100, shape).astype(dtype)  # token ids
        interpreter.set_tensor(d["index"], x)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


INTERPRETER_MODELS = [
    "keras__mobilenet_v2_float32.tflite",
    "keras__mobilenet_v2_int8.tflite",
    "keras__text_lstm_float32.tflite",  # WHILE loop with cond / body subgraphs
    "keras__text_lstm_tfkeras_int8.tflite",
    "keras__text_transformer_float32.tflite",
]


@pytest.mark.parametrize("name", INTERPRETER_MODELS)
def test_rewritten_rehydrated_model_runs_bit_identically(
    name: str, bundled_models: dict[str, Path]
) -> None:
    original = serialize_tflite(rehydrate(read_tflite(bundled_models[name]), seed=7))
    rewritten = serialize_tflite(read_tflite(original))
    want, got = _run(original), _run(rewritten)
    assert len(want) == len(got) > 0
    for a, b in zip(want, got):
        assert a.dtype == b.dtype and np.array_equal(a, b)
        assert np.isfinite(a.astype(np.float64)).all()


@pytest.mark.parametrize(
    "name", ["torch__bert_tiny_random_float32.tflite", "keras__text_gru_float32.tflite"]
)
def test_zoo_models_run_bit_identically(name: str, zoo_dir: Path) -> None:
    original = serialize_tflite(rehydrate(read_tflite(zoo_dir / name), seed=3))
    rewritten = serialize_tflite(read_tflite(original))
    for a, b in zip(_run(original), _run(rewritten)):
        assert np.array_equal(a, b)


def test_external_buffers_read_back_and_run(bundled_models: dict[str, Path]) -> None:
    G = rehydrate(read_tflite(bundled_models["keras__mobilenet_v2_int8.tflite"]), seed=1)
    inline = serialize_tflite(G)
    external = serialize_tflite(G, external_buffer_threshold=0)
    H = _roundtrip(G, external_buffer_threshold=0)
    weights = [t for t in H.graph["tensors"].values() if t.is_constant and t.buffer.nbytes > 64]
    assert weights
    # every weight lives after the flatbuffer, at a 16-byte aligned offset
    model = fb.Model.GetRootAs(external, 0)
    offsets = [model.Buffers(i).Offset() for i in range(model.BuffersLength())]
    assert all(o % 16 == 0 for o in offsets if o > 1) and max(offsets) > len(external) // 2
    for a, b in zip(_run(inline), _run(external)):
        assert np.array_equal(a, b)


# -- small synthetic graphs ----------------------------------------------------------------------


def _single_op(op: Op, tensors: list[Tensor], inputs: tuple, outputs: tuple, **kw: Any) -> Any:
    return make_graph("main", tensors, [op], inputs, outputs, **kw)


def test_shared_constant_stays_one_buffer() -> None:
    #  x --ADD(x, c)--> y --MUL(y, c)--> z ;  c is one buffer used twice
    c = Buffer.from_bytes(np.arange(4, dtype=np.float32))
    tensors = [
        Tensor("x", (4,), "float32"),
        Tensor("c", (4,), "float32", buffer=c),
        Tensor("c2", (4,), "float32", buffer=c),
        Tensor("y", (4,), "float32"),
        Tensor("z", (4,), "float32"),
    ]
    ops = [Op("add_0", "ADD", ("x", "c"), ("y",)), Op("mul_1", "MUL", ("y", "c2"), ("z",))]
    G = make_graph("main", tensors, ops, ["x"], ["z"])
    data = serialize_tflite(G)
    H = _roundtrip(G)
    assert H.graph["tensors"]["c"].buffer is H.graph["tensors"]["c2"].buffer
    model = fb.Model.GetRootAs(data, 0)
    assert model.BuffersLength() == 2  # the empty sentinel and the one shared constant
    x = np.random.default_rng(0).standard_normal(4).astype(np.float32)  # what _run feeds
    c_values = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(_run(data)[0], (x + c_values) * c_values, rtol=1e-6)


def test_placeholder_written_as_offset_one() -> None:
    w = Tensor("w", (8, 4), "float32", buffer=Buffer.placeholder(128))
    G = _single_op(
        Op("fully_connected_0", "FULLY_CONNECTED", ("x", "w", None), ("y",)),
        [Tensor("x", (1, 4), "float32"), w, Tensor("y", (1, 8), "float32")],
        ("x",),
        ("y",),
    )
    data = serialize_tflite(G)
    buf = fb.Model.GetRootAs(data, 0).Buffers(1)
    assert (buf.Offset(), buf.Size(), buf.DataLength()) == (1, 128, 0)
    H = _roundtrip(G)
    assert H.nodes["fully_connected_0"]["op"].inputs[2] is None  # optional input kept omitted


def test_large_opcode_and_deprecated_field() -> None:
    G = _single_op(
        Op("gelu_0", "GELU", ("x",), ("y",), options={"approximate": True}, version=2),
        [Tensor("x", (1, 4), "float32"), Tensor("y", (1, 4), "float32")],
        ("x",),
        ("y",),
    )
    data = serialize_tflite(G)
    code = fb.Model.GetRootAs(data, 0).OperatorCodes(0)
    assert (code.BuiltinCode(), code.DeprecatedBuiltinCode()) == (150, 127)
    H = _roundtrip(G)
    assert H.nodes["gelu_0"]["op"].options["approximate"] is True


def test_custom_op_name_and_options_roundtrip() -> None:
    op = Op("custom_my_op_0", "CUSTOM:My-Op", ("x",), ("y",), custom_options=b"\x01\x02")
    G = _single_op(op, [Tensor("x", (2,), "float32"), Tensor("y", (2,), "float32")], ("x",), ("y",))
    H = _roundtrip(G)
    assert list(H.nodes) == ["custom_my_op_0"]
    assert H.nodes["custom_my_op_0"]["op"].custom_options == b"\x01\x02"


def test_stablehlo_composite_options2_roundtrip() -> None:
    body = make_graph(
        "decomp",
        [Tensor("a", (2,), "float32"), Tensor("b", (2,), "float32")],
        [Op("abs_0", "ABS", ("a",), ("b",))],
        ["a"],
        ["b"],
    )
    options = {
        "name": "odml.my_abs",
        "decomposition_subgraph": "decomp",
        "composite_attributes": b"\x00\x07",
        "composite_attributes_format": "FLEXBUFFERS",
        "version": 1,
    }
    G = _single_op(
        Op("stablehlo_composite_0", "STABLEHLO_COMPOSITE", ("x",), ("y",), options=options),
        [Tensor("x", (2,), "float32"), Tensor("y", (2,), "float32")],
        ("x",),
        ("y",),
        subgraphs={"decomp": body},
    )
    data = serialize_tflite(G)
    assert fb.Model.GetRootAs(data, 0).Subgraphs(0).Operators(0).BuiltinOptions2Type() > 0
    H = _roundtrip(G)
    op = H.nodes["stablehlo_composite_0"]["op"]
    assert op.options == options and op.called_subgraphs == ("decomp",)


def test_sparse_constant_roundtrip() -> None:
    # a 4x4 matrix in CSR: dim 0 dense, dim 1 sparse with 3 non-zeros
    dense = fb.DimensionMetadataT()
    dense.format, dense.denseSize = fb.DimensionType.DENSE, 4
    csr = fb.DimensionMetadataT()
    csr.format = fb.DimensionType.SPARSE_CSR
    csr.arraySegmentsType = csr.arrayIndicesType = fb.SparseIndexVector.Int32Vector
    csr.arraySegments, csr.arrayIndices = fb.Int32VectorT(), fb.Int32VectorT()
    csr.arraySegments.values = np.array([0, 1, 2, 2, 3], dtype=np.int32)
    csr.arrayIndices.values = np.array([0, 3, 1], dtype=np.int32)
    params = fb.SparsityParametersT()
    params.traversalOrder = np.array([0, 1], dtype=np.int32)
    params.dimMetadata = [dense, csr]
    sparsity = schema.plain_object(params, [])
    assert sparsity["dim_metadata"][1]["format"] == "SPARSE_CSR"
    values = Buffer.from_bytes(np.array([1, 2, 3], dtype=np.float32))
    G = _single_op(
        Op("densify_0", "DENSIFY", ("s",), ("y",)),
        [
            Tensor("s", (4, 4), "float32", buffer=values, sparsity=sparsity),
            Tensor("y", (4, 4), "float32"),
        ],
        (),
        ("y",),
    )
    H = _roundtrip(G)
    assert H.graph["tensors"]["s"].sparsity == sparsity


def test_variable_and_fp16_weights_roundtrip_and_run() -> None:
    #  w(fp16) --DEQUANTIZE--> w32 ;  x, w32 --ADD--> y
    w = Tensor("w", (4,), "float16", buffer=Buffer.from_bytes(np.ones(4, np.float16) * 0.5))
    tensors = [
        Tensor("x", (4,), "float32"),
        w,
        Tensor("w32", (4,), "float32"),
        Tensor("y", (4,), "float32"),
        Tensor("state", (4,), "float32", is_variable=True),
    ]
    ops = [
        Op("dequantize_0", "DEQUANTIZE", ("w",), ("w32",)),
        Op("add_1", "ADD", ("x", "w32"), ("y",)),
    ]
    G = make_graph("main", tensors, ops, ["x"], ["y"])
    H = _roundtrip(G)
    assert H.graph["tensors"]["state"].is_variable
    out = _run(serialize_tflite(G))[0]
    assert out.dtype == np.float32 and out.shape == (4,)


def test_unwritable_graph_raises_and_leaves_no_file(tmp_path: Path) -> None:
    G = _single_op(
        Op("frob_0", "FROBNICATE", ("x",), ("y",)),
        [Tensor("x", (2,), "float32"), Tensor("y", (2,), "float32")],
        ("x",),
        ("y",),
    )
    with pytest.raises(GraphError, match="frob_0"):
        write_tflite(G, tmp_path / "out.tflite")
    assert list(tmp_path.iterdir()) == []


def test_unknown_option_is_named() -> None:
    G = _single_op(
        Op("relu6_0", "ADD", ("x", "x"), ("y",), options={"fused_activation": "RELU"}),
        [Tensor("x", (2,), "float32"), Tensor("y", (2,), "float32")],
        ("x",),
        ("y",),
    )
    with pytest.raises(GraphError, match="unknown option 'fused_activation'"):
        serialize_tflite(G)


def test_write_tflite_is_atomic_and_readable(
    tmp_path: Path, bundled_models: dict[str, Path]
) -> None:
    G = read_tflite(bundled_models["keras__text_lstm_float32.tflite"])
    path = write_tflite(G, tmp_path / "lstm.tflite")
    assert ir_diff(G, read_tflite(path)) == []
    assert G.graph["model"].signature_defs  # signature defs survive
    assert [p.name for p in tmp_path.iterdir()] == ["lstm.tflite"]

"""Write the graph IR of :mod:`tacopt.fusion.ir` back to a TensorFlow Lite flatbuffer.

The writer is the inverse of :func:`tacopt.fusion.tflite.reader.read_tflite`: reading its output
gives an IR equal to the one written (``ir_diff`` is empty). Constants keep their state: data is
written as data, structure-only placeholders as placeholders (``offset = 1``, ``size = N``), and a
:class:`~tacopt.fusion.ir.Buffer` object shared by several tensors becomes one shared buffer. Models
whose constant data would not fit the 2 GB flatbuffer limit store it after the flatbuffer, with
absolute ``offset`` / ``size`` in each buffer table (the TFLite convention for large models).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import ai_edge_litert.schema_py_generated as fb
import flatbuffers
import networkx as nx
import numpy as np

from tacopt.errors import GraphError
from tacopt.fusion.ir import DTYPE_TO_TFLITE, Buffer, Tensor, all_graphs, ops_of, validate_graph
from tacopt.fusion.tflite import schema
from tacopt.io import atomic_write

#: Constant data above this many bytes goes after the flatbuffer (flatbuffers cannot pass 2 GiB).
EXTERNAL_BUFFER_THRESHOLD = (1 << 31) - (64 << 20)
_ALIGN = 16


def serialize_tflite(
    G: nx.MultiDiGraph, *, external_buffer_threshold: int = EXTERNAL_BUFFER_THRESHOLD
) -> bytes:
    """Serialise a graph (and its nested graphs) to .tflite bytes.

    Parameters
    ----------
    G
        The main graph, with nested graphs in ``G.graph["subgraphs"]`` and optionally a
        :class:`~tacopt.fusion.ir.ModelInfo` in ``G.graph["model"]``.
    external_buffer_threshold
        When the constant data totals more than this many bytes, it is stored after the
        flatbuffer instead of inside it (default: just under the 2 GiB flatbuffer limit).

    Returns
    -------
    bytes
        A TFLite flatbuffer (file identifier ``TFL3``).

    Raises
    ------
    GraphError
        If ``G`` breaks an invariant of :func:`~tacopt.fusion.ir.validate_graph` (so a model with,
        say, a zero quantization scale is never written), or an op cannot be written: an unknown
        kind, or options that its options table lacks.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph, ir_diff
    >>> from tacopt.fusion.tflite.reader import read_tflite
    >>> G = make_graph("main", [Tensor("x", (1, 4), "float32"), Tensor("y", (1, 4), "float32")],
    ...                [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
    >>> H = read_tflite(serialize_tflite(G))
    >>> H.nodes["relu_0"]["op"].inputs, ir_diff(H, read_tflite(serialize_tflite(H)))
    (('x',), [])
    """
    validate_graph(G)
    return _Writer(G, external_buffer_threshold).serialize()


def write_tflite(
    G: nx.MultiDiGraph,
    path: str | os.PathLike[str],
    *,
    external_buffer_threshold: int = EXTERNAL_BUFFER_THRESHOLD,
) -> Path:
    """Write ``G`` to ``path`` atomically (see :func:`serialize_tflite`); return the path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("main", [Tensor("x", (2,), "float32"), Tensor("y", (2,), "float32")],
    ...                [Op("neg_0", "NEG", ("x",), ("y",))], ["x"], ["y"])
    >>> write_tflite(G, pathlib.Path(tempfile.mkdtemp()) / "neg.tflite").read_bytes()[4:8]
    b'TFL3'
    """
    data = serialize_tflite(G, external_buffer_threshold=external_buffer_threshold)
    return atomic_write(path, data)


class _Writer:
    """One serialisation of one graph (holds the opcode and buffer tables)."""

    def __init__(self, G: nx.MultiDiGraph, threshold: int) -> None:
        self.G = G
        self.graphs = all_graphs(G)
        self.subgraph_index = {g.graph["name"]: i for i, g in enumerate(self.graphs)}
        self.opcodes: dict[tuple[str, int], int] = {}
        # Buffer 0 is the empty sentinel; then one entry per distinct Buffer object.
        self.buffers: list[Buffer | bytes | None] = [None]
        self.buffer_index: dict[int, int] = {}
        for g in self.graphs:
            for t in g.graph["tensors"].values():
                if t.buffer is not None and id(t.buffer) not in self.buffer_index:
                    self.buffer_index[id(t.buffer)] = len(self.buffers)
                    self.buffers.append(t.buffer)
        model = G.graph.get("model")
        self.metadata = list(model.metadata) if model is not None else []
        self.metadata_buffer = []
        for _, data in self.metadata:
            self.metadata_buffer.append(len(self.buffers))
            self.buffers.append(bytes(data))
        data_bytes = sum(
            (b.nbytes if isinstance(b, Buffer) and not b.is_placeholder else 0)
            + (len(b) if isinstance(b, bytes) else 0)
            for b in self.buffers
        )
        self.external = data_bytes > threshold

    def serialize(self) -> bytes:
        if not self.external:
            return self._build(None)
        # Offsets of external data depend on the flatbuffer's size: build once with provisional
        # offsets of the same width, then again with the real ones (the layout is unchanged).
        layout = self._external_layout(0)
        size = len(self._build(layout))
        base = -(-size // _ALIGN) * _ALIGN
        layout = self._external_layout(base)
        head = self._build(layout)
        if len(head) != size:
            raise AssertionError("flatbuffer size changed between the two passes")
        parts: list[bytes | memoryview] = [head, bytes(base - size)]
        end = base
        for i, (offset, n) in sorted(layout.items(), key=lambda kv: kv[1][0]):
            parts.append(bytes(offset - end))
            parts.append(self._data(i))
            end = offset + n
        return b"".join(parts)

    def _external_layout(self, base: int) -> dict[int, tuple[int, int]]:
        """buffer index -> (absolute offset, size) of data stored after the flatbuffer."""
        layout = {}
        cursor = base + _ALIGN  # provisional offsets stay > 1 even when base is 0
        for i, b in enumerate(self.buffers):
            n = len(b) if isinstance(b, bytes) else 0
            if isinstance(b, Buffer) and not b.is_placeholder:
                n = b.nbytes
            if n:
                layout[i] = (cursor, n)
                cursor += -(-n // _ALIGN) * _ALIGN
        return layout

    def _data(self, i: int) -> bytes | memoryview:
        b = self.buffers[i]
        assert b is not None, "slot 0 (the empty buffer) is never laid out"
        return b if isinstance(b, bytes) else b.view()

    # -- building ------------------------------------------------------------------------------

    def _build(self, layout: dict[int, tuple[int, int]] | None) -> bytes:
        self.opcodes = {}
        builder = flatbuffers.Builder(1 << 16)
        subgraphs = [self._subgraph(builder, g) for g in self.graphs]
        buffers = [self._buffer(builder, i, layout) for i in range(len(self.buffers))]
        codes = [self._opcode(builder, kind, version) for kind, version in self.opcodes]
        model_info = self.G.graph.get("model")
        metadata = [
            self._metadata(builder, name, index)
            for (name, _), index in zip(self.metadata, self.metadata_buffer)
        ]
        signatures = [
            self._signature(builder, sig)
            for sig in (model_info.signature_defs if model_info else ())
        ]
        description = builder.CreateString(model_info.description if model_info else "")

        codes_vec = _table_vector(builder, fb.ModelStartOperatorCodesVector, codes)
        subgraphs_vec = _table_vector(builder, fb.ModelStartSubgraphsVector, subgraphs)
        buffers_vec = _table_vector(builder, fb.ModelStartBuffersVector, buffers)
        metadata_vec = _table_vector(builder, fb.ModelStartMetadataVector, metadata)
        signatures_vec = _table_vector(builder, fb.ModelStartSignatureDefsVector, signatures)
        fb.ModelStart(builder)
        fb.ModelAddVersion(builder, model_info.version if model_info else 3)
        fb.ModelAddOperatorCodes(builder, codes_vec)
        fb.ModelAddSubgraphs(builder, subgraphs_vec)
        fb.ModelAddDescription(builder, description)
        fb.ModelAddBuffers(builder, buffers_vec)
        if metadata:
            fb.ModelAddMetadata(builder, metadata_vec)
        if signatures:
            fb.ModelAddSignatureDefs(builder, signatures_vec)
        builder.Finish(fb.ModelEnd(builder), file_identifier=b"TFL3")
        return bytes(memoryview(builder.Bytes)[builder.Head() :])  # one copy (Output() makes two)

    def _buffer(self, builder: Any, i: int, layout: dict[int, tuple[int, int]] | None) -> int:
        b = self.buffers[i]
        data_vec = None
        if layout is None and (isinstance(b, bytes) or (b is not None and not b.is_placeholder)):
            data = self._data(i)
            n = len(data)
            if n:
                builder.StartVector(1, n, _ALIGN)
                builder.head -= n
                builder.Bytes[builder.head : builder.head + n] = data
                data_vec = builder.EndVector()
        fb.BufferStart(builder)
        if data_vec is not None:
            fb.BufferAddData(builder, data_vec)
        if isinstance(b, Buffer) and b.is_placeholder and b.nbytes:
            fb.BufferAddOffset(builder, 1)  # structure-only convention: bytes dropped
            fb.BufferAddSize(builder, b.nbytes)
        elif layout is not None and i in layout:
            offset, size = layout[i]
            fb.BufferAddOffset(builder, offset)
            fb.BufferAddSize(builder, size)
        return fb.BufferEnd(builder)

    def _opcode(self, builder: Any, kind: str, version: int) -> int:
        custom = None
        if kind.startswith("CUSTOM:"):
            code = schema.BUILTIN_CODES["CUSTOM"]
            custom = builder.CreateString(kind[len("CUSTOM:") :])
        else:
            code = schema.BUILTIN_CODES[kind]
        fb.OperatorCodeStart(builder)
        fb.OperatorCodeAddDeprecatedBuiltinCode(
            builder, min(code, schema.PLACEHOLDER_FOR_GREATER_OP_CODES)
        )
        fb.OperatorCodeAddBuiltinCode(builder, code)
        if custom is not None:
            fb.OperatorCodeAddCustomCode(builder, custom)
        fb.OperatorCodeAddVersion(builder, version)
        return fb.OperatorCodeEnd(builder)

    def _opcode_index(self, kind: str, version: int, op_name: str) -> int:
        if not kind.startswith("CUSTOM:") and kind not in schema.BUILTIN_CODES:
            raise GraphError(
                f"op '{op_name}': kind '{kind}' is neither a TFLite builtin nor CUSTOM:<code>"
            )
        return self.opcodes.setdefault((kind, version), len(self.opcodes))

    def _metadata(self, builder: Any, name: str, index: int) -> int:
        name_off = builder.CreateString(name)
        fb.MetadataStart(builder)
        fb.MetadataAddName(builder, name_off)
        fb.MetadataAddBuffer(builder, index)
        return fb.MetadataEnd(builder)

    def _signature(self, builder: Any, sig: Any) -> int:
        if sig.subgraph not in self.subgraph_index:
            raise GraphError(f"signature '{sig.key}': subgraph '{sig.subgraph}' does not exist")
        sub = self.graphs[self.subgraph_index[sig.subgraph]]
        index = {t: i for i, t in enumerate(sub.graph["tensors"])}

        def tensor_maps(pairs: tuple[tuple[str, str], ...]) -> list[int]:
            out = []
            for public, tensor in pairs:
                if tensor not in index:
                    raise GraphError(f"signature '{sig.key}': tensor '{tensor}' does not exist")
                name = builder.CreateString(public)
                fb.TensorMapStart(builder)
                fb.TensorMapAddName(builder, name)
                fb.TensorMapAddTensorIndex(builder, index[tensor])
                out.append(fb.TensorMapEnd(builder))
            return out

        inputs = _table_vector(builder, fb.SignatureDefStartInputsVector, tensor_maps(sig.inputs))
        outputs = _table_vector(
            builder, fb.SignatureDefStartOutputsVector, tensor_maps(sig.outputs)
        )
        key = builder.CreateString(sig.key)
        fb.SignatureDefStart(builder)
        fb.SignatureDefAddInputs(builder, inputs)
        fb.SignatureDefAddOutputs(builder, outputs)
        fb.SignatureDefAddSignatureKey(builder, key)
        fb.SignatureDefAddSubgraphIndex(builder, self.subgraph_index[sig.subgraph])
        return fb.SignatureDefEnd(builder)

    def _subgraph(self, builder: Any, g: nx.MultiDiGraph) -> int:
        table: dict[str, Tensor] = g.graph["tensors"]
        index = {name: i for i, name in enumerate(table)}

        def indices(names: tuple[str | None, ...], where: str) -> np.ndarray:
            try:
                return np.array([-1 if n is None else index[n] for n in names], dtype=np.int32)
            except KeyError as exc:
                raise GraphError(
                    f"graph '{g.graph['name']}' {where}: tensor {exc} does not exist"
                ) from None

        tensors = [self._tensor(builder, t) for t in table.values()]
        ops = [
            self._operator(builder, op, indices(op.inputs, f"op '{n}'"), indices, n)
            for n, op in ops_of(g)
        ]
        tensors_vec = _table_vector(builder, fb.SubGraphStartTensorsVector, tensors)
        inputs = builder.CreateNumpyVector(indices(g.graph["inputs"], "inputs"))
        outputs = builder.CreateNumpyVector(indices(g.graph["outputs"], "outputs"))
        ops_vec = _table_vector(builder, fb.SubGraphStartOperatorsVector, ops)
        name = builder.CreateString(g.graph["name"])
        fb.SubGraphStart(builder)
        fb.SubGraphAddTensors(builder, tensors_vec)
        fb.SubGraphAddInputs(builder, inputs)
        fb.SubGraphAddOutputs(builder, outputs)
        fb.SubGraphAddOperators(builder, ops_vec)
        fb.SubGraphAddName(builder, name)
        return fb.SubGraphEnd(builder)

    def _tensor(self, builder: Any, t: Tensor) -> int:
        if t.dtype not in DTYPE_TO_TFLITE:
            raise GraphError(f"tensor '{t.name}': unknown dtype '{t.dtype}'")
        shape = builder.CreateNumpyVector(np.array(t.shape, dtype=np.int32))
        signature = None
        if t.shape_signature is not None:
            signature = builder.CreateNumpyVector(np.array(t.shape_signature, dtype=np.int32))
        name = builder.CreateString(t.name)
        quant = self._quantization(builder, t) if t.quantization is not None else None
        sparsity = None
        if t.sparsity is not None:
            sparsity = schema.object_from_plain(
                fb.SparsityParametersT, t.sparsity, self.subgraph_index, f"tensor '{t.name}'"
            ).Pack(builder)
        fb.TensorStart(builder)
        fb.TensorAddShape(builder, shape)
        fb.TensorAddType(builder, DTYPE_TO_TFLITE[t.dtype])
        if t.buffer is not None:
            fb.TensorAddBuffer(builder, self.buffer_index[id(t.buffer)])
        fb.TensorAddName(builder, name)
        if quant is not None:
            fb.TensorAddQuantization(builder, quant)
        if t.is_variable:
            fb.TensorAddIsVariable(builder, True)
        if sparsity is not None:
            fb.TensorAddSparsity(builder, sparsity)
        if signature is not None:
            fb.TensorAddShapeSignature(builder, signature)
        return fb.TensorEnd(builder)

    def _quantization(self, builder: Any, t: Tensor) -> int:
        q = t.quantization
        assert q is not None
        vecs = {
            "min": builder.CreateNumpyVector(np.array(q.min, dtype=np.float32)) if q.min else None,
            "max": builder.CreateNumpyVector(np.array(q.max, dtype=np.float32)) if q.max else None,
            "scale": builder.CreateNumpyVector(np.array(q.scale, dtype=np.float32)),
            "zero": builder.CreateNumpyVector(np.array(q.zero_point, dtype=np.int64)),
        }
        fb.QuantizationParametersStart(builder)
        if vecs["min"] is not None:
            fb.QuantizationParametersAddMin(builder, vecs["min"])
        if vecs["max"] is not None:
            fb.QuantizationParametersAddMax(builder, vecs["max"])
        fb.QuantizationParametersAddScale(builder, vecs["scale"])
        fb.QuantizationParametersAddZeroPoint(builder, vecs["zero"])
        fb.QuantizationParametersAddQuantizedDimension(builder, q.axis)
        return fb.QuantizationParametersEnd(builder)

    def _operator(self, builder: Any, op: Any, inputs: np.ndarray, indices: Any, name: str) -> int:
        opcode = self._opcode_index(op.kind, op.version, name)
        inputs_vec = builder.CreateNumpyVector(inputs)
        outputs_vec = builder.CreateNumpyVector(indices(op.outputs, f"op '{name}'"))
        inter_vec = None
        if op.intermediates:
            inter_vec = builder.CreateNumpyVector(indices(op.intermediates, f"op '{name}'"))
        custom_vec = None
        if op.custom_options is not None:
            custom_vec = builder.CreateByteVector(bytes(op.custom_options))
        union, options = self._options(builder, op)
        fb.OperatorStart(builder)
        fb.OperatorAddOpcodeIndex(builder, opcode)
        fb.OperatorAddInputs(builder, inputs_vec)
        fb.OperatorAddOutputs(builder, outputs_vec)
        if options is not None:
            type_value, table = options
            if union == 1:
                fb.OperatorAddBuiltinOptionsType(builder, type_value)
                fb.OperatorAddBuiltinOptions(builder, table)
            else:
                fb.OperatorAddBuiltinOptions2Type(builder, type_value)
                fb.OperatorAddBuiltinOptions2(builder, table)
        if custom_vec is not None:
            fb.OperatorAddCustomOptions(builder, custom_vec)
        if inter_vec is not None:
            fb.OperatorAddIntermediates(builder, inter_vec)
        return fb.OperatorEnd(builder)

    def _options(self, builder: Any, op: Any) -> tuple[int, tuple[int, int] | None]:
        if not op.options:
            return 0, None
        entry = schema.OPTIONS_FOR_KIND.get(op.kind)
        if entry is None:
            raise GraphError(f"op '{op.name}' ({op.kind}) has options but no options table")
        union, cls = entry
        obj = schema.object_from_plain(cls, op.options, self.subgraph_index, f"op '{op.name}'")
        type_value = (schema.OPTIONS_TYPE if union == 1 else schema.OPTIONS2_TYPE)[cls]
        return union, (type_value, obj.Pack(builder))


def _table_vector(builder: Any, start: Any, offsets: list[int]) -> int:
    start(builder, len(offsets))
    for off in reversed(offsets):
        builder.PrependUOffsetTRelative(off)
    return builder.EndVector()

"""Read a TensorFlow Lite flatbuffer into the graph IR of :mod:`tacopt.fusion.ir`.

Fields are read with the schema's generated accessors (``ai_edge_litert.schema_py_generated``);
only the small per-op options tables go through the object API. Constant data is never copied:
each :class:`~tacopt.fusion.ir.Buffer` is a lazy view into the bytes (or memory map) the model was
read from, and a buffer shared by several tensors is one shared ``Buffer`` object.

Every structural problem (a missing or empty file, a wrong file identifier, truncation, an index
out of range, a corrupt table) raises :class:`~tacopt.errors.ModelFormatError` naming the
file.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ai_edge_litert.schema_py_generated as fb
import networkx as nx

from tacopt.errors import GraphError, ModelFormatError
from tacopt.fusion.ir import (
    TFLITE_DTYPES,
    Buffer,
    ModelInfo,
    Op,
    Quantization,
    SignatureDef,
    Tensor,
    make_graph,
    validate_graph,
)
from tacopt.fusion.tflite import flatbuf, schema

FILE_IDENTIFIER = b"TFL3"
#: Files at least this large are memory-mapped instead of read into memory.
MMAP_THRESHOLD_BYTES = 64 << 20

_SANITISE = re.compile(r"[^0-9a-z]+")


def read_tflite(
    source: str | os.PathLike[str] | bytes | bytearray | memoryview, *, validate: bool = True
) -> nx.MultiDiGraph:
    """Read a .tflite model (a path or its bytes) into the graph IR, checked by the one checker.

    Every model that enters tacopt from a file goes through here, so this is where
    :func:`~tacopt.fusion.ir.validate_graph` runs, once, before any pass (fuse, partition,
    rehydrate, export, inspect, measure): a pass never sees two producers of a tensor, a cycle, an
    op without its inputs, constant bytes that disagree with their shape, a placeholder claiming
    more bytes than its tensor needs, bad quantization or sparsity parameters, or a recursive call.

    The main subgraph (index 0) is the returned graph; the others are in
    ``G.graph["subgraphs"]`` by name, and ops that call them (WHILE, IF, CALL_ONCE, ...) name them
    in their options. Op names are ``f"{kind.lower()}_{index}"`` with the op's index in its
    subgraph (custom ops: ``custom_<code>_<index>``, lower-cased and sanitised).

    Parameters
    ----------
    source
        Path of a .tflite file, or the flatbuffer itself as bytes / bytearray / memoryview.
    validate
        Run :func:`~tacopt.fusion.ir.validate_graph` on the result (default). ``False`` only for
        tools that show what they could read of a broken model (``tacopt inspect``); they must
        validate before acting on it.

    Returns
    -------
    networkx.MultiDiGraph
        The model in the IR of :mod:`tacopt.fusion.ir`; constants are lazy views, nothing is copied.

    Raises
    ------
    ModelFormatError
        If the file is missing, empty, not a TFLite flatbuffer, truncated or structurally corrupt.
    GraphError
        If the model breaks an invariant of the IR (the message starts with the file's name).

    Examples
    --------
    >>> from pathlib import Path
    >>> path = Path(__file__).parents[2] / "benchmarks/models/keras__mobilenet_v2_float32.tflite"
    >>> G = read_tflite(path)
    >>> G.number_of_nodes(), G.nodes["conv_2d_0"]["op"].options["padding"]
    (65, 'SAME')
    """
    buf, where = _load(source)
    if len(buf) < 8:
        raise ModelFormatError(f"{where}: too short for a TFLite flatbuffer ({len(buf)} bytes)")
    if bytes(buf[4:8]) != FILE_IDENTIFIER:
        raise ModelFormatError(
            f"{where}: not a TFLite model (file identifier {bytes(buf[4:8])!r}, expected b'TFL3')"
        )
    try:
        G = _Reader(buf, where).read()
    except ModelFormatError:
        raise
    except (IndexError, KeyError, ValueError, TypeError, OverflowError, struct.error) as exc:
        # The generated accessors do no bounds checks: a corrupt offset surfaces as one of these.
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelFormatError(f"{where}: corrupt or truncated flatbuffer ({detail})") from None
    except RecursionError:
        raise ModelFormatError(f"{where}: corrupt flatbuffer (cyclic offsets)") from None
    if validate:
        try:
            validate_graph(G)
        except GraphError as exc:
            raise GraphError(f"{where}: invalid model: {exc}") from None
    return G


def _load(source: Any) -> tuple[Any, str]:
    """The model bytes (bytes, buffer or mmap; never a copy of weights) and a name for errors."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source).cast("B") if isinstance(source, memoryview) else source
        return (data.obj if isinstance(data, memoryview) and data.contiguous else data), "<bytes>"
    if not isinstance(source, (str, os.PathLike)):
        raise ModelFormatError(f"cannot read a model from {type(source).__name__}")
    path = Path(source)
    where = str(path)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise ModelFormatError(f"{where}: is a directory, not a .tflite file")
        if size == 0:
            raise ModelFormatError(f"{where}: empty file")
        with open(path, "rb") as f:
            if size >= MMAP_THRESHOLD_BYTES:
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), where
            return f.read(), where
    except FileNotFoundError:
        raise ModelFormatError(f"{where}: no such file") from None
    except PermissionError:
        raise ModelFormatError(f"{where}: permission denied") from None
    except IsADirectoryError:
        raise ModelFormatError(f"{where}: is a directory, not a .tflite file") from None
    except OSError as exc:
        raise ModelFormatError(f"{where}: cannot read ({exc.strerror or exc})") from None


def _unique(name: str, index: int, taken: set[str]) -> str:
    """``name``, or ``name#index`` (then ``name#index#2``, ...) if empty or already taken."""
    if name and name not in taken:
        return name
    candidate = f"{name}#{index}"
    k = 2
    while candidate in taken:
        candidate = f"{name}#{index}#{k}"
        k += 1
    return candidate


class _Reader:
    """One parse of one flatbuffer (holds the per-model caches)."""

    def __init__(self, buf: Any, where: str) -> None:
        self.buf = buf
        self.where = where
        self.nbytes = len(buf)
        self.model = fb.Model.GetRootAs(buf, 0)
        self._buffers: dict[int, Buffer | None] = {}
        self._options_cache: dict[tuple, dict[str, Any]] = {}
        self._buffer_tables: list[int] | None = None

    def fail(self, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.where}: {msg}")

    # -- model level ---------------------------------------------------------------------------

    def read(self) -> nx.MultiDiGraph:
        m = self.model
        mtab = m._tab
        # Field slots of Model: version 4, operator_codes 6, subgraphs 8, description 10,
        # buffers 12, metadata_buffer 14, metadata 16, signature_defs 18.
        self.n_buffers = flatbuf.vector_len(mtab, 12, 4, self.nbytes)
        n_subgraphs = flatbuf.vector_len(mtab, 8, 4, self.nbytes)
        n_codes = flatbuf.vector_len(mtab, 6, 4, self.nbytes)
        if n_subgraphs == 0:
            raise self.fail("model has no subgraphs")
        self.opcodes = [self._opcode(i) for i in range(n_codes)]
        subgraphs = [m.Subgraphs(i) for i in range(n_subgraphs)]
        names: list[str] = []
        taken: set[str] = set()
        for i, sg in enumerate(subgraphs):
            raw = sg.Name()
            name = raw.decode() if raw else ""
            if not name:
                name = f"subgraph_{i}"
            if name in taken:
                name = _unique(name, i, taken)
            taken.add(name)
            names.append(name)
        self.subgraph_names = names
        graphs = [self._subgraph(sg, names[i], i) for i, sg in enumerate(subgraphs)]
        G = graphs[0]
        G.graph["subgraphs"] = {g.graph["name"]: g for g in graphs[1:]}
        G.graph["model"] = self._model_info(graphs)
        return G

    def _opcode(self, i: int) -> tuple[str, int]:
        code = self.model.OperatorCodes(i)
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == fb.BuiltinOperator.CUSTOM:
            raw = code.CustomCode()
            return "CUSTOM:" + (raw.decode() if raw else ""), code.Version()
        kind = schema.BUILTIN_NAMES.get(builtin)
        if kind is None:
            raise self.fail(f"operator code {i}: unknown builtin operator {builtin}")
        return kind, code.Version()

    def _model_info(self, graphs: list[nx.MultiDiGraph]) -> ModelInfo:
        m = self.model
        desc = m.Description()
        metadata = []
        for i in range(flatbuf.vector_len(m._tab, 16, 4, self.nbytes)):
            md = m.Metadata(i)
            raw = md.Name()
            buffer = self._buffer(md.Buffer(), f"metadata {i}")
            data = b"" if buffer is None or buffer.is_placeholder else buffer.tobytes()
            metadata.append((raw.decode() if raw else "", data))
        sigs = []
        for i in range(flatbuf.vector_len(m._tab, 18, 4, self.nbytes)):
            sig = m.SignatureDefs(i)
            index = sig.SubgraphIndex()
            if not 0 <= index < len(graphs):
                raise self.fail(f"signature def {i}: subgraph index {index} out of range")
            tensor_names = list(graphs[index].graph["tensors"])
            n_in = flatbuf.vector_len(sig._tab, 4, 4, self.nbytes)
            n_out = flatbuf.vector_len(sig._tab, 6, 4, self.nbytes)
            key = sig.SignatureKey()
            sigs.append(
                SignatureDef(
                    key=key.decode() if key else "",
                    subgraph=self.subgraph_names[index],
                    inputs=self._tensor_map(sig.Inputs, n_in, tensor_names, f"signature def {i}"),
                    outputs=self._tensor_map(
                        sig.Outputs, n_out, tensor_names, f"signature def {i}"
                    ),
                )
            )
        return ModelInfo(
            version=m.Version(),
            description=desc.decode() if desc else "",
            metadata=tuple(metadata),
            signature_defs=tuple(sigs),
            source=self.where,
        )

    def _tensor_map(
        self, get: Callable[[int], Any], n: int, names: list[str], where: str
    ) -> tuple[tuple[str, str], ...]:
        out = []
        for j in range(n):
            tm = get(j)
            t = tm.TensorIndex()
            if not 0 <= t < len(names):
                raise self.fail(f"{where}: tensor index {t} out of range")
            raw = tm.Name()
            out.append((raw.decode() if raw else "", names[t]))
        return tuple(out)

    # -- buffers and tensors -------------------------------------------------------------------

    def _buffer(self, index: int, what: str) -> Buffer | None:
        """The shared Buffer of ``index`` (None for buffer 0 and empty buffers)."""
        if index in self._buffers:
            return self._buffers[index]
        if not 0 <= index < self.n_buffers:
            raise self.fail(f"{what}: buffer index {index} out of range ({self.n_buffers} buffers)")
        result: Buffer | None = None
        if index != 0:
            if self._buffer_tables is None:
                model_fields = flatbuf.fields(self.buf, self.model._tab.Pos, 5)
                self._buffer_tables = self._tables(model_fields[4])
            # Buffer fields: data, offset, size.
            f = flatbuf.fields(self.buf, self._buffer_tables[index], 3)
            start = f[0] + flatbuf.U32(self.buf, f[0])[0] if f[0] else 0
            n = flatbuf.U32(self.buf, start)[0] if start else 0
            if n > 0:
                if start + 4 + n > self.nbytes:
                    raise self.fail(f"buffer {index}: data runs past the end of the file")
                result = Buffer(self.buf, start + 4, n, index)
            else:
                offset = flatbuf.U64(self.buf, f[1])[0] if f[1] else 0
                size = flatbuf.U64(self.buf, f[2])[0] if f[2] else 0
                if offset == 1 and size > 0:
                    result = Buffer.placeholder(size, index)  # structure-only model: bytes dropped
                elif offset > 1 and size > 0:
                    if offset + size > self.nbytes:
                        raise self.fail(
                            f"buffer {index}: offset {offset} + size {size} is past the end of "
                            f"the file ({self.nbytes} bytes)"
                        )
                    result = Buffer(self.buf, offset, size, index)
        self._buffers[index] = result
        return result

    def _tables(self, field: int) -> list[int]:
        """Positions of the tables in the vector of tables referenced at ``field``."""
        if not field:
            return []
        buf = self.buf
        start = field + flatbuf.U32(buf, field)[0]
        n = flatbuf.U32(buf, start)[0]
        if start + 4 + 4 * n > self.nbytes:
            raise IndexError(f"vector of {n} tables runs past the end of the buffer")
        elems = range(start + 4, start + 4 + 4 * n, 4)
        return [e + o for e, o in zip(elems, struct.unpack_from(f"<{n}I", buf, start + 4))]

    def _tensor(self, pos: int, f: list[int], name: str, where: str) -> Tensor:
        # Tensor fields: shape, type, buffer, name, quantization, is_variable, sparsity,
        # shape_signature.
        buf, nbytes = self.buf, self.nbytes
        code = flatbuf.U8(buf, f[1])[0] if f[1] else 0
        dtype = TFLITE_DTYPES.get(code)
        if dtype is None:
            raise self.fail(f"{where}: unknown tensor type {code}")
        quant = None
        q = flatbuf.table(buf, f[4])
        if q:
            # QuantizationParameters fields: min, max, scale, zero_point, details_type, details,
            # quantized_dimension.
            qf = flatbuf.fields(buf, q, 7)
            qmin = flatbuf.vector(buf, qf[0], "f", 4, nbytes)
            qmax = flatbuf.vector(buf, qf[1], "f", 4, nbytes)
            scale = flatbuf.vector(buf, qf[2], "f", 4, nbytes)
            zero = flatbuf.vector(buf, qf[3], "q", 8, nbytes)
            if scale or zero or qmin or qmax:
                axis = flatbuf.I32(buf, qf[6])[0] if qf[6] else 0
                quant = Quantization(scale=scale, zero_point=zero, axis=axis, min=qmin, max=qmax)
        sparsity = None
        if f[6]:
            sp = fb.SparsityParameters()
            sp.Init(buf, flatbuf.table(buf, f[6]))
            sparsity = schema.plain_object(
                fb.SparsityParametersT.InitFromObj(sp), self.subgraph_names
            )
        return Tensor(
            name=name,
            shape=flatbuf.vector(buf, f[0], "i", 4, nbytes),
            dtype=dtype,
            shape_signature=flatbuf.vector(buf, f[7], "i", 4, nbytes) if f[7] else None,
            quantization=quant,
            is_variable=bool(flatbuf.U8(buf, f[5])[0]) if f[5] else False,
            buffer=self._buffer(flatbuf.U32(buf, f[2])[0] if f[2] else 0, where),
            sparsity=sparsity,
        )

    # -- subgraphs and ops ---------------------------------------------------------------------

    def _subgraph(self, sg: Any, gname: str, gindex: int) -> nx.MultiDiGraph:
        buf, nbytes = self.buf, self.nbytes
        # SubGraph fields: tensors, inputs, outputs, operators, name.
        sf = flatbuf.fields(buf, sg._tab.Pos, 4)
        tensor_fields = [(pos, flatbuf.fields(buf, pos, 8)) for pos in self._tables(sf[0])]
        n_tensors = len(tensor_fields)
        names: list[str] = []
        taken: set[str] = set()
        for i, (_, f) in enumerate(tensor_fields):
            name = _unique(flatbuf.string(buf, f[3], nbytes), i, taken)
            taken.add(name)
            names.append(name)
        tensors = [
            self._tensor(pos, f, names[i], f"subgraph '{gname}' tensor {i}")
            for i, (pos, f) in enumerate(tensor_fields)
        ]

        def tensor_names(indices: tuple[int, ...], what: str, optional: bool) -> tuple:
            lowest = -1 if optional else 0
            for k in indices:
                if not lowest <= k < n_tensors:
                    raise self.fail(f"subgraph '{gname}' {what}: tensor index {k} out of range")
            return tuple(None if k == -1 else names[k] for k in indices)

        ops = []
        n_codes = len(self.opcodes)
        for i, pos in enumerate(self._tables(sf[3])):
            # Operator fields: opcode_index, inputs, outputs, builtin_options_type,
            # builtin_options, custom_options, custom_options_format, mutating_variable_inputs,
            # intermediates, large_custom_options_offset / _size, builtin_options2_type,
            # builtin_options2.
            f = flatbuf.fields(buf, pos, 13)
            where = f"subgraph '{gname}' op {i}"
            index = flatbuf.U32(buf, f[0])[0] if f[0] else 0
            if index >= n_codes:
                raise self.fail(f"{where}: opcode index {index} out of range ({n_codes} codes)")
            kind, version = self.opcodes[index]
            custom = bytes(flatbuf.vector(buf, f[5], "B", 1, nbytes)) if f[5] else None
            inputs = flatbuf.vector(buf, f[1], "i", 4, nbytes)
            outputs = flatbuf.vector(buf, f[2], "i", 4, nbytes)
            intermediates = flatbuf.vector(buf, f[8], "i", 4, nbytes)
            ops.append(
                Op(
                    name=_op_name(kind, i),
                    kind=kind,
                    inputs=tensor_names(inputs, f"op {i} input", True),
                    outputs=tensor_names(outputs, f"op {i} output", False),
                    options=self._options(f, where, kind),
                    version=version,
                    custom_options=custom,
                    intermediates=tensor_names(intermediates, f"op {i} intermediate", False),
                    origin=(i,),
                )
            )
        inputs = tensor_names(flatbuf.vector(buf, sf[1], "i", 4, nbytes), "inputs", False)
        outputs = tensor_names(flatbuf.vector(buf, sf[2], "i", 4, nbytes), "outputs", False)
        return make_graph(gname, tensors, ops, inputs, outputs)

    def _options(self, f: list[int], where: str, kind: str) -> dict[str, Any]:
        """Decoded builtin options (both unions) of the operator with fields ``f``; they must be
        the table of the op's ``kind`` (the writer can only write that one back)."""
        buf = self.buf
        out: dict[str, Any] = {}
        for type_field, table_field, classes in (
            (f[3], f[4], schema.OPTIONS_CLASSES),
            (f[11], f[12], schema.OPTIONS2_CLASSES),
        ):
            value = flatbuf.U8(buf, type_field)[0] if type_field else 0
            if value == 0 or not table_field:
                continue
            cls: Any = classes.get(value)
            if cls is None:
                raise self.fail(f"{where}: unknown builtin options type {value}")
            expected = schema.OPTIONS_FOR_KIND.get(kind)
            if expected is None or expected[1] != cls:
                want = expected[1].__name__[:-1] if expected else "none"
                raise self.fail(f"{where} ({kind}): has {cls.__name__[:-1]}, expected {want}")
            pos = flatbuf.table(buf, table_field)
            key = self._options_key(cls, pos)
            decoded = self._options_cache.get(key) if key is not None else None
            if decoded is None:
                try:
                    decoded = schema.plain_object(cls.InitFromBuf(buf, pos), self.subgraph_names)
                except (IndexError, KeyError) as exc:
                    raise self.fail(f"{where}: bad options ({exc})") from None
                if key is not None:
                    self._options_cache[key] = decoded
            out.update(decoded)
        return out

    def _options_key(self, cls: type, pos: int) -> tuple | None:
        """Cache key of an options table made only of scalars: its vtable and inline bytes.

        Tables with vectors or sub-tables hold relative offsets, so equal bytes do not mean equal
        contents; those are never cached.
        """
        if not schema.is_scalar_table(cls):
            return None
        buf = self.buf
        vtable = pos - flatbuf.I32(buf, pos)[0]
        vt_len, obj_len = flatbuf.U16(buf, vtable)[0], flatbuf.U16(buf, vtable + 2)[0]
        return cls, bytes(buf[vtable : vtable + vt_len]), bytes(buf[pos + 4 : pos + obj_len])


def _op_name(kind: str, index: int) -> str:
    if kind.startswith("CUSTOM:"):
        code = _SANITISE.sub("_", kind[len("CUSTOM:") :].lower()).strip("_")
        return f"custom_{code}_{index}" if code else f"custom_{index}"
    return f"{kind.lower()}_{index}"

"""Read a TensorFlow Lite flatbuffer into the graph IR of :mod:`fusion.ir`.

Fields are read with the schema's generated accessors (``ai_edge_litert.schema_py_generated``);
only the small per-op options tables go through the object API. Constant data is never copied:
each :class:`~fusion.ir.Buffer` is a lazy view into the bytes (or memory map) the model was read
from, and a buffer shared by several tensors is one shared ``Buffer`` object.

Every structural problem (a missing or empty file, a wrong file identifier, truncation, an index
out of range, a corrupt table) raises :class:`~fusion.errors.ModelFormatError` naming the file.
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
import numpy as np

from fusion import schema
from fusion.errors import ModelFormatError
from fusion.ir import (
    TFLITE_DTYPES,
    Buffer,
    ModelInfo,
    Op,
    Quantization,
    SignatureDef,
    Tensor,
    make_graph,
)

FILE_IDENTIFIER = b"TFL3"
#: Files at least this large are memory-mapped instead of read into memory.
MMAP_THRESHOLD_BYTES = 64 << 20

_SANITISE = re.compile(r"[^0-9a-z]+")


def read_tflite(source: str | os.PathLike[str] | bytes | bytearray | memoryview) -> nx.MultiDiGraph:
    """Read a .tflite model (a path or its bytes) into the graph IR.

    The main subgraph (index 0) is the returned graph; the others are in
    ``G.graph["subgraphs"]`` by name, and ops that call them (WHILE, IF, CALL_ONCE, ...) name them
    in their options. Op names are ``f"{kind.lower()}_{index}"`` with the op's index in its
    subgraph (custom ops: ``custom_<code>_<index>``, lower-cased and sanitised).

    Parameters
    ----------
    source
        Path of a .tflite file, or the flatbuffer itself as bytes / bytearray / memoryview.

    Returns
    -------
    networkx.MultiDiGraph
        The model in the IR of :mod:`fusion.ir`; constants are lazy views, nothing is copied.

    Raises
    ------
    ModelFormatError
        If the file is missing, empty, not a TFLite flatbuffer, truncated or structurally corrupt.

    Examples
    --------
    >>> from pathlib import Path
    >>> path = Path(__file__).parents[1] / "benchmarks/models/keras__mobilenet_v2_float32.tflite"
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
        return _Reader(buf, where).read()
    except ModelFormatError:
        raise
    except (IndexError, KeyError, ValueError, TypeError, OverflowError, struct.error) as exc:
        # The generated accessors do no bounds checks: a corrupt offset surfaces as one of these.
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelFormatError(f"{where}: corrupt or truncated flatbuffer ({detail})") from None
    except RecursionError:
        raise ModelFormatError(f"{where}: corrupt flatbuffer (cyclic offsets)") from None


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


def _vector_len(tab: Any, slot: int, elem_size: int, nbytes: int) -> int:
    """Length of the vector in field ``slot`` (0 if absent), checked to lie inside the buffer."""
    o = tab.Offset(slot)
    if o == 0:
        return 0
    n = tab.VectorLen(o)
    if tab.Vector(o) + n * elem_size > nbytes:
        raise IndexError(f"vector of {n} elements runs past the end of the buffer")
    return n


def _ints(arr: Any) -> tuple[int, ...]:
    """``*AsNumpy()`` result as a tuple (the accessors return 0 for an absent vector)."""
    return tuple(arr.tolist()) if isinstance(arr, np.ndarray) else ()


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

    def fail(self, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.where}: {msg}")

    # -- model level ---------------------------------------------------------------------------

    def read(self) -> nx.MultiDiGraph:
        m = self.model
        mtab = m._tab
        # Field slots of Model: version 4, operator_codes 6, subgraphs 8, description 10,
        # buffers 12, metadata_buffer 14, metadata 16, signature_defs 18.
        self.n_buffers = _vector_len(mtab, 12, 4, self.nbytes)
        n_subgraphs = _vector_len(mtab, 8, 4, self.nbytes)
        n_codes = _vector_len(mtab, 6, 4, self.nbytes)
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
        for i in range(_vector_len(m._tab, 16, 4, self.nbytes)):
            md = m.Metadata(i)
            raw = md.Name()
            buffer = self._buffer(md.Buffer(), f"metadata {i}")
            data = b"" if buffer is None or buffer.is_placeholder else buffer.tobytes()
            metadata.append((raw.decode() if raw else "", data))
        sigs = []
        for i in range(_vector_len(m._tab, 18, 4, self.nbytes)):
            sig = m.SignatureDefs(i)
            index = sig.SubgraphIndex()
            if not 0 <= index < len(graphs):
                raise self.fail(f"signature def {i}: subgraph index {index} out of range")
            tensor_names = list(graphs[index].graph["tensors"])
            n_in = _vector_len(sig._tab, 4, 4, self.nbytes)
            n_out = _vector_len(sig._tab, 6, 4, self.nbytes)
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
            b = self.model.Buffers(index)
            tab = b._tab
            o = tab.Offset(4)
            if o != 0 and tab.VectorLen(o) > 0:
                start, n = tab.Vector(o), tab.VectorLen(o)
                if start + n > self.nbytes:
                    raise self.fail(f"buffer {index}: data runs past the end of the file")
                result = Buffer(self.buf, start, n)
            else:
                offset, size = b.Offset(), b.Size()
                if offset == 1 and size > 0:
                    result = Buffer.placeholder(size)  # structure-only model: bytes dropped
                elif offset > 1 and size > 0:
                    if offset + size > self.nbytes:
                        raise self.fail(
                            f"buffer {index}: offset {offset} + size {size} is past the end of "
                            f"the file ({self.nbytes} bytes)"
                        )
                    result = Buffer(self.buf, offset, size)
        self._buffers[index] = result
        return result

    def _tensor(self, t: Any, name: str, where: str) -> Tensor:
        dtype = TFLITE_DTYPES.get(t.Type())
        if dtype is None:
            raise self.fail(f"{where}: unknown tensor type {t.Type()}")
        tab = t._tab
        signature = _ints(t.ShapeSignatureAsNumpy()) if tab.Offset(18) else None
        quant = None
        q = t.Quantization()
        if q is not None:
            scale = _ints(q.ScaleAsNumpy())
            zero = _ints(q.ZeroPointAsNumpy())
            qmin, qmax = _ints(q.MinAsNumpy()), _ints(q.MaxAsNumpy())
            if scale or zero or qmin or qmax:
                quant = Quantization(
                    scale=scale, zero_point=zero, axis=q.QuantizedDimension(), min=qmin, max=qmax
                )
        sparsity = None
        sp = t.Sparsity()
        if sp is not None:
            sparsity = schema.plain_object(
                fb.SparsityParametersT.InitFromObj(sp), self.subgraph_names
            )
        return Tensor(
            name=name,
            shape=_ints(t.ShapeAsNumpy()),
            dtype=dtype,
            shape_signature=signature,
            quantization=quant,
            is_variable=t.IsVariable(),
            buffer=self._buffer(t.Buffer(), where),
            sparsity=sparsity,
        )

    # -- subgraphs and ops ---------------------------------------------------------------------

    def _subgraph(self, sg: Any, gname: str, gindex: int) -> nx.MultiDiGraph:
        stab = sg._tab
        n_tensors = _vector_len(stab, 4, 4, self.nbytes)
        n_ops = _vector_len(stab, 10, 4, self.nbytes)
        _vector_len(stab, 6, 4, self.nbytes)
        _vector_len(stab, 8, 4, self.nbytes)
        names: list[str] = []
        taken: set[str] = set()
        raw_tensors = [sg.Tensors(i) for i in range(n_tensors)]
        for i, t in enumerate(raw_tensors):
            raw = t.Name()
            name = _unique(raw.decode() if raw else "", i, taken)
            taken.add(name)
            names.append(name)
        tensors = [
            self._tensor(t, names[i], f"subgraph '{gname}' tensor {i}")
            for i, t in enumerate(raw_tensors)
        ]

        def tensor_names(indices: tuple[int, ...], what: str, optional: bool) -> tuple:
            out = []
            for k in indices:
                if k == -1 and optional:
                    out.append(None)
                elif 0 <= k < n_tensors:
                    out.append(names[k])
                else:
                    raise self.fail(f"subgraph '{gname}' {what}: tensor index {k} out of range")
            return tuple(out)

        ops = []
        for i in range(n_ops):
            op = sg.Operators(i)
            where = f"subgraph '{gname}' op {i}"
            index = op.OpcodeIndex()
            if not 0 <= index < len(self.opcodes):
                raise self.fail(f"{where}: opcode index {index} out of range")
            kind, version = self.opcodes[index]
            custom = None
            if op._tab.Offset(14):
                custom = op.CustomOptionsAsNumpy().tobytes()
            ops.append(
                Op(
                    name=_op_name(kind, i),
                    kind=kind,
                    inputs=tensor_names(_ints(op.InputsAsNumpy()), f"op {i} input", True),
                    outputs=tensor_names(_ints(op.OutputsAsNumpy()), f"op {i} output", False),
                    options=self._options(op, where),
                    version=version,
                    custom_options=custom,
                    intermediates=tensor_names(
                        _ints(op.IntermediatesAsNumpy()), f"op {i} intermediate", False
                    ),
                    origin=(i,),
                )
            )
        inputs = tensor_names(_ints(sg.InputsAsNumpy()), "inputs", False)
        outputs = tensor_names(_ints(sg.OutputsAsNumpy()), "outputs", False)
        return make_graph(gname, tensors, ops, inputs, outputs)

    def _options(self, op: Any, where: str) -> dict[str, Any]:
        kind1, kind2 = op.BuiltinOptionsType(), op.BuiltinOptions2Type()
        if kind1 == 0 and kind2 == 0:
            return {}
        out: dict[str, Any] = {}
        for value, table, classes in (
            (kind1, op.BuiltinOptions(), schema.OPTIONS_CLASSES),
            (kind2, op.BuiltinOptions2(), schema.OPTIONS2_CLASSES),
        ):
            if value == 0 or table is None:
                continue
            cls = classes.get(value)
            if cls is None:
                raise self.fail(f"{where}: unknown builtin options type {value}")
            try:
                obj = cls.InitFromBuf(table.Bytes, table.Pos)
                out.update(schema.plain_object(obj, self.subgraph_names))
            except (IndexError, KeyError) as exc:
                raise self.fail(f"{where}: bad options ({exc})") from None
        return out


def _op_name(kind: str, index: int) -> str:
    if kind.startswith("CUSTOM:"):
        code = _SANITISE.sub("_", kind[len("CUSTOM:") :].lower()).strip("_")
        return f"custom_{code}_{index}" if code else f"custom_{index}"
    return f"{kind.lower()}_{index}"

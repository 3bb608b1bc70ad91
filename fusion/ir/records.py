"""The records of the graph IR: dtypes, quantization, constant buffers, tensors, ops, model info.

Frozen dataclasses (``Buffer`` views its bytes lazily); :mod:`tacopt.fusion.ir` describes how a
graph holds them.

Examples
--------
>>> t = Tensor("w", (2, 3), "int8", quantization=Quantization((0.5,), (0,)))
>>> t.num_elements, t.nbytes, t.is_quantized, numpy_dtype("int4")
(6, 6, True, dtype('uint8'))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tacopt.errors import GraphError
from tacopt.fusion.ir.vocabulary import DTYPE_NBYTES, PRICED_DTYPE_NBYTES

#: TFLite ``TensorType`` enum value -> tacopt dtype name (numpy spelling where numpy has one).
TFLITE_DTYPES: dict[int, str] = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    5: "string",
    6: "bool",
    7: "int16",
    8: "complex64",
    9: "int8",
    10: "float64",
    11: "complex128",
    12: "uint64",
    13: "resource",
    14: "variant",
    15: "uint32",
    16: "uint16",
    17: "int4",
    18: "bfloat16",
    19: "int2",
    20: "uint4",
    21: "float8_e4m3fn",
    22: "float8_e5m2",
}
DTYPE_TO_TFLITE: dict[str, int] = {name: code for code, name in TFLITE_DTYPES.items()}

_NUMPY_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "int32": np.int32,
    "uint8": np.uint8,
    "int64": np.int64,
    "bool": np.bool_,
    "int16": np.int16,
    "complex64": np.complex64,
    "int8": np.int8,
    "float64": np.float64,
    "complex128": np.complex128,
    "uint64": np.uint64,
    "uint32": np.uint32,
    "uint16": np.uint16,
}

FLOAT_DTYPES = frozenset({"float32", "float16", "float64", "bfloat16"})


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that stores ``dtype`` element by element (uint8 for packed/opaque types)."""
    return np.dtype(_NUMPY_DTYPES.get(dtype, np.uint8))




@dataclass(frozen=True, slots=True)
class Quantization:
    """Affine quantization: ``real = scale * (q - zero_point)``, per tensor or along ``axis``."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int = 0
    min: tuple[float, ...] = ()
    max: tuple[float, ...] = ()

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1


class Buffer:
    """Constant bytes of a tensor, viewed lazily from the bytes they were read from.

    Three states: a **view** into a source buffer (``source`` + ``offset`` + ``nbytes``; nothing is
    copied until :meth:`tobytes`), **owned** bytes (``Buffer.from_bytes``), or a **placeholder**
    whose bytes were dropped (structure-only models: only ``nbytes`` is known).
    """

    __slots__ = ("_source", "_offset", "nbytes", "index")

    def __init__(self, source: Any, offset: int, nbytes: int, index: int | None = None) -> None:
        self._source = source
        self._offset = offset
        self.nbytes = int(nbytes)
        #: Index of the buffer in the file it was read from (for messages only; not compared).
        self.index = index

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview | np.ndarray) -> Buffer:
        raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        return cls(raw, 0, len(raw))

    @classmethod
    def placeholder(cls, nbytes: int, index: int | None = None) -> Buffer:
        return cls(None, 0, nbytes, index)

    @property
    def is_placeholder(self) -> bool:
        return self._source is None

    def view(self) -> memoryview:
        """The bytes as a read-only memoryview (no copy); raises :class:`GraphError` if dropped."""
        if self._source is None:
            raise GraphError(
                f"constant of {self.nbytes} bytes was dropped (structure-only model); "
                "fill it first with `tacopt rehydrate`"
            )
        mv = memoryview(self._source).cast("B")
        return mv[self._offset : self._offset + self.nbytes].toreadonly()

    def tobytes(self) -> bytes:
        return bytes(self.view())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Buffer):
            return NotImplemented
        if self.nbytes != other.nbytes or self.is_placeholder != other.is_placeholder:
            return False
        return self.is_placeholder or self.view() == other.view()

    def __hash__(self) -> int:
        return hash((self.nbytes, self.is_placeholder))

    def __repr__(self) -> str:
        state = "placeholder" if self.is_placeholder else "data"
        return f"Buffer({state}, nbytes={self.nbytes})"


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor record. ``buffer`` is set for constants (weights); activations have none."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    shape_signature: tuple[int, ...] | None = None
    quantization: Quantization | None = None
    is_variable: bool = False
    buffer: Buffer | None = field(default=None, compare=True)
    #: Sparsity parameters of a sparse constant (input of DENSIFY) as a plain dict.
    sparsity: Mapping[str, Any] | None = None

    @property
    def is_constant(self) -> bool:
        return self.buffer is not None

    @property
    def num_elements(self) -> int:
        return math.prod(max(d, 1) for d in self.shape) if self.shape else 1

    @property
    def nbytes(self) -> int:
        """Stored constant size, else elements x element size (dynamic dims count as 1)."""
        if self.buffer is not None and self.buffer.nbytes:
            return self.buffer.nbytes
        return math.ceil(self.num_elements * DTYPE_NBYTES.get(self.dtype, 0))

    @property
    def priced_nbytes(self) -> int:
        """Bytes as the cost and memory models count them: elements x the whole bytes of
        :data:`~tacopt.fusion.ir.vocabulary.PRICED_DTYPE_NBYTES`; a dtype without a per-element
        size there (packed int4, strings) counts its stored bytes (:attr:`nbytes`).

        >>> Tensor("x", (2, 3), "float32").priced_nbytes, Tensor("q", (3,), "int4").priced_nbytes
        (24, 2)
        """
        size = PRICED_DTYPE_NBYTES.get(self.dtype)
        return self.num_elements * size if size is not None else self.nbytes

    @property
    def is_quantized(self) -> bool:
        return self.quantization is not None and bool(self.quantization.scale)

    def data(self) -> np.ndarray:
        """The constant's values as a read-only numpy view of shape ``shape`` (no copy).

        Raises :class:`GraphError` for an activation tensor or a dropped (placeholder) constant.
        """
        if self.buffer is None:
            raise GraphError(f"tensor '{self.name}' is not a constant")
        arr = np.frombuffer(self.buffer.view(), dtype=numpy_dtype(self.dtype))
        if arr.size == self.num_elements:
            return arr.reshape(self.shape)
        return arr  # packed (int4) or string data: raw storage


@dataclass(frozen=True, slots=True)
class Op:
    """An operator.

    ``kind`` is the builtin name (``"CONV_2D"``) or ``"CUSTOM:<code>"``. ``inputs`` are tensor names
    in slot order, ``None`` for an omitted optional input. ``options`` are the decoded builtin
    options (enums as names, e.g. ``{"padding": "SAME", "fused_activation_function": "RELU6"}``;
    subgraph references by name under keys such as ``cond_subgraph`` / ``body_subgraph``); treat
    it as read-only. ``origin`` lists the indices of the original ops this op stands for.
    """

    name: str
    kind: str
    inputs: tuple[str | None, ...]
    outputs: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    version: int = 1
    custom_options: bytes | None = None
    intermediates: tuple[str, ...] = ()
    origin: tuple[int, ...] = ()

    @property
    def is_custom(self) -> bool:
        return self.kind.startswith("CUSTOM:")

    def input(self, i: int) -> str:
        """The name of required input ``i``; :class:`GraphError` if it is omitted or missing.

        Examples
        --------
        >>> op = Op("fc_0", "FULLY_CONNECTED", ("x", "w", None), ("y",))
        >>> op.input(1)
        'w'
        >>> op.input(2)
        Traceback (most recent call last):
        ...
        tacopt.errors.GraphError: op 'fc_0' (FULLY_CONNECTED): input 2 is omitted
        """
        name = self.inputs[i] if -len(self.inputs) <= i < len(self.inputs) else None
        if name is None:
            raise GraphError(f"op '{self.name}' ({self.kind}): input {i} is omitted")
        return name

    @property
    def called_subgraphs(self) -> tuple[str, ...]:
        """Names of nested graphs this op calls (WHILE, IF, CALL_ONCE, CALL, composites)."""
        keys = [k for k in self.options if k.endswith("subgraph")]  # most ops: none, at once
        return tuple(
            v
            for k in sorted(keys)
            if k.endswith("_subgraph") or k == "subgraph"
            if isinstance(v := self.options[k], str)
        )


@dataclass(frozen=True, slots=True)
class SignatureDef:
    """A named entry point: (public name, tensor name) pairs of a subgraph's inputs and outputs."""

    key: str
    subgraph: str
    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """Model-level facts kept on the main graph so a rewritten model keeps them."""

    version: int = 3
    description: str = ""
    metadata: tuple[tuple[str, bytes], ...] = ()
    signature_defs: tuple[SignatureDef, ...] = ()
    source: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Composite:
    """A region of ops that implements a named operation.

    ``inputs`` are the tensors the region reads from outside (constants included) in first-use
    order; ``outputs`` the tensors it produces that are read outside it or are graph outputs, in
    production order; ``ops`` the op names of the region in execution order.
    """

    implements: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()

"""Lean flatbuffer access for the hot tables of a .tflite model (tensors, operators).

The generated accessors (``ai_edge_litert.schema_py_generated``) re-read the vtable and validate
every number on each call, which costs ~2 us per field; :mod:`tacopt.fusion.tflite.reader` reads
tensors and operators with these plain ``struct`` unpackers instead, one vtable read per table. Cold
tables (opcodes, signatures, options) still use the accessors. Every reader checks that what it
reads lies inside the buffer and raises :class:`IndexError` otherwise (the reader turns that into
a :class:`~tacopt.errors.ModelFormatError` naming the file).

Examples
--------
>>> import flatbuffers, numpy as np
>>> b = flatbuffers.Builder(0)
>>> v = b.CreateNumpyVector(np.array([3, 1, 2], np.int32))
>>> b.StartObject(1)
>>> b.PrependUOffsetTRelativeSlot(0, v, 0)
>>> _ = b.Finish(b.EndObject())
>>> buf = b.Output()
>>> root = U32(buf, 0)[0]
>>> vector(buf, fields(buf, root, 1)[0], "i", 4, len(buf))
(3, 1, 2)
"""

from __future__ import annotations

import struct
from typing import Any

U8 = struct.Struct("<B").unpack_from
U16 = struct.Struct("<H").unpack_from
I32 = struct.Struct("<i").unpack_from
U32 = struct.Struct("<I").unpack_from
U64 = struct.Struct("<Q").unpack_from


def fields(buf: Any, pos: int, n: int) -> list[int]:
    """Absolute positions of the first ``n`` fields of the table at ``pos`` (0 = absent)."""
    vtable = pos - I32(buf, pos)[0]
    n_present = min(n, (U16(buf, vtable)[0] - 4) // 2)
    if n_present <= 0:
        return [0] * n
    offsets = struct.unpack_from(f"<{n_present}H", buf, vtable + 4)
    return [pos + o if o else 0 for o in offsets] + [0] * (n - n_present)


def vector(buf: Any, field: int, fmt: str, size: int, nbytes: int) -> tuple:
    """The scalar vector referenced at ``field`` (``()`` if absent), bounds-checked."""
    if not field:
        return ()
    start = field + U32(buf, field)[0]
    n = U32(buf, start)[0]
    if start + 4 + n * size > nbytes:
        raise IndexError(f"vector of {n} elements runs past the end of the buffer")
    return struct.unpack_from(f"<{n}{fmt}", buf, start + 4)


def table(buf: Any, field: int) -> int:
    """Position of the sub-table referenced at ``field`` (0 if absent)."""
    return field + U32(buf, field)[0] if field else 0


def string(buf: Any, field: int, nbytes: int) -> str:
    if not field:
        return ""
    start = field + U32(buf, field)[0]
    n = U32(buf, start)[0]
    if start + 4 + n > nbytes:
        raise IndexError(f"string of {n} bytes runs past the end of the buffer")
    return bytes(buf[start + 4 : start + 4 + n]).decode()


def vector_len(tab: Any, slot: int, elem_size: int, nbytes: int) -> int:
    """Length of the vector in field ``slot`` (0 if absent), checked to lie inside the buffer."""
    o = tab.Offset(slot)
    if o == 0:
        return 0
    n = tab.VectorLen(o)
    if tab.Vector(o) + n * elem_size > nbytes:
        raise IndexError(f"vector of {n} elements runs past the end of the buffer")
    return n

"""In-place structure-aware mutations of a .tflite model: a field of the flatbuffer is
overwritten where it lies, so the file stays parseable and the edit reaches the checker and the
passes (see :mod:`tacopt.benchmarks.fuzz.models` for the families).

Examples
--------
>>> import random
>>> from tacopt.benchmarks.fuzz.cases import load_sources
>>> data = load_sources(None)[0].data
>>> mutated, note = mutate_in_place(data, random.Random(0))
>>> len(mutated) == len(data), note.startswith("in-place ")
(True, True)
"""

from __future__ import annotations

import functools
import math
import random
import struct
from dataclasses import dataclass

import ai_edge_litert.schema_py_generated as fb
import numpy as np


@dataclass(frozen=True, slots=True)
class Site:
    """A field of the file: its kind, byte position, struct format and context values."""

    kind: str
    pos: int
    fmt: str
    context: tuple[int, ...] = ()


class Sites:
    """The in-place mutable fields of one model, by kind, stored compactly (numpy rows)."""

    def __init__(self, rows: dict[str, tuple[str, list[tuple[int, ...]]]]) -> None:
        self._rows = {k: (fmt, np.array(r, np.int64)) for k, (fmt, r) in rows.items()}

    def kinds(self) -> list[str]:
        return sorted(self._rows)

    def count(self, kind: str) -> int:
        return len(self._rows[kind][1]) if kind in self._rows else 0

    def get(self, kind: str, i: int) -> Site:
        fmt, rows = self._rows[kind]
        pos, *context = (int(v) for v in rows[i])
        return Site(kind, pos, fmt, tuple(context))

    def choice(self, kind: str, rng: random.Random) -> Site:
        return self.get(kind, rng.randrange(self.count(kind)))

    def where(self, kind: str, column: int, value: int) -> list[Site]:
        if kind not in self._rows:
            return []
        rows = self._rows[kind][1]
        return [self.get(kind, int(i)) for i in np.flatnonzero(rows[:, column] == value)]


@functools.lru_cache(maxsize=64)
def _sites_of(data: bytes) -> Sites:
    """Every in-place mutable field of a model, grouped by kind."""
    model = fb.Model.GetRootAs(data, 0)
    sites: dict[str, tuple[str, list[tuple[int, ...]]]] = {}

    def add(kind: str, pos: int, fmt: str, *context: int) -> None:
        sites.setdefault(kind, (fmt, []))[1].append((pos, *context))

    def scalar(tab: object, slot: int, kind: str, fmt: str, *context: int) -> None:
        o = tab.Offset(slot)  # type: ignore[attr-defined]
        if o:
            add(kind, tab.Pos + o, fmt, *context)  # type: ignore[attr-defined]

    def vector(tab: object, slot: int, kind: str, fmt: str, size: int, *context: int) -> None:
        o = tab.Offset(slot)  # type: ignore[attr-defined]
        if not o:
            return
        start, n = tab.Vector(o), tab.VectorLen(o)  # type: ignore[attr-defined]
        add(kind + "_len", start - 4, "<I", n, *context)
        for k in range(n):
            add(kind, start + size * k, fmt, *context)

    n_buffers = model.BuffersLength()
    n_subgraphs = model.SubgraphsLength()
    for s in range(n_subgraphs):
        sg = model.Subgraphs(s)
        n_tensors = sg.TensorsLength()
        vector(sg._tab, 6, "subgraph_io", "<i", 4, n_tensors, s)
        vector(sg._tab, 8, "subgraph_io", "<i", 4, n_tensors, s)
        for t in range(n_tensors):
            tab = sg.Tensors(t)._tab
            vector(tab, 4, "shape", "<i", 4)
            scalar(tab, 6, "dtype", "<B")
            scalar(tab, 8, "tensor_buffer", "<I", n_buffers)
            q = sg.Tensors(t).Quantization()
            if q is not None:
                vector(q._tab, 8, "quant_scale", "<f", 4)
                vector(q._tab, 10, "quant_zero", "<q", 8)
                scalar(q._tab, 16, "quant_axis", "<i")
        outputs = []
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            outputs.append([op.Outputs(k) for k in range(op.OutputsLength())])
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            scalar(op._tab, 4, "opcode", "<I", model.OperatorCodesLength())
            vector(op._tab, 6, "op_input", "<i", 4, n_tensors, s, i)
            vector(op._tab, 8, "op_output", "<i", 4, n_tensors, s, i)
            options = op.BuiltinOptionsType()
            if options in (fb.BuiltinOptions.WhileOptions, fb.BuiltinOptions.IfOptions):
                table = op.BuiltinOptions()
                scalar(table, 4, "call", "<i", n_subgraphs, s)
                scalar(table, 6, "call", "<i", n_subgraphs, s)
            elif options == fb.BuiltinOptions.CallOnceOptions:
                scalar(op.BuiltinOptions(), 4, "call", "<i", n_subgraphs, s)
        # Later ops' outputs (cycles) and other ops' outputs (two producers), per subgraph.
        flat = [(i, t) for i, outs in enumerate(outputs) for t in outs]
        for i, t in flat:
            add("produced", 0, "", s, i, t)
    for c in range(model.OperatorCodesLength()):
        scalar(model.OperatorCodes(c)._tab, 10, "builtin_code", "<i")
    for b in range(n_buffers):
        tab = model.Buffers(b)._tab
        o = tab.Offset(4)
        if o:
            start, n = tab.Vector(o), tab.VectorLen(o)
            if n:
                add("buffer_data_len", start - 4, "<I", n, len(data) - start)
        scalar(tab, 6, "buffer_offset", "<Q")
        scalar(tab, 8, "buffer_size", "<Q")
    return Sites(sites)


_INT_EDGES = (-(2**31), -2, -1, 0, 1, 2, 3, 7, 64, 65535, 2**31 - 1)
_SIZE_EDGES = (0, 1, 2, 3, 4, 1000, 2**30, 2**31, 2**32, 2**33, 2**52, 2**63, 2**64 - 1)
SCALE_EDGES = (0.0, -0.0, -1.0, 1e-45, 1e-30, 1e30, 3.4e38, math.inf, -math.inf, math.nan)


def _value_for(site: Site, rng: random.Random, data: bytes) -> int | float:
    """A value for ``site``: an edge case, a neighbour of the current value or a random one."""
    (current,) = struct.unpack_from(site.fmt, data, site.pos) if site.fmt else (0,)
    kind = site.kind
    if kind.endswith("_len"):
        n = site.context[0]
        if kind == "buffer_data_len":
            room = site.context[1] - 4
            return rng.choice([0, 1, n - 1, n + 1, n // 2, n * 2, min(room, n + 7), 2**31])
        return rng.choice([0, max(n - 1, 0), n // 2, rng.randrange(n + 1)])
    if kind == "quant_scale":
        return rng.choice([*SCALE_EDGES, current * rng.choice([-1, 2, 1e-20, 1e20])])
    if kind == "quant_zero":
        return rng.choice([-129, -128, 127, 128, 255, 256, 2**40, -(2**62), current + 1])
    if kind in ("buffer_offset", "buffer_size"):
        return rng.choice([*_SIZE_EDGES, current + 1, max(current - 1, 0), current * 2, len(data)])
    if kind == "dtype":
        return rng.randrange(0, 26)
    if kind in ("tensor_buffer", "opcode"):
        return rng.choice([0, site.context[0] - 1, site.context[0], rng.randrange(site.context[0])])
    if kind == "builtin_code":
        return rng.choice([-1, 0, 32, 127, 200, 209, 210, 1000, rng.randrange(0, 210)])
    if kind in ("op_input", "op_output", "subgraph_io"):
        n = site.context[0]
        return rng.choice([-1, -2, n, n + 1000, rng.randrange(max(n, 1)), current + 1])
    if kind == "call":
        n, own = site.context
        return rng.choice([own, 0, -1, n, rng.randrange(n)])
    if kind == "quant_axis":
        return rng.choice([-1, 0, 1, 3, 4, 7, 2**31 - 1])
    return rng.choice([*_INT_EDGES, current + 1, current - 1, current * 2, rng.randrange(1, 9)])


def _pack(site: Site, value: int | float) -> bytes:
    fmt = site.fmt
    if fmt in ("<I", "<Q", "<B"):
        value = int(value) % (1 << (8 * struct.calcsize(fmt)))
    elif fmt in ("<i", "<q"):
        bits = 8 * struct.calcsize(fmt)
        value = (int(value) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    return struct.pack(fmt, value)


def mutate_in_place(source: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Overwrite one or a few fields of ``source`` where they lie; returns (bytes, description)."""
    sites = _sites_of(source)
    data = bytearray(source)
    notes = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(sites.kinds())
        if kind == "produced":
            notes.append(_rewire(data, sites, rng))
            continue
        site = sites.choice(kind, rng)
        value = _value_for(site, rng, source)
        data[site.pos : site.pos + struct.calcsize(site.fmt)] = _pack(site, value)
        notes.append(f"{kind}@{site.pos}={value}")
    return bytes(data), "in-place " + ",".join(notes)


def _rewire(data: bytearray, sites: Sites, rng: random.Random) -> str:
    """Point an op's input at a later op's output (a cycle) or its output at another op's (two
    producers)."""
    s, i, _ = sites.choice("produced", rng).context
    same = [p.context for p in sites.where("produced", 1, s) if p.context[1] != i]
    later = [c for c in same if c[1] > i]
    if rng.random() < 0.5 and later:
        kind, target = "op_input", rng.choice(later)[2]  # reads what a later op writes: cycle
    elif same:
        kind, target = "op_output", rng.choice(same)[2]  # writes what another op writes
    else:
        return "rewire:none"
    candidates = [x for x in sites.where(kind, 3, i) if x.context[1] == s]
    if not candidates:
        return "rewire:none"
    site = rng.choice(candidates)
    data[site.pos : site.pos + 4] = struct.pack("<i", target)
    return f"{'cycle' if kind == 'op_input' else 'two-producers'}:sg{s}/op{i}->t{target}"

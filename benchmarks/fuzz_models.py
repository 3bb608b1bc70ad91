"""Mutated .tflite models for fuzzing, and the harness that runs them through tacopt's commands.

Two families of mutations of real models (the bundled ``benchmarks/models`` and, when present,
``../shared/zoo``), each a pure function of ``(seed, index)`` so any case can be rebuilt alone:

- **structure-aware**, in place: a field of the flatbuffer is overwritten where it lies, so the
  file stays parseable and the edit reaches the checker and the passes: tensor shapes and ranks,
  dtypes, tensor -> buffer indices, op inputs / outputs (another op's output: two producers; a
  later op's output: a cycle; nothing: arity), opcode indices and builtin codes, buffer data
  lengths, offsets and sizes (placeholder size claims), quantization scales, zero points, axes
  and lengths, WHILE / IF / CALL_ONCE subgraph indices (the calling graph itself: recursion) and
  subgraph inputs / outputs;
- **structure-aware**, through the schema's object API (``ModelT``, re-packed; slower, so only
  on the small models): sparsity parameters, new quantization parameters, constant data of
  another length, a WHILE placed inside its own body;
- **byte-level**: bit flips, byte overwrites, zeroed ranges, truncation.

:func:`run_case` runs one mutant in-process through ``tacopt inspect`` (the reader, then the
checker) and, when asked, ``fuse -o``, ``partition`` at both granularities with ``--export``, and
``rehydrate``, and classifies the outcome (:data:`OUTCOMES`). :func:`run_cases` runs a batch in
a worker process whose address space is capped with ``RLIMIT_AS``: an allocation that a corrupt
size claim drives fails at once there (as a ``MemoryError``, counted as ``memory``) instead of
swapping the machine.

Examples
--------
>>> sources = load_sources()
>>> m = mutant(sources, seed=1, index=0)
>>> m.index, m.source in {s.name for s in sources}, len(m.data) > 8
(0, True, True)
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import random
import resource
import struct
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import ai_edge_litert.schema_py_generated as fb
import flatbuffers
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BUNDLED_DIR = ROOT / "benchmarks" / "models"
ZOO_DIR = ROOT.parent / "shared" / "zoo"

#: Outcome classes: the first two are passes, every other one is a failure.
OUTCOMES = ("ok", "refused", "crash", "multiline", "warning", "partial", "memory", "died")
FAILURES = frozenset(OUTCOMES[2:])

#: Models small enough for object-API mutations (unpack + re-pack in a few ms).
OBJECT_API_MODELS = (
    "keras__text_lstm_float32.tflite",
    "keras__text_lstm_tfkeras_int8.tflite",
    "keras__text_transformer_float32.tflite",
)

#: Address-space cap of a worker, above what it maps after its imports: 2 GiB. The largest
#: legitimate need is rehydrating the zoo's ViT-B/16 (344 MB of weights, about 1.1 GB at peak:
#: the values, the flatbuffer being built and the file's bytes).
MEMORY_HEADROOM_BYTES = 2 << 30


@dataclass(frozen=True, slots=True)
class Source:
    """A model to mutate: its file name and bytes."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Mutant:
    """One mutated model: which case it is, what was done, and the bytes."""

    index: int
    source: str
    mutation: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one command handled one mutant: an :data:`OUTCOMES` class and a one-line detail."""

    index: int
    command: str
    outcome: str
    detail: str
    mutation: str


def load_sources(zoo: Path | None = ZOO_DIR) -> list[Source]:
    """The bundled models, plus ``zoo``'s when that folder exists, sorted by name."""
    paths = sorted(BUNDLED_DIR.glob("*.tflite"))
    if zoo is not None and zoo.is_dir():
        bundled = {p.name for p in paths}
        paths += sorted(p for p in zoo.glob("*.tflite") if p.name not in bundled)
    return [Source(p.name, p.read_bytes()) for p in paths]


# --------------------------------------------------------------------------------------------
# in-place sites: where each mutable field lies in the file
# --------------------------------------------------------------------------------------------


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
_SCALE_EDGES = (0.0, -0.0, -1.0, 1e-45, 1e-30, 1e30, 3.4e38, math.inf, -math.inf, math.nan)


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
        return rng.choice([*_SCALE_EDGES, current * rng.choice([-1, 2, 1e-20, 1e20])])
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


def mutate_in_place(source: Source, rng: random.Random) -> tuple[bytes, str]:
    """Overwrite one or a few fields of ``source`` where they lie; returns (bytes, description)."""
    sites = _sites_of(source.data)
    data = bytearray(source.data)
    notes = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(sites.kinds())
        if kind == "produced":
            notes.append(_rewire(data, sites, rng))
            continue
        site = sites.choice(kind, rng)
        value = _value_for(site, rng, source.data)
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


# --------------------------------------------------------------------------------------------
# object-API mutations (re-packed)
# --------------------------------------------------------------------------------------------


def _unpack(data: bytes) -> fb.ModelT:
    return fb.ModelT.InitFromPackedBuf(bytearray(data), 0)


def _repack(m: fb.ModelT) -> bytes:
    builder = flatbuffers.Builder(1024)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _some_tensor(m: fb.ModelT, rng: random.Random, constant: bool) -> tuple[int, int, fb.TensorT]:
    s = rng.randrange(len(m.subgraphs))
    sg = m.subgraphs[s]
    pool = [
        i
        for i, t in enumerate(sg.tensors)
        if not constant or (t.buffer and m.buffers[t.buffer].data is not None)
    ] or list(range(len(sg.tensors)))
    i = rng.choice(pool)
    return s, i, sg.tensors[i]


def _add_sparsity(m: fb.ModelT, rng: random.Random) -> str:
    s, i, t = _some_tensor(m, rng, constant=True)
    rank = len(t.shape) if t.shape is not None else 0
    sp = fb.SparsityParametersT()
    order = list(range(rank + rng.choice([0, 0, 1])))
    if rng.random() < 0.3:
        rng.shuffle(order)
    if rng.random() < 0.2:
        order.append(rng.choice([0, 5, -1]))
    sp.traversalOrder = order
    sp.blockMap = [rng.randrange(max(rank, 1))] if len(order) > rank else []
    sp.dimMetadata = []
    for d in order:
        meta = fb.DimensionMetadataT()
        size = int(t.shape[d]) if 0 <= d < rank else 1
        if rng.random() < 0.6:
            meta.format = fb.DimensionType.DENSE
            meta.denseSize = rng.choice([size, size, 0, size + 1, 2**31 - 1])
        else:
            meta.format = fb.DimensionType.SPARSE_CSR
            segments, indices = fb.Int32VectorT(), fb.Int32VectorT()
            segments.values = sorted(rng.randrange(0, 4) for _ in range(rng.randrange(1, 4)))
            indices.values = [rng.choice([0, 1, size, -1]) for _ in range(rng.randrange(0, 4))]
            meta.arraySegmentsType = meta.arrayIndicesType = fb.SparseIndexVector.Int32Vector
            meta.arraySegments, meta.arrayIndices = segments, indices
        sp.dimMetadata.append(meta)
    t.sparsity = sp
    return f"sparsity sg{s}/t{i} order={order}"


def _add_quantization(m: fb.ModelT, rng: random.Random) -> str:
    s, i, t = _some_tensor(m, rng, constant=rng.random() < 0.5)
    rank = len(t.shape) if t.shape is not None else 0
    n = rng.choice([1, 2, int(t.shape[-1]) if rank else 3, 5])
    q = fb.QuantizationParametersT()
    q.scale = np.array([rng.choice([0.5, 0.01, *_SCALE_EDGES]) for _ in range(n)], np.float32)
    q.zeroPoint = np.array(
        [rng.choice([0, 0, 1, -128, 300]) for _ in range(rng.choice([n, n, 0, n + 1]))], np.int64
    )
    q.quantizedDimension = rng.choice([0, max(rank - 1, 0), rank, -1])
    t.quantization = q
    return f"quantization sg{s}/t{i} n={n} axis={q.quantizedDimension}"


def _resize_data(m: fb.ModelT, rng: random.Random) -> str:
    s, i, t = _some_tensor(m, rng, constant=True)
    if not t.buffer:
        return "resize:none"
    old = m.buffers[t.buffer].data
    n = 0 if old is None else len(old)
    new = rng.choice([n + 1, n - 1, n * 2, 11, 3, 1]) if n else rng.choice([1, 11, 4096])
    m.buffers[t.buffer].data = np.zeros(max(new, 1), np.uint8)
    m.buffers[t.buffer].offset = m.buffers[t.buffer].size = 0
    return f"data sg{s}/t{i} buffer {t.buffer}: {n} -> {max(new, 1)} bytes"


def _recurse(m: fb.ModelT, rng: random.Random) -> str:
    """Copy a WHILE op into its own body (or make any op call the graph it sits in)."""
    for sg in m.subgraphs:
        for op in sg.operators or []:
            opts = op.builtinOptions
            if isinstance(opts, fb.WhileOptionsT):
                body = m.subgraphs[opts.bodySubgraphIndex]
                clone = fb.OperatorT()
                clone.opcodeIndex, clone.builtinOptionsType = op.opcodeIndex, op.builtinOptionsType
                clone.builtinOptions = fb.WhileOptionsT()
                clone.builtinOptions.condSubgraphIndex = opts.condSubgraphIndex
                clone.builtinOptions.bodySubgraphIndex = opts.bodySubgraphIndex
                clone.inputs = list(body.inputs)
                start = len(body.tensors)
                for k in body.inputs:
                    src = body.tensors[k]
                    copy = fb.TensorT()
                    copy.shape, copy.type = src.shape, src.type
                    copy.name = (src.name or b"") + b"_again"
                    body.tensors.append(copy)
                clone.outputs = list(range(start, len(body.tensors)))
                body.operators.append(clone)
                return f"recursion: WHILE in body {opts.bodySubgraphIndex}"
    return "recursion:none"


OBJECT_MUTATORS: dict[str, Callable[[fb.ModelT, random.Random], str]] = {
    "sparsity": _add_sparsity,
    "quantization": _add_quantization,
    "resize": _resize_data,
    "recursion": _recurse,
}


def mutate_object(source: Source, rng: random.Random) -> tuple[bytes, str]:
    """One object-API mutation of ``source``, re-packed; returns (bytes, description)."""
    m = _unpack(source.data)
    name = rng.choice(sorted(OBJECT_MUTATORS))
    note = OBJECT_MUTATORS[name](m, rng)
    return _repack(m), "object " + note


# --------------------------------------------------------------------------------------------
# byte-level mutations
# --------------------------------------------------------------------------------------------


def mutate_bytes(source: Source, rng: random.Random) -> tuple[bytes, str]:
    """Bit flips, byte overwrites, a zeroed range or a truncation; returns (bytes, description)."""
    data = bytearray(source.data)
    n = len(data)
    how = rng.choice(["flip", "flip", "overwrite", "zero", "truncate"])
    if how == "flip":
        where = [rng.randrange(n) for _ in range(rng.randint(1, 8))]
        for pos in where:
            data[pos] ^= 1 << rng.randrange(8)
        return bytes(data), f"bytes flip {where}"
    if how == "overwrite":
        pos, payload = rng.randrange(n), rng.randbytes(rng.randint(1, 8))
        data[pos : pos + len(payload)] = payload
        return bytes(data[:n]), f"bytes overwrite @{pos} {payload.hex()}"
    if how == "zero":
        pos, k = rng.randrange(n), rng.choice([4, 16, 64, 256, 1024])
        data[pos : pos + k] = bytes(len(data[pos : pos + k]))
        return bytes(data), f"bytes zero [{pos}, {pos + k})"
    keep = rng.randrange(n)
    return bytes(data[:keep]), f"bytes truncate {keep}"


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------


def mutant(sources: Sequence[Source], seed: int, index: int) -> Mutant:
    """Case ``index`` of the campaign ``seed``: a pure function of both (rebuild any case alone).

    Half the cases are in-place structure edits, a sixth object-API edits (on the small models of
    :data:`OBJECT_API_MODELS`; they cost ~20 ms each to re-pack), a third byte-level edits.
    """
    family, source, rng = pick_source(sources, seed, index)
    if family == "object":
        data, note = mutate_object(source, rng)
    else:
        mutate = mutate_in_place if family == "in-place" else mutate_bytes
        data, note = mutate(source, rng)
    return Mutant(index, source.name, note, data)


def pick_source(
    sources: Sequence[Source], seed: int, index: int
) -> tuple[str, Source, random.Random]:
    """The family and source model of case ``index`` (cheap: nothing is mutated yet), and the
    random generator that then drives the mutation. Half the cases use a bundled model."""
    rng = random.Random(f"{seed}:{index}")
    family = rng.choice(["in-place", "in-place", "in-place", "object", "bytes", "bytes"])
    small = [s for s in sources if s.name in OBJECT_API_MODELS]
    if family == "object" and small:
        return family, rng.choice(small), rng
    bundled = [s for s in sources if (BUNDLED_DIR / s.name).is_file()]
    pool = bundled if bundled and rng.random() < 0.5 else list(sources)
    return ("bytes" if family == "object" else family), rng.choice(pool), rng


def mutants(sources: Sequence[Source], seed: int, start: int, stop: int) -> Iterator[Mutant]:
    """Cases ``start`` to ``stop - 1`` of the campaign ``seed``."""
    for index in range(start, stop):
        yield mutant(sources, seed, index)


# --------------------------------------------------------------------------------------------
# running a case
# --------------------------------------------------------------------------------------------

#: Command lines per command name; ``{m}`` is the model, ``{o}`` the output folder.
COMMANDS: dict[str, list[str]] = {
    "inspect": ["inspect", "{m}"],
    "fuse": ["fuse", "{m}", "-o", "{o}/fused.tflite"],
    "partition-op": ["partition", "{m}", "--devices", "GPU,CPU", "--granularity", "op"],
    "export": ["partition", "{m}", "--devices", "GPU,CPU", "--export", "{o}/plan.tflite"],
    "rehydrate": ["rehydrate", "{m}", "{o}/full.tflite"],
}
PIPELINE = ("fuse", "partition-op", "export", "rehydrate")


def run_command(command: str, model: Path, out: Path) -> tuple[str, str]:
    """Run one of :data:`COMMANDS` in-process; returns (outcome class, one-line detail)."""
    return run_argv([a.format(m=model, o=out) for a in COMMANDS[command]], out)


def run_argv(argv: Sequence[str], out: Path) -> tuple[str, str]:
    """Run ``tacopt argv`` in-process, writing only into the empty folder ``out``; classify it.

    ``ok``: exit 0, no warning, and every file in ``out`` is a .tflite that reads back valid (or
    another file); ``refused``: exit 2, one stderr line, nothing in ``out``; anything else is a
    failure class of :data:`OUTCOMES`.
    """
    from tacopt.fusion.reader import read_tflite
    from tacopt.partitioner.cli import main

    argv = list(argv)
    err = io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = main(argv)
        except MemoryError:
            return "memory", "MemoryError"
        except BaseException as exc:  # noqa: BLE001 - any other exception is the finding
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return "crash", f"{type(exc).__name__}: {exc} at {where.filename}:{where.lineno}"
    lines = err.getvalue().splitlines()
    if caught:
        w = caught[0]
        return "warning", f"{w.category.__name__}: {w.message} at {w.filename}:{w.lineno}"
    written = sorted(p.name for p in out.iterdir())
    if code == 0:
        for name in written:
            if not name.endswith(".tflite"):
                continue
            try:
                read_tflite(out / name)
            except Exception as exc:  # noqa: BLE001 - an unreadable output is the finding
                return "partial", f"exit 0 but {name} does not read back: {exc}"
        return "ok", ""
    if len(lines) != 1:
        return "multiline", f"exit {code} with {len(lines)} stderr lines: {lines[:2]}"
    if code != 2:
        return "crash", f"exit {code}: {lines[0]}"
    if written:
        return "partial", f"exit 2 but wrote {written}: {lines[0]}"
    return "refused", lines[0]


def run_case(m: Mutant, commands: Sequence[str], workdir: Path) -> list[Outcome]:
    """Run ``m`` through each of ``commands``; one :class:`Outcome` each.

    ``inspect`` is the checker's own run: it reads the file without validating, summarises it,
    then runs :func:`~tacopt.fusion.ir.validate_graph` (every other command validates on reading).
    """
    results = []
    model = workdir / "model.tflite"
    model.write_bytes(m.data)
    for command in commands:
        out = workdir / "out"
        out.mkdir(exist_ok=True)
        for stale in out.iterdir():
            stale.unlink()
        outcome, detail = run_command(command, model, out)
        results.append(Outcome(m.index, command, outcome, detail, m.mutation))
    return results


def _limit_memory(headroom: int) -> None:
    """Cap this process's address space at what it maps now plus ``headroom`` bytes."""
    import tacopt.partitioner.pipeline  # noqa: F401 - map the heavy libraries before measuring

    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    limit = mapped + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _run_chunk(
    zoo: str | None, seed: int, indices: Sequence[int], pipeline: frozenset[int]
) -> list[Outcome]:
    _cache_entry_points()
    sources = _sources(zoo)
    results: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="tacopt-fuzz-") as tmp:
        for index in indices:
            m = mutant(sources, seed, index)
            commands = ("inspect", *PIPELINE) if index in pipeline else ("inspect",)
            results += run_case(m, commands, Path(tmp))
    return results


def _cache_entry_points() -> None:
    """In a worker only: look the installed entry points up once, not on every command (the CLI
    scans every distribution to build its parser, 60 % of a fast command's time)."""
    from tacopt.partitioner import cli

    if not hasattr(cli.entry_points, "cache_info"):
        cli.entry_points = functools.cache(cli.entry_points)  # type: ignore[assignment]


@functools.cache
def _sources(zoo: str | None) -> list[Source]:
    return load_sources(Path(zoo) if zoo else None)


def run_cases(
    seed: int,
    indices: Sequence[int],
    *,
    pipeline: Sequence[int] = (),
    zoo: Path | None = ZOO_DIR,
    workers: int = 1,
    chunk: int = 100,
    headroom_bytes: int = MEMORY_HEADROOM_BYTES,
) -> Iterator[list[Outcome]]:
    """Run cases ``indices`` of campaign ``seed`` in worker processes with a memory cap.

    Every case goes through ``inspect`` (which runs the checker); those in ``pipeline`` also through
    :data:`PIPELINE`. Yields the outcomes chunk by chunk, in order. A worker that dies (a
    segfault, the kernel's OOM killer) gives one ``died`` outcome per case of its chunk.
    """
    in_pipeline = frozenset(pipeline)
    zoo_arg = str(zoo) if zoo is not None and zoo.is_dir() else None
    chunks = [list(indices[i : i + chunk]) for i in range(0, len(indices), chunk)]
    ctx = get_context("fork")
    with ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_limit_memory, initargs=(headroom_bytes,)
    ) as pool:
        futures = [pool.submit(_run_chunk, zoo_arg, seed, c, in_pipeline) for c in chunks]
        for c, future in zip(chunks, futures):
            try:
                yield future.result()
            except BrokenProcessPool as exc:
                yield [Outcome(i, "worker", "died", str(exc), "") for i in c]
                break


def default_seed() -> int:
    """A seed that rotates with the date, so every day's CI run tries new cases."""
    import datetime

    return int(datetime.date.today().strftime("%Y%m%d"))


if __name__ == "__main__":  # pragma: no cover
    for row in run_cases(default_seed(), range(20)):
        for outcome in row:
            print(outcome)
    os._exit(0)

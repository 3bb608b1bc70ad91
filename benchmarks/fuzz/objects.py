"""Structure-aware mutations through the schema's object API (``ModelT``, re-packed; slower,
so only on the small models of :data:`tacopt.benchmarks.fuzz.cases.OBJECT_API_MODELS`):
sparsity parameters, new quantization parameters, constant data of another length, a WHILE
placed inside its own body.

Examples
--------
>>> sorted(OBJECT_MUTATORS)
['quantization', 'recursion', 'resize', 'sparsity']
"""

from __future__ import annotations

import random
from collections.abc import Callable

import ai_edge_litert.schema_py_generated as fb
import flatbuffers
import numpy as np

from tacopt.benchmarks.fuzz.inplace import SCALE_EDGES


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
    q.scale = np.array([rng.choice([0.5, 0.01, *SCALE_EDGES]) for _ in range(n)], np.float32)
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


def mutate_object(source: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One object-API mutation of ``source``, re-packed; returns (bytes, description)."""
    m = _unpack(source)
    name = rng.choice(sorted(OBJECT_MUTATORS))
    note = OBJECT_MUTATORS[name](m, rng)
    return _repack(m), "object " + note

"""Float16-quantized and sparse variants of real models, made with tacopt's own IR and writer.

Test data for measurement (issue 22): most real-world float models store their weights as
float16 behind a DEQUANTIZE (TFLite's standard float16 quantization), and some store sparse
weights behind a DENSIFY. The shared zoo holds neither, so these rewrite zoo models:

- :func:`float16_weights`: every float32 constant read by an op (weights, biases, scales; not an
  op's first, activation, input) is stored as float16 and dequantized by a DEQUANTIZE op placed
  first, as TFLite's converter writes float16-quantized models;
- :func:`sparse_weights`: the weights of every FULLY_CONNECTED (and 1x1 CONV_2D) are stored
  sparse (TFLite's sparsity format: every dimension dense but the last, CSR with ``density`` of
  its entries kept, seeded) and densified by a DENSIFY op placed first.

Weights stay placeholders in structure-only models (``fill_constants`` fills them, the sparse
index arrays are real). ``python -m tacopt.benchmarks zoo_variants OUT MODEL...`` writes
``<stem>_fp16.tflite`` and ``<stem>_sparse.tflite`` for each model.

>>> from tacopt.fusion.ir.builder import GraphBuilder
>>> b = GraphBuilder()
>>> x = b.input("x", (1, 8))
>>> y = b.op("FULLY_CONNECTED", x, np.ones((4, 8)), np.zeros(4))
>>> G = b.build(outputs=[y])
>>> [op.kind for _, op in ops_of(float16_weights(G))]
['DEQUANTIZE', 'DEQUANTIZE', 'FULLY_CONNECTED']
>>> S = sparse_weights(G, density=0.5, seed=0)
>>> [op.kind for _, op in ops_of(S)], S.graph["tensors"]["const_0_sparse"].buffer.nbytes
(['DENSIFY', 'FULLY_CONNECTED'], 64)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np

from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph, ops_of
from tacopt.fusion.tflite import schema
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.writer import write_tflite

#: The name suffixes of the variants (``<stem>_fp16``, ``<stem>_sparse``): a variant of a model
#: belongs to that model's half of the zoo (``bench_learn``).
VARIANT_SUFFIXES = ("fp16", "sparse")
#: Op kinds whose weight input (slot 1) :func:`sparse_weights` stores sparse.
SPARSE_KINDS = ("FULLY_CONNECTED", "CONV_2D")


def _rebuild(
    G: nx.MultiDiGraph, convert: Callable[[Tensor], tuple[Tensor, Op] | None], slots: Callable
) -> nx.MultiDiGraph:
    """``G`` (main graph) with each constant that ``slots(op)`` lists and ``convert`` accepts
    replaced by the output of a new op placed first."""
    tensors = dict(G.graph["tensors"])
    first: list[Op] = []
    done: dict[str, str] = {}
    for _, op in ops_of(G):
        for i in slots(op):
            name = op.inputs[i] if i < len(op.inputs) else None
            if name is None or name in done or not tensors[name].is_constant:
                continue
            made = convert(tensors[name])
            if made is None:
                continue
            stored, producer = made
            tensors[stored.name] = stored
            tensors[name] = dataclasses.replace(tensors[name], buffer=None)
            first.append(producer)
            done[name] = stored.name
    if not first:
        return G
    H = make_graph(
        G.graph["name"],
        tensors.values(),
        [*first, *(op for _, op in ops_of(G))],
        G.graph["inputs"],
        G.graph["outputs"],
    )
    for k, v in G.graph.items():
        H.graph.setdefault(k, v)
    return H


def float16_weights(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """``G`` with its float32 constants (inputs past an op's first) stored as float16 behind a
    DEQUANTIZE each, the way TFLite's float16 quantization writes them."""

    def convert(t: Tensor) -> tuple[Tensor, Op] | None:
        if t.dtype != "float32" or t.num_elements < 2 or t.is_variable:
            return None
        assert t.buffer is not None
        if t.buffer.is_placeholder:
            buf = Buffer.placeholder(t.num_elements * 2)
        else:
            buf = Buffer.from_bytes(np.asarray(t.data(), np.float16))
        half = Tensor(f"{t.name}_fp16", t.shape, "float16", t.shape_signature, buffer=buf)
        return half, Op(f"dequantize_{t.name}", "DEQUANTIZE", (half.name,), (t.name,))

    return _rebuild(G, convert, lambda op: range(1, len(op.inputs)))


def sparse_weights(G: nx.MultiDiGraph, *, density: float = 0.5, seed: int = 0) -> nx.MultiDiGraph:
    """``G`` with the weights of its FULLY_CONNECTED and 1x1 CONV_2D ops stored sparse behind a
    DENSIFY each (every dimension dense but the last, CSR, ``density`` of entries kept)."""
    rng = np.random.default_rng(seed)

    def convert(t: Tensor) -> tuple[Tensor, Op] | None:
        if t.dtype != "float32" or len(t.shape) < 2 or t.is_quantized:
            return None
        rows, cols = math.prod(t.shape[:-1]), t.shape[-1]
        keep = max(1, int(round(cols * density)))
        indices = np.concatenate(
            [np.sort(rng.choice(cols, keep, replace=False)) for _ in range(rows)]
        ).astype(np.int32)
        segments = (np.arange(rows + 1) * keep).astype(np.int32)
        nnz = rows * keep
        if t.buffer is not None and not t.buffer.is_placeholder:
            dense = np.asarray(t.data(), np.float32).reshape(rows, cols)
            picked = dense[np.repeat(np.arange(rows), keep), indices]
            buf = Buffer.from_bytes(picked.astype(np.float32))
        else:
            buf = Buffer.placeholder(nnz * 4)
        stored = Tensor(
            f"{t.name}_sparse", t.shape, "float32", t.shape_signature, buffer=buf,
            sparsity=csr_last_dim(t.shape, segments, indices),
        )  # fmt: skip
        return stored, Op(f"densify_{t.name}", "DENSIFY", (stored.name,), (t.name,))

    def slots(op: Op) -> range:
        if op.kind == "FULLY_CONNECTED":
            return range(1, 2)
        if op.kind == "CONV_2D":
            w = G.graph["tensors"][op.inputs[1]]
            return range(1, 2) if w.shape[1:3] == (1, 1) else range(0)
        return range(0)

    return _rebuild(G, convert, slots)


def csr_last_dim(
    shape: tuple[int, ...], segments: np.ndarray, indices: np.ndarray
) -> dict[str, object]:
    """TFLite sparsity parameters (as the IR's plain dict): the leading dimensions dense, the
    last one CSR over the flattened rows."""
    # Deferred: LiteRT's schema module only for the sparse variants.
    import ai_edge_litert.schema_py_generated as fb

    dims = []
    for size in shape[:-1]:
        d = fb.DimensionMetadataT()
        d.format, d.denseSize = fb.DimensionType.DENSE, int(size)
        dims.append(d)
    csr = fb.DimensionMetadataT()
    csr.format = fb.DimensionType.SPARSE_CSR
    csr.arraySegmentsType = csr.arrayIndicesType = fb.SparseIndexVector.Int32Vector
    csr.arraySegments, csr.arrayIndices = fb.Int32VectorT(), fb.Int32VectorT()
    csr.arraySegments.values, csr.arrayIndices.values = segments, indices
    params = fb.SparsityParametersT()
    params.traversalOrder = np.arange(len(shape), dtype=np.int32)
    params.dimMetadata = [*dims, csr]
    return schema.plain_object(params, [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for the variants")
    ap.add_argument("models", nargs="+", type=Path, help=".tflite float models")
    ap.add_argument("--density", type=float, default=0.5)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.models:
        G = read_tflite(path)
        for suffix in VARIANT_SUFFIXES:
            H = float16_weights(G) if suffix == "fp16" else sparse_weights(G, density=args.density)
            if H is G:
                print(f"{path.stem}: no weights for a {suffix} variant", file=sys.stderr)
                continue
            dst = write_tflite(H, args.out / f"{path.stem}_{suffix}.tflite")
            kinds = sum(1 for _, op in ops_of(H) if op.kind in ("DEQUANTIZE", "DENSIFY"))
            print(f"{dst}: {kinds} {'DEQUANTIZE' if suffix == 'fp16' else 'DENSIFY'} ops")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

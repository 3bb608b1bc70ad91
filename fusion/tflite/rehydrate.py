"""Fill the dropped constants of a structure-only model with random values so that it runs.

Structure-only models keep every op, tensor and quantization parameter but drop large weight
buffers (see ``../shared/zoo/README.md``). :func:`rehydrate` returns a new graph in which each
dropped constant holds seeded random values of its dtype, in ranges that keep a network's
activations finite: weights of rank >= 2 are uniform with variance ``1 / fan_in`` (LeCun),
vectors (biases, scales) uniform in [-0.1, 0.1], int8 weights in [-127, 127], int32 / int64
values (biases) in [-64, 64]. INT32 / INT64 / BOOL shape-like buffers are never dropped by the
convention, so they keep their real values.

Memory is bounded: every placeholder must claim exactly the bytes its tensor's shape and dtype
need (:func:`~tacopt.fusion.ir.tensor_problem`), and the bytes created in total may not exceed
``max_bytes`` (default :data:`MAX_WEIGHT_BYTES`, 2 GiB; ``tacopt rehydrate --max-weight-bytes``).
Both are checked before anything is allocated.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import networkx as nx
import numpy as np

from tacopt.errors import GraphError, ResourceLimitError
from tacopt.fusion.ir import (
    FLOAT_DTYPES,
    Buffer,
    Tensor,
    all_graphs,
    make_graph,
    numpy_dtype,
    ops_of,
    tensor_problem,
)
from tacopt.fusion.ir.vocabulary import MAX_WEIGHT_BYTES

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-127, 127),
    "uint8": (0, 255),
    "int16": (-1024, 1024),
    "uint16": (0, 2048),
    "int32": (-64, 64),
    "uint32": (0, 64),
    "int64": (-64, 64),
    "uint64": (0, 64),
}


def rehydrate(
    G: nx.MultiDiGraph, *, seed: int, max_bytes: int = MAX_WEIGHT_BYTES
) -> nx.MultiDiGraph:
    """A new graph whose dropped (placeholder) constants hold random values of their dtype.

    Parameters
    ----------
    G
        A graph read from a structure-only model (or any graph; constants with data are kept).
    seed
        Seed of the random generator; equal seeds give byte-identical constants.
    max_bytes
        The most weight bytes to create in total (distinct placeholders, shared ones once).

    Returns
    -------
    networkx.MultiDiGraph
        A new graph (``G`` is not modified); a placeholder shared by several tensors becomes one
        shared buffer of random values.

    Raises
    ------
    GraphError
        A placeholder whose size disagrees with its tensor's shape and dtype.
    ResourceLimitError
        The placeholders need more than ``max_bytes`` in total (names the buffer that crosses it).

    Examples
    --------
    >>> from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph
    >>> w = Tensor("w", (4, 8), "float32", buffer=Buffer.placeholder(128))
    >>> G = make_graph("main", [Tensor("x", (1, 8), "float32"), w, Tensor("y", (1, 4), "float32")],
    ...                [Op("fc_0", "FULLY_CONNECTED", ("x", "w"), ("y",))], ["x"], ["y"])
    >>> H = rehydrate(G, seed=0)
    >>> H.graph["tensors"]["w"].data().shape, G.graph["tensors"]["w"].buffer.is_placeholder
    ((4, 8), True)
    """
    check_rehydrate_size(G, max_bytes)
    rng = np.random.default_rng(seed)
    filled: dict[int, Buffer] = {}

    def fill(t: Tensor) -> Tensor:
        if t.buffer is None or not t.buffer.is_placeholder:
            return t
        key = id(t.buffer)
        if key not in filled:
            filled[key] = Buffer.from_bytes(random_bytes(t, rng))
        return dataclasses.replace(t, buffer=filled[key])

    return _map_tensors(G, fill)


def check_rehydrate_size(G: nx.MultiDiGraph, max_bytes: int = MAX_WEIGHT_BYTES) -> int:
    """The weight bytes :func:`rehydrate` would create; raise before allocating anything if a
    placeholder contradicts its tensor or the total passes ``max_bytes``.

    Examples
    --------
    >>> from tacopt.fusion.ir import Buffer, Tensor, make_graph
    >>> w = Tensor("w", (4, 8), "float32", buffer=Buffer.placeholder(128, index=2))
    >>> G = make_graph("main", [w], [], [], ["w"])
    >>> check_rehydrate_size(G)
    128
    >>> check_rehydrate_size(G, max_bytes=100)
    Traceback (most recent call last):
    ...
    tacopt.errors.ResourceLimitError: rehydrate: ... (buffer 2): ... over the cap ...
    """
    total = 0
    seen: set[int] = set()
    for g in all_graphs(G):
        for t in g.graph["tensors"].values():
            b = t.buffer
            if b is None or not b.is_placeholder or id(b) in seen:
                continue
            seen.add(id(b))
            where = f"graph '{g.graph.get('name')}' tensor '{t.name}'"
            if b.index is not None:
                where += f" (buffer {b.index})"
            problem = tensor_problem(t)
            if problem is not None:
                raise GraphError(f"rehydrate: graph '{g.graph.get('name')}': {problem}")
            total += b.nbytes
            if total > max_bytes:
                raise ResourceLimitError(
                    f"rehydrate: {where}: its {b.nbytes:,} dropped bytes bring the weights to "
                    f"{total:,} bytes, over the cap of {max_bytes:,} (--max-weight-bytes)"
                )
    return total


def random_bytes(t: Tensor, rng: np.random.Generator) -> bytes:
    """Random contents for the dropped constant ``t`` (exactly ``t.buffer.nbytes`` bytes)."""
    assert t.buffer is not None
    nbytes = t.buffer.nbytes
    dtype = numpy_dtype(t.dtype)
    count = t.num_elements
    if count * dtype.itemsize != nbytes or t.dtype not in FLOAT_DTYPES | set(_INT_RANGES) | {
        "bool"
    }:
        # Packed (int4, ...) or opaque storage: random bytes of the stored size.
        return rng.integers(0, 256, size=nbytes, dtype=np.uint8).tobytes()
    if t.dtype == "bool":
        return rng.integers(0, 2, size=count, dtype=np.uint8).tobytes()
    if t.dtype in _INT_RANGES:
        low, high = _INT_RANGES[t.dtype]
        return rng.integers(low, high, size=count, endpoint=True).astype(dtype).tobytes()
    if len(t.shape) >= 2:
        fan_in = max(1, math.prod(max(d, 1) for d in t.shape[1:]))
        bound = math.sqrt(3.0 / fan_in)
    else:
        bound = 0.1
    values = rng.uniform(-bound, bound, size=count)
    if t.dtype == "bfloat16":
        bits = values.astype(np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16).tobytes()
    return values.astype(dtype).tobytes()


def _map_tensors(G: nx.MultiDiGraph, fn: Callable[[Tensor], Tensor]) -> nx.MultiDiGraph:
    """A new model whose tensor records (in every graph) are ``fn`` of the old ones."""
    graphs = [_rebuild(g, fn) for g in all_graphs(G)]
    H = graphs[0]
    if "model" in G.graph:
        H.graph["model"] = G.graph["model"]
    H.graph["subgraphs"] = {g.graph["name"]: g for g in graphs[1:]}
    return H


def _rebuild(g: nx.MultiDiGraph, fill: Callable[[Tensor], Tensor]) -> nx.MultiDiGraph:
    tensors = [fill(t) for t in g.graph["tensors"].values()]
    return make_graph(
        g.graph["name"],
        tensors,
        [op for _, op in ops_of(g)],
        g.graph["inputs"],
        g.graph["outputs"],
    )


#: dtypes whose buffers the structure-only convention always keeps (shapes, indices, biases).
KEPT_DTYPES = frozenset({"int32", "int64", "bool"})


def strip_weights(G: nx.MultiDiGraph, *, max_kept_bytes: int = 64) -> nx.MultiDiGraph:
    """A structure-only copy of ``G``: large weight buffers become placeholders.

    The convention of ``../shared/zoo``: every constant buffer larger than ``max_kept_bytes``
    whose tensors are not INT32 / INT64 / BOOL is dropped (only its byte size is kept), so the
    model keeps every op, shape, quantization parameter and shape-like constant. The inverse,
    up to the values, is :func:`rehydrate`.

    Examples
    --------
    >>> from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph
    >>> w = Tensor("w", (4, 8), "float32", buffer=Buffer.from_bytes(bytes(128)))
    >>> G = make_graph("main", [Tensor("x", (1, 8), "float32"), w, Tensor("y", (1, 4), "float32")],
    ...                [Op("fc_0", "FULLY_CONNECTED", ("x", "w"), ("y",))], ["x"], ["y"])
    >>> strip_weights(G).graph["tensors"]["w"].buffer
    Buffer(placeholder, nbytes=128)
    """
    keep: set[int] = set()
    for g in all_graphs(G):
        for t in g.graph["tensors"].values():
            if t.buffer is not None and t.dtype in KEPT_DTYPES:
                keep.add(id(t.buffer))  # a buffer shared with a shape-like tensor stays
    dropped: dict[int, Buffer] = {}

    def drop(t: Tensor) -> Tensor:
        b = t.buffer
        if b is None or b.is_placeholder or id(b) in keep or b.nbytes <= max_kept_bytes:
            return t
        return dataclasses.replace(
            t, buffer=dropped.setdefault(id(b), Buffer.placeholder(b.nbytes))
        )

    return _map_tensors(G, drop)

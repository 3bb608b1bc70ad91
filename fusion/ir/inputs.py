"""Random inputs for a graph: reproducible, in range for the ops that index with them.

Examples
--------
>>> from tacopt.fusion.ir.builder import GraphBuilder
>>> b = GraphBuilder()
>>> ids = b.input("ids", (3,), "int32")
>>> G = b.build(outputs=[b.op("GATHER", np.zeros((4, 2), np.float32), ids)])
>>> bool((random_inputs(G, seed=0)["ids"] < 4).all())
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

from tacopt.errors import ExecutionError
from tacopt.fusion.ir import Tensor, numpy_dtype, ops_of

_INDEX_USERS: dict[str, Callable[[Any, dict[str, Tensor], int], int | None]] = {
    # (op, tensors, slot of the index input) -> exclusive upper bound of valid indices
    "GATHER": lambda op, ts, slot: (
        ts[op.inputs[0]].shape[op.options.get("axis", 0)] if slot == 1 else None
    ),
    "EMBEDDING_LOOKUP": lambda op, ts, slot: ts[op.inputs[1]].shape[0] if slot == 0 else None,
    "GATHER_ND": lambda op, ts, slot: min(ts[op.inputs[0]].shape) if slot == 1 else None,
    "ONE_HOT": lambda op, ts, slot: None,
}
_PASS_THROUGH = frozenset({"CAST", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "SLICE", "STRIDED_SLICE"})


def _index_bound(G: nx.MultiDiGraph, tensor: str, depth: int = 4) -> int | None:
    """Smallest table size an integer tensor indexes into, following casts and reshapes."""
    tensors = G.graph["tensors"]
    bounds = []
    for _, op in ops_of(G):
        for slot, t in enumerate(op.inputs):
            if t != tensor:
                continue
            if op.kind in _INDEX_USERS:
                b = _INDEX_USERS[op.kind](op, tensors, slot)
                if b is not None:
                    bounds.append(int(b))
            elif op.kind in _PASS_THROUGH and slot == 0 and depth > 0:
                b = _index_bound(G, op.outputs[0], depth - 1)
                if b is not None:
                    bounds.append(b)
    return min(bounds) if bounds else None


def random_inputs(G: nx.MultiDiGraph, *, seed: int) -> dict[str, np.ndarray]:
    """Random values for every input of ``G``, reproducible from ``seed``.

    Floats are uniform in [-1, 1); quantized inputs span their integer type; integer inputs
    that index a table (GATHER, EMBEDDING_LOOKUP, through casts and reshapes) stay in range,
    other integers are in [0, 10); booleans are fair coins. Dynamic dimensions become 1.

    Examples
    --------
    >>> from tacopt.fusion.ir import Tensor, make_graph
    >>> G = make_graph("g", [Tensor("x", (2, 3), "float32")], [], ["x"], ["x"])
    >>> x = random_inputs(G, seed=0)["x"]
    >>> x.shape, x.dtype, bool((abs(x) <= 1).all())
    ((2, 3), dtype('float32'), True)
    """
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name in G.graph["inputs"]:
        t: Tensor = G.graph["tensors"][name]
        shape = tuple(max(int(d), 1) for d in t.shape)
        dtype = numpy_dtype(t.dtype)
        if t.dtype == "bool":
            out[name] = rng.random(shape) < 0.5
        elif np.issubdtype(dtype, np.floating):
            out[name] = rng.uniform(-1, 1, shape).astype(dtype)
        elif t.is_quantized:
            info = np.iinfo(dtype)
            out[name] = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
        elif np.issubdtype(dtype, np.integer):
            high = _index_bound(G, name) or 10
            out[name] = rng.integers(0, high, shape).astype(dtype)
        else:
            raise ExecutionError(f"graph input '{name}': cannot make random {t.dtype} values")
    return out

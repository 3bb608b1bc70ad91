"""Single-op graphs: an op cut out of its model with its constants filled, the features a learned
model sees, and the key that identifies its configuration."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.ops import inference_type, op_counts, trip_count
from tacopt.fusion.ir import Buffer, Op, make_graph, ops_of
from tacopt.fusion.tflite.rehydrate import rehydrate

#: Kinds that cannot run as a single op: control flow needs its bodies, the rest need state.
UNMEASURABLE = {
    "WHILE": "control flow (its body ops are measured one by one)",
    "IF": "control flow (its branch ops are measured one by one)",
    "CALL_ONCE": "initialises variables; no steady-state cost",
    "VAR_HANDLE": "resource variable",
    "READ_VARIABLE": "resource variable",
    "ASSIGN_VARIABLE": "resource variable",
}


def unmeasurable(S: nx.MultiDiGraph, node: str) -> str | None:
    op: Op = S.nodes[node]["op"]
    if op.kind in UNMEASURABLE:
        return UNMEASURABLE[op.kind]
    tensors = S.graph["tensors"]
    if any(
        tensors[t].dtype in ("resource", "variant", "string")
        for t in [*op.outputs, *(t for t in op.inputs if t is not None)]
    ):
        return "resource / variant / string tensors"
    return None


def fill_constants(G: nx.MultiDiGraph, *, seed: int) -> nx.MultiDiGraph:
    """A copy of ``G`` whose dropped constants hold random values (:func:`rehydrate`)."""
    return rehydrate(G, seed=seed)


def cut_op(G: nx.MultiDiGraph, node: str) -> nx.MultiDiGraph:
    """A graph holding only op ``node`` of ``G``: its non-constant inputs become graph inputs
    (except the shape of a RESHAPE computed by other ops: it becomes a constant).

    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> ts = [Tensor(n, (2,), "float32") for n in "xyz"]
    >>> G = make_graph("g", ts, [Op("neg_0", "NEG", ("x",), ("y",)),
    ...                          Op("neg_1", "NEG", ("y",), ("z",))], ["x"], ["z"])
    >>> S = cut_op(G, "neg_1")
    >>> S.graph["inputs"], S.graph["outputs"], list(S)
    (('y',), ('z',), ['neg_1'])
    """
    op: Op = G.nodes[node]["op"]
    tensors = G.graph["tensors"]
    names = list(
        dict.fromkeys([*(t for t in op.inputs if t is not None), *op.outputs, *op.intermediates])
    )
    own = {t: tensors[t] for t in names}
    if op.kind == "RESHAPE" and len(op.inputs) > 1 and op.inputs[1] is not None:
        shape_t = own[op.inputs[1]]
        if not shape_t.is_constant:
            # the shape came from other ops: alone it would be a (zero-filled) input, so it
            # becomes the constant it is in the model, the output's shape
            value = np.asarray(tensors[op.outputs[0]].shape, dtype=np.int32)
            own[shape_t.name] = replace(
                shape_t, shape=value.shape, dtype="int32", buffer=Buffer.from_bytes(value)
            )
    inputs = [
        t
        for t in dict.fromkeys(t for t in op.inputs if t is not None)
        if not own[t].is_constant and not own[t].is_variable
    ]
    return make_graph(f"{node}_alone", list(own.values()), [op], inputs, op.outputs)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return hashlib.sha1(bytes(v)).hexdigest()[:12]
    if isinstance(v, (np.generic,)):
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def op_features(G: nx.MultiDiGraph, node: str, *, root: nx.MultiDiGraph) -> dict[str, Any]:
    """The features of op ``node`` that a learned model sees (and that identify its config)."""
    op: Op = G.nodes[node]["op"]
    tensors = G.graph["tensors"]

    def desc(name: str | None) -> list[Any] | None:
        if name is None:
            return None
        t = tensors[name]
        d: list[Any] = [list(t.shape), t.dtype, t.is_constant, t.is_quantized]
        if (
            t.is_constant
            and t.buffer is not None
            and not t.buffer.is_placeholder
            and t.num_elements <= 64
            and t.dtype in ("int32", "int64")
            and not t.is_quantized  # biases: their values do not change the latency
        ):
            d.append(np.asarray(t.data()).reshape(-1).tolist())  # shapes, perms, paddings
        return d

    counts = op_counts(G, node, root=root)
    return {
        "kind": op.kind,
        "version": op.version,
        "inputs": [desc(t) for t in op.inputs],
        "outputs": [desc(t) for t in op.outputs],
        "options": _jsonable(
            {
                k: v
                for k, v in op.options.items()
                if not (k.endswith("_subgraph") or k == "subgraph")
            }
        ),
        "flops": counts.flops,
        "bytes": counts.nbytes,
        "inference_type": inference_type(G, node),
    }


def op_key(features: Mapping[str, Any]) -> str:
    """Canonical identity of an op configuration: a hash of its kind, operands (shapes, dtypes,
    constness, quantized or not, small shape-like constants) and options. Not the op version
    (the converter derives it from the same operands) nor quantization scales."""
    blob = json.dumps(
        {k: features[k] for k in ("kind", "inputs", "outputs", "options")},
        sort_keys=True,
    )
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def model_ops(G: nx.MultiDiGraph) -> Iterator[tuple[nx.MultiDiGraph, str, float]]:
    """(graph, op, times it runs per inference) for every op of the model, loops unrolled."""

    def walk(S: nx.MultiDiGraph, mult: float) -> Iterator[tuple[nx.MultiDiGraph, str, float]]:
        subs = G.graph.get("subgraphs", {})
        for n, op in ops_of(S):
            yield S, n, mult
            if op.kind == "WHILE":
                trips, _ = trip_count(S, n, root=G)
                yield from walk(subs[op.options["body_subgraph"]], mult * trips)
                yield from walk(subs[op.options["cond_subgraph"]], mult * (trips + 1))
            elif op.kind == "IF":
                branch = op.options.get("then_subgraph")
                if branch in subs:  # the first branch stands for the taken one
                    yield from walk(subs[branch], mult)

    yield from walk(G, 1.0)

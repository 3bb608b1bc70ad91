"""LiteRT is the numerical reference: run a graph in ai-edge-litert and compare outputs.

A rewrite (a fusion, an unfusing, a device lowering) preserves numerics when the original and
the rewritten graph, both written with :func:`tacopt.fusion.tflite.writer.serialize_tflite` and run
in LiteRT's interpreter on the same inputs, give the same outputs within the tolerance of their
dtype (:data:`TOLERANCES`, :func:`output_mismatches`).

Ops LiteRT has no kernel for are the custom kinds the fusion creates
(:data:`tacopt.fusion.ir.vocabulary.FUSION_ONLY_KINDS`); their numpy kernels live in
:mod:`tacopt.fusion.rules.custom`. :func:`run_graph` cuts a graph holding them into segments
that LiteRT runs, with the custom ops run by their kernels in between, and
:func:`check_fused_regions` checks each such kernel against the region of the original graph it
replaced, run in LiteRT.

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> G = make_graph("g", [Tensor("x", (3,), "float32"), Tensor("y", (3,), "float32")],
...                [Op("relu6_0", "RELU6", ("x",), ("y",))], ["x"], ["y"])
>>> run_graph(G, {"x": np.array([-1.0, 3.0, 9.0], np.float32)})["y"]
array([0., 3., 6.], dtype=float32)
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx
import numpy as np

from tacopt.errors import ExecutionError, TacoptError
from tacopt.fusion.ir import Op, Tensor, make_graph, numpy_dtype, ops_of
from tacopt.fusion.ir.inputs import random_inputs
from tacopt.fusion.rules.custom import kernel_for, kernel_kinds
from tacopt.fusion.tflite.writer import serialize_tflite

__all__ = [
    "TOLERANCES",
    "assert_same_outputs",
    "check_fused_regions",
    "output_mismatches",
    "random_inputs",
    "run_graph",
    "run_tflite",
]

#: Float dtype -> largest error allowed, relative to the largest magnitude of the reference
#: output (``max |got - want| <= rtol * max(max |want|, 1)``). LiteRT's XNNPack kernels sum in
#: blocked order, so a rewrite that folds constants changes the last bits; 1e-4 of float32 is
#: far above that and far below any real error. Quantized outputs may differ by
#: :data:`QUANTIZED_STEPS` steps (a folded requantization rounds once instead of twice);
#: integer and boolean outputs must be equal.
TOLERANCES = {"float32": 1e-4, "float16": 1e-2, "float64": 1e-9}
QUANTIZED_STEPS = 1


def run_tflite(
    data: bytes, feeds: Mapping[str, np.ndarray], *, where: str = "model"
) -> dict[str, np.ndarray]:
    """Outputs by tensor name of the .tflite ``data`` run in LiteRT (one thread, XNNPack);
    ``where`` names the model in errors.

    Raises
    ------
    ExecutionError
        If the interpreter rejects the model or an input is missing.
    """
    # Deferred: LiteRT (ai_edge_litert, ~0.3 s to import) only when a model is run.
    from ai_edge_litert.interpreter import Interpreter

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            it = Interpreter(model_content=data, num_threads=1)
        details = it.get_input_details()
        for d in details:
            value = _feed(feeds, d["name"])
            if tuple(d["shape"]) != value.shape:
                it.resize_tensor_input(d["index"], value.shape)
        it.allocate_tensors()
        for d in details:
            it.set_tensor(d["index"], np.asarray(_feed(feeds, d["name"]), d["dtype"]))
        it.invoke()
        return {d["name"]: it.get_tensor(d["index"]).copy() for d in it.get_output_details()}
    except (RuntimeError, ValueError) as e:
        detail = str(e).strip().splitlines()[0].split("INFO:")[0].strip()  # drop delegate chatter
        raise ExecutionError(f"{where}: LiteRT: {detail}") from None


def _feed(feeds: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    if name not in feeds:
        raise ExecutionError(f"no value for input '{name}'")
    return np.asarray(feeds[name])


def run_graph(G: nx.MultiDiGraph, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``G`` in LiteRT (custom fused ops by their numpy kernels); outputs by tensor name.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        A graph of :mod:`tacopt.fusion.ir` whose constants have data (``rehydrate`` first).
    feeds : mapping
        Tensor name -> array for every graph input, in the stored dtype.

    Raises
    ------
    ExecutionError
        An input is missing, LiteRT rejects the model, or a custom op that LiteRT cannot run
        has no kernel or sits in a nested graph.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor(n, (2,), "float32") for n in "xy"],
    ...                [Op("s", "CUSTOM:Swish", ("x",), ("y",))], ["x"], ["y"])
    >>> run_graph(G, {"x": np.zeros(2, np.float32)})["y"]
    array([0., 0.], dtype=float32)
    """
    tensors: dict[str, Tensor] = G.graph["tensors"]
    feeds = {
        n: np.asarray(_feed(feeds, n), numpy_dtype(tensors[n].dtype)) for n in G.graph["inputs"]
    }
    custom = set(kernel_kinds())
    for g in G.graph.get("subgraphs", {}).values():
        for name, op in ops_of(g):
            if op.kind in custom:
                raise ExecutionError(f"op '{name}' ({op.kind}) in a nested graph: cannot run it")
    ops = [op for _, op in ops_of(G)]
    if not any(op.kind in custom for op in ops):
        return run_tflite(serialize_tflite(G), feeds, where=f"graph '{G.graph.get('name')}'")
    env = dict(feeds)
    start = 0  # first op of the current LiteRT segment
    for i, op in enumerate(ops):
        if op.kind in custom:
            if start < i:
                env.update(_run_segment(G, ops[start:i], env, ops[i:]))
            env[op.outputs[0]] = _run_kernel(G, op, env)
            start = i + 1
    if start < len(ops):
        env.update(_run_segment(G, ops[start:], env, []))
    return {t: env[t] if t in env else tensors[t].data() for t in G.graph["outputs"]}


def _run_segment(
    G: nx.MultiDiGraph, ops: list[Op], env: Mapping[str, np.ndarray], later: Sequence[Op]
) -> dict[str, np.ndarray]:
    """Run ``ops`` as a model of their own: inputs from ``env``, outputs read later or by G."""
    tensors: dict[str, Tensor] = G.graph["tensors"]
    produced = {t for op in ops for t in op.outputs}
    used = [t for op in ops for t in op.inputs if t is not None and t not in produced]
    inputs = [t for t in dict.fromkeys(used) if t in env]
    read_later = {t for op in later for t in op.inputs if t is not None}
    outputs = [
        t
        for op in ops
        for t in op.outputs
        if t in read_later or t in G.graph["outputs"]
    ]
    names = {t for op in ops for t in (*op.inputs, *op.outputs, *op.intermediates) if t}
    seg = make_graph(
        f"{G.graph.get('name', 'main')}_segment",
        [tensors[t] for t in sorted(names)],
        ops,
        inputs,
        outputs,
        subgraphs=G.graph.get("subgraphs", {}),
    )
    where = f"graph '{G.graph.get('name')}', ops '{ops[0].name}'..'{ops[-1].name}'"
    return run_tflite(serialize_tflite(seg), {t: env[t] for t in inputs}, where=where)


def _run_kernel(G: nx.MultiDiGraph, op: Op, env: Mapping[str, np.ndarray]) -> np.ndarray:
    tensors: dict[str, Tensor] = G.graph["tensors"]
    values: list[np.ndarray | None] = []
    for t in op.inputs:
        if t is None:
            values.append(None)
        elif tensors[t].is_quantized:
            raise ExecutionError(f"op '{op.name}' ({op.kind}): quantized input '{t}'")
        else:
            values.append(env[t] if t in env else _constant(tensors[t], op))
    out = tensors[op.outputs[0]]
    return np.asarray(kernel_for(op.kind)(op, values), numpy_dtype(out.dtype)).reshape(out.shape)


def _constant(t: Tensor, op: Op) -> np.ndarray:
    try:
        return np.asarray(t.data())
    except TacoptError as e:
        raise ExecutionError(f"op '{op.name}' ({op.kind}): input '{t.name}': {e}") from None


def output_mismatches(
    want: Mapping[str, np.ndarray],
    got: Mapping[str, np.ndarray],
    tensors: Mapping[str, Tensor],
    *,
    tolerances: Mapping[str, float] = TOLERANCES,
    steps: int = QUANTIZED_STEPS,
) -> list[str]:
    """One line per output of ``want`` that ``got`` misses or differs on beyond its dtype's
    tolerance (see :data:`TOLERANCES`); empty when they agree.

    Examples
    --------
    >>> from tacopt.fusion.ir import Tensor
    >>> ts = {"y": Tensor("y", (2,), "float32")}
    >>> output_mismatches({"y": np.ones(2)}, {"y": np.ones(2) + 1e-6}, ts)
    []
    >>> output_mismatches({"y": np.ones(2)}, {"y": np.ones(2) * 1.1}, ts)
    ['y (float32): max error 0.1 > 0.0001']
    """
    out = []
    for name, w in want.items():
        t = tensors[name]
        if name not in got:
            out.append(f"{name}: missing")
            continue
        g = np.asarray(got[name])
        if g.shape != w.shape:
            out.append(f"{name}: shape {g.shape} != {w.shape}")
            continue
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        err = float(np.abs(g64 - w64).max(initial=0.0))
        if t.is_quantized:
            limit = float(steps)
        elif t.dtype in tolerances:
            limit = tolerances[t.dtype] * max(float(np.abs(w64).max(initial=0.0)), 1.0)
        else:
            limit = 0.0
        if not err <= limit:
            out.append(f"{name} ({t.dtype}): max error {err:.3g} > {limit:.3g}")
    return out


def assert_same_outputs(
    G: nx.MultiDiGraph,
    H: nx.MultiDiGraph,
    feeds: Mapping[str, np.ndarray] | None = None,
    *,
    seed: int = 1,
    **tolerance: Any,
) -> dict[str, np.ndarray]:
    """Run ``G`` and its rewrite ``H`` in LiteRT on the same inputs; raise if outputs differ.

    ``feeds`` defaults to :func:`random_inputs` of ``G`` with ``seed``; ``tolerance`` goes to
    :func:`output_mismatches`. Returns ``H``'s outputs.

    Raises
    ------
    ExecutionError
        Naming every output out of tolerance.

    Examples
    --------
    >>> from tacopt.fusion.ir.builder import GraphBuilder
    >>> from tacopt.fusion.fuse import fuse
    >>> b = GraphBuilder()
    >>> G = b.build(outputs=[b.op("RELU", b.op("ADD", b.input("x", (4,)), np.ones(4)))])
    >>> sorted(assert_same_outputs(G, fuse(G).graph))
    ['relu_1']
    """
    feeds = random_inputs(G, seed=seed) if feeds is None else feeds
    want, got = run_graph(G, feeds), run_graph(H, feeds)
    bad = output_mismatches(want, got, G.graph["tensors"], **tolerance)
    if bad:
        raise ExecutionError(f"graph '{G.graph.get('name')}' and its rewrite: " + "; ".join(bad))
    return got


def check_fused_regions(G: nx.MultiDiGraph, H: nx.MultiDiGraph, *, seed: int = 1) -> int:
    """Check every custom op of ``H`` (a fusion of ``G``) against the region of ``G`` it replaced.

    The region (the ops of ``G`` whose index is in the custom op's ``origin``) runs in LiteRT,
    the custom op by its numpy kernel, on the same random inputs; returns the number of
    regions checked.

    Raises
    ------
    ExecutionError
        Naming the fused op whose kernel is out of tolerance.

    Examples
    --------
    >>> from tacopt.fusion.ir.builder import GraphBuilder
    >>> from tacopt.fusion.fuse import fuse
    >>> b = GraphBuilder()
    >>> x = b.input("x", (2, 8))
    >>> G = b.build(outputs=[b.op("MUL", x, b.op("LOGISTIC", x))])
    >>> check_fused_regions(G, fuse(G).graph)
    1
    """
    custom = set(kernel_kinds())
    original = [(op.origin or (i,), op) for i, (_, op) in enumerate(ops_of(G))]
    tensors: dict[str, Tensor] = H.graph["tensors"]
    checked = 0
    for _, fused in ops_of(H):
        if fused.kind not in custom:
            continue
        region = [op for origin, op in original if set(origin) <= set(fused.origin)]
        produced = {t for op in region for t in op.outputs}
        inputs = [
            t
            for t in dict.fromkeys(t for op in region for t in op.inputs if t is not None)
            if t not in produced and not G.graph["tensors"][t].is_constant
        ]
        names = {t for op in region for t in (*op.inputs, *op.outputs) if t}
        R = make_graph(
            f"region_{fused.name}",
            [G.graph["tensors"][t] for t in sorted(names)],
            region,
            inputs,
            fused.outputs,
        )
        feeds = random_inputs(R, seed=seed)
        want = run_tflite(serialize_tflite(R), feeds, where=f"region of '{fused.name}'")
        got = {fused.outputs[0]: _run_kernel(H, fused, feeds)}
        bad = output_mismatches(want, got, tensors)
        if bad:
            raise ExecutionError(f"fused op '{fused.name}' ({fused.kind}): " + "; ".join(bad))
        checked += 1
    return checked

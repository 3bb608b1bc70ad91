"""Single-op graphs: an op cut out of its model with its constants filled, the features a learned
model sees, and the key that identifies its configuration; and the graph that is measured, the one
the partitioner prices (:func:`priced_graph`: fused, ops of constants folded)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.ops import inference_type, op_counts, trip_count
from tacopt.fusion.fuse import BUILTIN_ONLY_RULES, fuse
from tacopt.fusion.ir import DTYPE_NBYTES, Buffer, Op, Tensor, make_graph, ops_of
from tacopt.fusion.tflite.rehydrate import rehydrate
from tacopt.fusion.tflite.writer import serialize_tflite

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


#: Convolutions XNNPACK adds a zero PAD before them to (:func:`absorbed_reason`).
PAD_ABSORBERS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D"})


def absorbed_reason(S: nx.MultiDiGraph, node: str) -> str | None:
    """Why op ``node`` costs nothing per invoke inside its model under XNNPACK, or None: it is a
    view between ops XNNPACK runs (a RESHAPE, EXPAND_DIMS or SQUEEZE: :func:`_view_reason`), or
    a PAD of H and W alone (NHWC; TFLite's PAD fills with zero, or an int8 tensor's zero point)
    whose output only a VALID CONV_2D / DEPTHWISE_CONV_2D reads, and XNNPACK's subgraph fusion
    adds it to that convolution's padding. Measured (float and int8, 3x3 convolutions of stride
    1 and 2, and a depthwise one): PAD + VALID convolution took the time of the convolution on
    the padded input alone, PAD + SAME convolution the two ops' times. Alone, the PAD is
    measured like any op; a model that runs without XNNPACK pays it. (Fusion already makes a PAD
    of SAME's pads and a VALID convolution one SAME convolution: ``fold_pad``; PADV2 and
    MIRROR_PAD are left as they are.)

    >>> from tacopt.fusion.ir.builder import GraphBuilder
    >>> b = GraphBuilder("m")
    >>> x = b.input("x", (1, 8, 8, 3))
    >>> p = b.op("PAD", x, np.array([[0, 0], [0, 1], [0, 1], [0, 0]], np.int32))
    >>> y = b.op("CONV_2D", p, np.ones((4, 3, 3, 3)), np.zeros(4), padding="VALID")
    >>> print(absorbed_reason(b.build(outputs=[y]), "pad_0"))
    absorbed at run time: XNNPACK adds the PAD to the next CONV_2D's padding
    """
    op: Op = S.nodes[node]["op"]
    if op.kind in VIEW_KINDS:
        return _view_reason(S, node)
    if op.kind != "PAD" or len(op.inputs) < 2 or len(op.outputs) != 1:
        return None
    tensors = S.graph["tensors"]
    out, pads = op.outputs[0], tensors.get(op.inputs[1] or "")
    if out in S.graph["outputs"] or pads is None or not pads.is_constant:
        return None
    if pads.buffer is None or pads.buffer.is_placeholder or pads.num_elements != 8:
        return None
    p = np.asarray(pads.data()).reshape(4, 2)
    if p[0].any() or p[3].any():
        return None  # XNNPACK only adds padding of H and W to a convolution
    readers = [(n, d) for _, n, d in S.out_edges(node, data=True)]
    if len(readers) != 1 or any(n == node for n, _ in readers):
        return None
    consumer: Op = S.nodes[readers[0][0]]["op"]
    if consumer.kind not in PAD_ABSORBERS or consumer.options.get("padding") != "VALID":
        return None
    if [t for t in consumer.inputs if t == out] != [consumer.inputs[0]]:
        return None  # read as the activation, and only there
    return f"absorbed at run time: XNNPACK adds the PAD to the next {consumer.kind}'s padding"


#: Kinds that only relabel their input's shape: inside an XNNPACK partition a view, no copy.
VIEW_KINDS = frozenset({"RESHAPE", "EXPAND_DIMS", "SQUEEZE"})
#: Kinds XNNPACK takes in float and int8 that a view between them leaves inside one partition.
XNNPACK_KINDS = frozenset(
    "CONV_2D DEPTHWISE_CONV_2D FULLY_CONNECTED BATCH_MATMUL TRANSPOSE_CONV ADD SUB MUL DIV "
    "MAXIMUM MINIMUM SQUARED_DIFFERENCE LOGISTIC TANH HARD_SWISH RELU RELU6 RELU_N1_TO_1 ELU "
    "LEAKY_RELU PRELU GELU SQRT RSQRT SQUARE ABS NEG FLOOR CEIL ROUND SOFTMAX MEAN "
    "AVERAGE_POOL_2D MAX_POOL_2D RESIZE_BILINEAR CONCATENATION TRANSPOSE PAD SLICE "
    "STRIDED_SLICE DEPTH_TO_SPACE SPACE_TO_DEPTH SPLIT QUANTIZE DEQUANTIZE".split()
)


def _view_reason(S: nx.MultiDiGraph, node: str) -> str | None:
    """Why a RESHAPE / EXPAND_DIMS / SQUEEZE costs nothing inside its model under XNNPACK:
    its input is computed by an op XNNPACK runs (or by another view), every reader is one too,
    its new shape is constant, and it is no graph input or output, so XNNPACK keeps it inside
    the partition as a view. Measured on a 2-core Zen 5 (two 1x1 CONV_2Ds with the view
    between them, against the two alone; 2026-11-29, load 4.6): two RESHAPEs +0.5 / -0.2 /
    +0.5 us, an EXPAND_DIMS and a SQUEEZE +0.3 / -0.1 / -0.7 us, where a RESHAPE alone took
    2.0-3.6 us; a TRANSPOSE in the same place cost about its single-op latency (3.2-7.0 us)."""
    op: Op = S.nodes[node]["op"]
    tensors = S.graph["tensors"]
    if len(op.outputs) != 1 or op.outputs[0] in S.graph["outputs"]:
        return None
    if tensors[op.outputs[0]].dtype not in ("float32", "int8"):
        return None
    if any(t is not None and not tensors[t].is_constant for t in op.inputs[1:]):
        return None  # a shape computed at run time
    producers = [S.nodes[n]["op"].kind for n, _ in S.in_edges(node)]
    readers = [S.nodes[n]["op"].kind for _, n in S.out_edges(node)]
    if len(producers) != 1 or not readers or node in S.successors(node):
        return None
    if not all(k in XNNPACK_KINDS or k in VIEW_KINDS for k in (*producers, *readers)):
        return None
    return f"elided at run time: a {op.kind} between ops XNNPACK runs is a view in its partition"


def absorbed_ops(G: nx.MultiDiGraph) -> dict[str, float]:
    """Configuration key -> how many times per inference an op of that configuration is
    absorbed into its consumer (:func:`absorbed_reason`), over the whole model, loops unrolled."""
    out: dict[str, float] = {}
    for S, node, mult in model_ops(G):
        if absorbed_reason(S, node) is not None:
            key = op_key(op_features(S, node, root=G))
            out[key] = out.get(key, 0.0) + mult
    return out


#: Kinds LiteRT computes once, at init, when every input is constant (their output becomes a
#: persistent constant, which XNNPACK packs like a stored weight). Measured with ``python -m
#: tacopt.benchmarks check_folding`` (``y = x + op(constants)`` against ``y = x + constant``): under
#: XNNPACK and the builtin kernels alike these add nothing per invoke, while other ops of constants
#: (SELECT_V2, ADD, CAST, TRANSPOSE, ...; MUL and CONCATENATION under XNNPACK) run on every invoke,
#: so they are measured like any op.
FOLDED_KINDS = frozenset({"DEQUANTIZE", "DENSIFY", "RESHAPE"})


def folded_reason(S: nx.MultiDiGraph, node: str) -> str | None:
    """Why op ``node`` costs nothing per invoke, or None: it is of a kind the runtime folds
    (:data:`FOLDED_KINDS`) and every input is a constant, so it is computed once, at init
    (TFLite evaluates it in ``Prepare`` and keeps the output as a persistent constant; XNNPACK
    packs a DEQUANTIZE-d float16 or DENSIFY-d sparse weight into its kernels). Never an op
    whose output is an output of its graph.

    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> w = Tensor("w", (4, 2), "float16", buffer=Buffer.placeholder(16))
    >>> ts = [w, Tensor("wf", (4, 2), "float32"), Tensor("x", (1, 2), "float32"),
    ...       Tensor("y", (1, 4), "float32")]
    >>> G = make_graph("g", ts, [Op("dq", "DEQUANTIZE", ("w",), ("wf",)),
    ...     Op("fc", "FULLY_CONNECTED", ("x", "wf", None), ("y",))], ["x"], ["y"])
    >>> folded_reason(G, "dq"), folded_reason(G, "fc")
    ('folded at init: every input is constant (DEQUANTIZE float16 -> float32)', None)
    >>> sorted(constant_inputs(G, "fc"))  # the DEQUANTIZE's output: constant at run time
    ['wf']
    """
    op: Op = S.nodes[node]["op"]
    ins = [t for t in op.inputs if t is not None]
    if not _foldable_kind(op, S.graph["outputs"]) or not ins:
        return None
    if set(ins) <= constant_inputs(S, node):
        return _reason_text(op, S.graph["tensors"])
    return None


#: How many ops of constants deep a chain is followed (DENSIFY -> DEQUANTIZE is 2).
FOLD_DEPTH = 4


def constant_inputs(S: nx.MultiDiGraph, node: str) -> set[str]:
    """The input tensors of op ``node`` that are constant when the model runs: stored
    constants, and outputs of ops of constants (:func:`folded_reason`, folded at init), up to
    :data:`FOLD_DEPTH` ops deep."""
    tensors = S.graph["tensors"]
    graph_inputs = set(S.graph["inputs"])

    def const_tensor(n: str, t: str, depth: int) -> bool:
        if tensors[t].is_constant:
            return not tensors[t].is_variable
        if depth >= FOLD_DEPTH or t in graph_inputs:
            return False
        src = next((u for u, _, k in S.in_edges(n, keys=True) if k == t), None)
        if src is None:
            return False
        op: Op = S.nodes[src]["op"]
        ins = [x for x in op.inputs if x is not None]
        return (
            _foldable_kind(op, S.graph["outputs"])
            and bool(ins)
            and all(const_tensor(src, x, depth + 1) for x in ins)
        )

    op: Op = S.nodes[node]["op"]
    return {t for t in op.inputs if t is not None and const_tensor(node, t, 0)}


def _foldable_kind(op: Op, graph_outputs: Sequence[str]) -> bool:
    if op.kind not in FOLDED_KINDS:
        return False
    return not any(t in graph_outputs for t in op.outputs)


def _folded_reason(
    op: Op, tensors: Mapping[str, Tensor], graph_outputs: Sequence[str]
) -> str | None:
    ins = [t for t in op.inputs if t is not None]
    if not ins or not _foldable_kind(op, graph_outputs):
        return None
    if not all(tensors[t].is_constant and not tensors[t].is_variable for t in ins):
        return None
    return _reason_text(op, tensors)


def _reason_text(op: Op, tensors: Mapping[str, Tensor]) -> str:
    src = tensors[next(t for t in op.inputs if t is not None)]
    out = tensors[op.outputs[0]]
    what = f"{op.kind} {src.dtype} -> {out.dtype}"
    if src.sparsity is not None:
        what = f"{op.kind} sparse {src.dtype} -> dense {out.dtype}"
    return f"folded at init: every input is constant ({what})"


def fold_constants(
    G: nx.MultiDiGraph, *, root: nx.MultiDiGraph | None = None
) -> tuple[nx.MultiDiGraph, list[tuple[str, dict[str, Any], str]]]:
    """``G`` with every op of constants (:func:`folded_reason`) replaced by the constants it
    computes, in execution order (so chains of them fold too), nested graphs included.

    A folded output holds the op's real result when every input holds data (DEQUANTIZE in
    numpy, other kinds run once on LiteRT's builtin kernels), else a placeholder of its size
    (a structure-only model: :func:`fill_constants` fills it like any weight). So the op that
    reads it is cut, measured and featured with constant weights, as the runtime runs it.

    Returns
    -------
    (graph, folded)
        The new graph (``G`` itself when nothing folds) and, per folded op, ``(op name, its
        features before folding, reason)``.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> import numpy as np
    >>> w = Tensor("w", (4, 2), "float16", buffer=Buffer.from_bytes(np.ones((4, 2), "float16")))
    >>> ts = [w, Tensor("wf", (4, 2), "float32"), Tensor("x", (1, 2), "float32"),
    ...       Tensor("y", (1, 4), "float32")]
    >>> G = make_graph("g", ts, [Op("dq", "DEQUANTIZE", ("w",), ("wf",)),
    ...     Op("fc", "FULLY_CONNECTED", ("x", "wf", None), ("y",))], ["x"], ["y"])
    >>> H, folded = fold_constants(G)
    >>> list(H), [name for name, _, _ in folded], float(H.graph["tensors"]["wf"].data().sum())
    (['fc'], ['dq'], 8.0)
    """
    root = G if root is None else root
    subs = G.graph.get("subgraphs", {})
    folded: list[tuple[str, dict[str, Any], str]] = []
    new_subs = {}
    for name, S in subs.items():
        S2, f = _fold_one(S, _with_subs(S, subs))
        new_subs[name] = S2
        folded += f
    main, f = _fold_one(G, root)
    folded = f + folded
    if not folded:
        return G, []
    if main is G:
        main = G.copy()
    if subs:
        main.graph["subgraphs"] = new_subs
    return main, folded


def _with_subs(S: nx.MultiDiGraph, subs: Mapping[str, nx.MultiDiGraph]) -> nx.MultiDiGraph:
    if "subgraphs" in S.graph:
        return S
    view = S.copy()
    view.graph["subgraphs"] = dict(subs)
    return view


def _fold_one(
    S: nx.MultiDiGraph, root: nx.MultiDiGraph
) -> tuple[nx.MultiDiGraph, list[tuple[str, dict[str, Any], str]]]:
    tensors: dict[str, Tensor] = dict(S.graph["tensors"])
    kept: list[Op] = []
    folded: list[tuple[str, dict[str, Any], str]] = []
    for node, op in ops_of(S):
        reason = _folded_reason(op, tensors, S.graph["outputs"])
        if reason is None:
            kept.append(op)
            continue
        folded.append((node, op_features(_retensored(S, tensors), node, root=root), reason))
        for name, value in zip(op.outputs, _evaluate(op, tensors), strict=True):
            t = tensors[name]
            buf = (
                Buffer.placeholder(math.ceil(t.num_elements * DTYPE_NBYTES.get(t.dtype, 4)))
                if value is None
                else Buffer.from_bytes(np.ascontiguousarray(value, dtype=value.dtype))
            )
            tensors[name] = replace(t, buffer=buf, quantization=t.quantization)
    if not folded:
        return S, []
    H = make_graph(S.graph["name"], tensors.values(), kept, S.graph["inputs"], S.graph["outputs"])
    for k, v in S.graph.items():
        if k not in H.graph:
            H.graph[k] = v
    return H, folded


def _retensored(S: nx.MultiDiGraph, tensors: dict[str, Tensor]) -> nx.MultiDiGraph:
    """A shallow view of ``S`` whose tensor records are ``tensors`` (folded outputs constant)."""
    view = nx.MultiDiGraph(S)
    view.graph.update(S.graph)
    view.graph["tensors"] = tensors
    return view


def _evaluate(op: Op, tensors: Mapping[str, Tensor]) -> list[np.ndarray | None]:
    """The outputs of an op of constants (None each when an input's bytes were dropped, or
    when the runtime cannot run it alone)."""
    ins = [tensors[t] for t in op.inputs if t is not None]
    none: list[np.ndarray | None] = [None] * len(op.outputs)
    if any(t.buffer is None or t.buffer.is_placeholder for t in ins):
        return none
    out = tensors[op.outputs[0]]
    if op.kind == "DEQUANTIZE" and len(ins) == 1 and out.dtype == "float32":
        src = ins[0]
        x = np.asarray(src.data(), dtype=np.float32)
        q = src.quantization
        if q is not None and q.scale:
            scale, zero = np.asarray(q.scale, np.float32), np.asarray(q.zero_point, np.float32)
            if scale.size > 1:  # per channel, along the quantized dimension
                shape = [1] * x.ndim
                shape[int(q.axis)] = -1
                scale, zero = scale.reshape(shape), zero.reshape(shape)
            x = (x - zero) * scale
        return [x.astype(np.float32).reshape(out.shape)]
    try:
        # Deferred: LiteRT (ai_edge_litert, ~0.3 s to import) only when a constant op is folded
        # by running it.
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        names = list(dict.fromkeys([*(t for t in op.inputs if t is not None), *op.outputs]))
        alone = make_graph("fold", [tensors[t] for t in names], [op], [], op.outputs)
        interp = Interpreter(
            model_content=bytes(serialize_tflite(alone)),
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        interp.allocate_tensors()
        interp.invoke()
        details = interp.get_output_details()  # in the order of the graph's outputs
        return [np.array(interp.get_tensor(d["index"])) for d in details]
    except Exception:  # the runtime cannot run it alone: its output is filled like a weight
        return none


def priced_graph(
    G: nx.MultiDiGraph,
) -> tuple[nx.MultiDiGraph, list[tuple[str, dict[str, Any], str]], str | None]:
    """The graph the partitioner prices on the CPU: ``G`` with its ops of constants folded
    (:func:`fold_constants`: float16 weights behind a DEQUANTIZE, sparse ones behind a DENSIFY,
    ...), then fused with the rules whose fused ops are LiteRT builtins
    (:data:`~tacopt.fusion.fuse.BUILTIN_ONLY_RULES`; the CPU lowers the others back to these
    ops, ``partitioner.lowerings.unfuse_unrunnable``).

    Returns
    -------
    (graph, folded, note)
        The graph, the folded ops (:func:`fold_constants`) and None; or, when fusion refuses
        the model, the folded graph unfused and a note saying why.
    """
    H, folded = fold_constants(G)
    try:
        return fuse(H, rules=BUILTIN_ONLY_RULES).graph, folded, None
    except Exception as exc:  # a model fusion refuses is measured unfused
        return H, folded, f"not fused: {type(exc).__name__}: {str(exc)[:160]}"


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
    # constant when the model runs: stored, or computed at init from constants (a DEQUANTIZE of
    # float16 weights, a DENSIFY): the runtime packs such weights like stored ones
    folded = constant_inputs(G, node) - {t for t in op.inputs if t and tensors[t].is_constant}

    def desc(name: str | None) -> list[Any] | None:
        if name is None:
            return None
        t = tensors[name]
        const = t.is_constant or name in folded
        d: list[Any] = [list(t.shape), t.dtype, const, t.is_quantized]
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

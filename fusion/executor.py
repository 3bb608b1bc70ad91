"""A numpy reference executor for the graph IR: runs a model op by op, nested graphs included.

It exists to check transformations by execution (a fused and an unfused graph must give the
same outputs) and is itself checked against the real TFLite interpreter (ai-edge-litert) on
single-op models and on whole rehydrated zoo models (``benchmarks/check_executor.py``).

How it runs
-----------
Ops run in node order; every op looks up its kernel by ``Op.kind`` in one registry
(:func:`register_kernel`; custom ops register as ``"CUSTOM:<code>"``). A kernel receives an
:class:`~tacopt.fusion.kernels.common.OpCall` and returns its output arrays. The fused activation of
an op that has ``fused_activation_function`` is applied after its kernel by the executor (except
for the LSTMs and RNNs, where the option names the cell activation). Nested graphs (WHILE / IF /
CALL_ONCE bodies) run by name from ``G.graph["subgraphs"]``.

Quantized tensors
-----------------
Kernels compute in float32. Around a (non-``raw``) kernel the executor dequantizes every
quantized input (``real = scale * (q - zero_point)``, per tensor or per channel) and quantizes
every quantized output (``q = clamp(round_half_away(real / scale) + zero_point)``), which is what
TFLite's reference kernels compute up to the rounding of their fixed-point multipliers: one
quantization step per op at most (pure data movement, MAX_POOL, RELU and QUANTIZE of a float are
exact). CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED with int8 / uint8 input, weights and
output take an exact integer path instead (:mod:`tacopt.fusion.kernels.integer`: int32 accumulation,
TFLite's Q31 multiplier with single rounding), bit-equal to the builtin kernels. Hybrid
(dynamic-range) kernels quantize their float activations per row first, symmetrically as
TFLite's builtin kernels do (XNNPack quantizes rows asymmetrically: about 1 % apart).

Known gaps: full-integer (8x8->16) LSTMs are computed in float with h and c saturated at their
tensors' ranges, not in TFLite's fixed point, so they can be far off when they saturate. Float
CONCATENATION applies its fused activation (TFLite's builtin kernel rejects one; XNNPack ignores
it).

Measured (``benchmarks/check_executor.py``, all 48 zoo models rehydrated with seed 0): of
10,017 ops each run alone on the interpreter's own intermediates, 6,901 are bit-exact and all
but the 5 full-integer LSTMs are within their tolerance (float) or one step (quantized); whole
float models match to a relative error of at most 3e-6 (2.8e-5 for the dynamic-range LSTM,
where XNNPack quantizes rows asymmetrically), whole int8 models to at most 2 steps.
A 224x224 MobileNetV2 runs in about 22 ms (single-threaded OpenBLAS; a multi-threaded OpenBLAS
on a busy 2-core machine is 10-30x slower on the many small GEMMs).

Tolerances
----------
:func:`tolerance` gives the (rtol, atol) within which a float op's outputs match the
interpreter's, as used by ``numpy.allclose(ours, theirs, rtol, atol)``:

- ``(0, 0)``: data movement, shapes, comparisons, selects, max/min, ReLUs, casts, arg-max: no
  arithmetic that can round differently.
- ``(1e-6, 1e-6)``: one IEEE operation per element (ADD, MUL, DIV, NEG, SQUARED_DIFFERENCE...).
- ``(1e-5, 1e-5)``: transcendental functions (EXP, TANH, LOGISTIC, RSQRT, GELU, SOFTMAX...):
  TFLite and XNNPack use their own polynomial approximations, accurate to a few ulp.
- ``(1e-4, 1e-4)``: sums over many terms (CONV_2D, FULLY_CONNECTED, MEAN, pools...) and
  recurrences (LSTMs, WHILE): the interpreter adds in a different order (blocked GEMMs), and the
  error of a sum scales with its number of terms and the size of their magnitudes.

Quantized outputs match within one quantization step per op (``atol = scale``).

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> G = make_graph("g", [Tensor("x", (3,), "float32"), Tensor("y", (3,), "float32")],
...                [Op("relu6_0", "RELU6", ("x",), ("y",))], ["x"], ["y"])
>>> run_graph(G, {"x": np.array([-1.0, 3.0, 9.0], np.float32)})["y"]
array([0., 3., 6.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import networkx as nx
import numpy as np

from tacopt.fusion.errors import ExecutionError, TacoptError
from tacopt.fusion.ir import Tensor, numpy_dtype, ops_of
from tacopt.fusion.kernels import array, control, elementwise, nn
from tacopt.fusion.kernels.common import (
    Kernel,
    KernelSpec,
    OpCall,
    activate,
    dequantize,
    is_quantized,
    quantize,
)
from tacopt.fusion.kernels.integer import INTEGER_KERNELS
from tacopt.fusion.registry import Registry

__all__ = [
    "OpCall",
    "dequantize",
    "quantize",
    "random_inputs",
    "register_kernel",
    "run_graph",
    "run_op",
    "supported_kinds",
    "tolerance",
]

# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------

_KERNELS: Registry[KernelSpec] = Registry("kernel", ExecutionError)

EXACT = (0.0, 0.0)
ONE_OP = (1e-6, 1e-6)
TRANSCENDENTAL = (1e-5, 1e-5)
ACCUMULATING = (1e-4, 1e-4)

_TOLERANCE_CLASSES: dict[tuple[float, float], list[str]] = {
    ONE_OP: (
        "ADD SUB MUL DIV NEG ABS SQUARE SQUARED_DIFFERENCE FLOOR_DIV FLOOR_MOD ADD_N "
        "HARD_SWISH LEAKY_RELU PRELU DEQUANTIZE RESIZE_BILINEAR ELU ROUND FLOOR CEIL"
    ).split(),
    TRANSCENDENTAL: (
        "EXP LOG SQRT RSQRT TANH LOGISTIC SIN COS POW GELU SOFTMAX LOG_SOFTMAX ATAN2 "
        "L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION"
    ).split(),
    ACCUMULATING: (
        "CONV_2D DEPTHWISE_CONV_2D TRANSPOSE_CONV FULLY_CONNECTED BATCH_MATMUL MEAN SUM "
        "REDUCE_PROD AVERAGE_POOL_2D L2_POOL_2D CUMSUM UNIDIRECTIONAL_SEQUENCE_LSTM "
        "BIDIRECTIONAL_SEQUENCE_LSTM LSTM RNN UNIDIRECTIONAL_SEQUENCE_RNN WHILE IF CALL_ONCE CALL "
        "STABLEHLO_COMPOSITE"
    ).split(),
}

#: Ops that run nested graphs.
_CONTROL_FLOW = frozenset({"WHILE", "IF", "CALL_ONCE", "CALL", "STABLEHLO_COMPOSITE"})

#: Ops whose ``fused_activation_function`` is internal to the kernel, not applied to the output.
_ACTIVATION_IS_INTERNAL = frozenset(
    {
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        "BIDIRECTIONAL_SEQUENCE_LSTM",
        "LSTM",
        "SVDF",
        "RNN",
        "UNIDIRECTIONAL_SEQUENCE_RNN",
    }
)


def register_kernel(
    kind: str,
    fn: Kernel,
    *,
    raw: bool = False,
    tolerance: tuple[float, float] = ACCUMULATING,
    replace: bool = False,
    integer: Kernel | None = None,
) -> None:
    """Register the kernel that runs ops of ``kind`` (``"CUSTOM:<code>"`` for custom ops).

    Parameters
    ----------
    kind : str
        Op kind as in ``Op.kind``.
    fn : callable
        ``fn(call: OpCall) -> ndarray | Sequence[ndarray]``, one array per output. It must not
        modify its inputs.
    raw : bool
        If False (default) quantized inputs arrive dequantized and the outputs are quantized
        into the output tensors by the executor; if True the kernel sees and returns stored values.
    tolerance : (rtol, atol)
        How closely the kernel matches the real op, reported by :func:`tolerance`.
    replace : bool
        Allow replacing an existing kernel (otherwise a duplicate raises).
    integer : callable, optional
        An exact integer kernel (raw: stored values in and out, fused activation included),
        used instead of ``fn`` when the op's input 0, input 1 and output 0 are all quantized
        int8 / uint8 tensors.

    Raises
    ------
    ExecutionError
        If ``kind`` already has a kernel and ``replace`` is False.

    Examples
    --------
    >>> register_kernel("CUSTOM:DOUBLE_EXAMPLE", lambda call: 2 * call.input(0))
    >>> "CUSTOM:DOUBLE_EXAMPLE" in supported_kinds()
    True
    """
    if kind in _KERNELS and not replace:
        raise ExecutionError(f"kernel for '{kind}' is already registered (pass replace=True)")
    _KERNELS.add(kind, KernelSpec(fn, raw, integer, tolerance), replace=True)


def supported_kinds() -> list[str]:
    """Sorted op kinds the executor can run.

    Examples
    --------
    >>> {"CONV_2D", "WHILE", "UNIDIRECTIONAL_SEQUENCE_LSTM"} <= set(supported_kinds())
    True
    """
    return list(_KERNELS.names())


def tolerance(kind: str) -> tuple[float, float]:
    """The (rtol, atol) within which float outputs of ``kind`` match TFLite (see module doc).

    Raises
    ------
    ExecutionError
        If ``kind`` has no kernel.

    Examples
    --------
    >>> tolerance("RESHAPE"), tolerance("CONV_2D")
    ((0.0, 0.0), (0.0001, 0.0001))
    """
    spec = _KERNELS.find(kind)
    if spec is None:
        raise ExecutionError(f"no kernel for op kind '{kind}'")
    return spec.tolerance


def _register_builtins() -> None:
    tol = {k: cls for cls, kinds in _TOLERANCE_CLASSES.items() for k in kinds}
    for module in (elementwise, array, nn, control):
        for kind, spec in sorted(module.KERNELS.items()):
            register_kernel(
                kind,
                spec.fn,
                raw=spec.raw,
                tolerance=tol.get(kind, EXACT),
                integer=INTEGER_KERNELS.get(kind),
            )


_register_builtins()

# --------------------------------------------------------------------------------------------
# quantization
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------------

_OPAQUE = frozenset({"resource", "variant", "string"})


class _Run:
    """What one :func:`run_graph` call shares across nested graphs: the root and mutable state."""

    __slots__ = ("root", "state", "constants", "plans")

    def __init__(self, root: nx.MultiDiGraph) -> None:
        self.root = root
        self.state: dict[str, Any] = {}
        self.constants: dict[tuple[int, str, bool], np.ndarray] = {}
        self.plans: dict[int, tuple[list[tuple[str, Any, KernelSpec]], dict[str, int]]] = {}

    def call_graph(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        subgraphs = self.root.graph.get("subgraphs", {})
        if name not in subgraphs:
            raise ExecutionError(f"subgraph '{name}' does not exist")
        return _run(subgraphs[name], list(args), self)


def _plan(G: nx.MultiDiGraph, run: _Run):
    """Ops with their kernels, and the index of the last op reading each tensor (to free it)."""
    key = id(G)
    if key not in run.plans:
        steps, last_use = [], {}
        for i, (name, op) in enumerate(ops_of(G)):
            spec = _KERNELS.find(op.kind)
            if spec is None:
                raise ExecutionError(
                    f"op '{name}' in graph '{G.graph.get('name')}': no kernel for kind "
                    f"'{op.kind}' (register one with register_kernel; known: "
                    f"{', '.join(supported_kinds())})"
                )
            steps.append((name, op, spec))
            for t in op.inputs:
                if t is not None:
                    last_use[t] = i
        for t in G.graph["outputs"]:
            last_use[t] = len(steps)
        run.plans[key] = (steps, last_use)
    return run.plans[key]


def _constant(G: nx.MultiDiGraph, t: Tensor, raw: bool, run: _Run, where: str) -> np.ndarray:
    key = (id(G), t.name, raw)
    if key not in run.constants:
        if t.buffer is not None:
            try:
                value = np.array(t.data())
            except TacoptError as e:
                raise ExecutionError(f"{where}: tensor '{t.name}': {e}") from None
        elif t.is_variable:
            value = np.zeros([max(d, 1) for d in t.shape], numpy_dtype(t.dtype))
        else:
            raise ExecutionError(f"{where}: tensor '{t.name}' has no value")
        if not raw and is_quantized(t):
            value = dequantize(value, t)
        run.constants[key] = value
    return run.constants[key]


def _store(y: Any, t: Tensor, raw: bool) -> np.ndarray:
    y = np.asarray(y)
    if raw or t.dtype in _OPAQUE:
        return y
    if is_quantized(t):
        return quantize(y, t)
    return y.astype(numpy_dtype(t.dtype), copy=False)


def _execute(
    G: nx.MultiDiGraph, op: Any, spec: KernelSpec, env: Mapping[str, np.ndarray], run: _Run
) -> dict[str, np.ndarray]:
    """Run one op on the values in ``env`` (stored form); return its outputs in stored form."""
    tensors: dict[str, Tensor] = G.graph["tensors"]
    where = f"op '{op.name}' ({op.kind})"
    fn, raw = spec.fn, spec.raw
    if spec.integer is not None and _is_integer_op(op, tensors):
        fn, raw = spec.integer, True
    values: list[np.ndarray | None] = []
    for t in op.inputs:
        if t is None:
            values.append(None)
            continue
        rec = tensors[t]
        if t in env:
            v = env[t]
            if not raw and is_quantized(rec):
                v = dequantize(v, rec)
        else:
            v = _constant(G, rec, raw, run, where)
        values.append(v)
    call = OpCall(
        op=op,
        inputs=tuple(values),
        input_tensors=tuple(None if t is None else tensors[t] for t in op.inputs),
        output_tensors=tuple(tensors[t] for t in op.outputs),
        call_graph=run.call_graph,
        state=run.state,
    )
    try:
        result = fn(call)
    except TacoptError:
        raise
    except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError) as e:
        raise ExecutionError(f"{where}: {type(e).__name__}: {e}") from e
    outs = [result] if isinstance(result, (np.ndarray, np.generic)) else list(result)
    if len(outs) != len(op.outputs):
        raise ExecutionError(f"{where}: kernel gave {len(outs)} outputs, op has {len(op.outputs)}")
    act = op.options.get("fused_activation_function")
    if act not in (None, "NONE") and not raw and op.kind not in _ACTIVATION_IS_INTERNAL:
        outs[0] = activate(np.asarray(outs[0]), act, where)
    stored = {}
    for t, y in zip(op.outputs, outs):
        stored[t] = _store(y, tensors[t], raw)
        if op.kind not in _CONTROL_FLOW:  # loops may legitimately reshape carried values
            _check_shape(stored[t], tensors[t], where)
    return stored


def _is_integer_op(op: Any, tensors: Mapping[str, Tensor]) -> bool:
    """Input 0, input 1 and output 0 are quantized int8 / uint8 tensors."""
    names = [*op.inputs[:2], *op.outputs[:1]]
    return len(names) == 3 and all(
        t is not None and tensors[t].dtype in ("int8", "uint8") and is_quantized(tensors[t])
        for t in names
    )


def _run(G: nx.MultiDiGraph, args: list[np.ndarray], run: _Run) -> list[np.ndarray]:
    env: dict[str, np.ndarray] = dict(zip(G.graph["inputs"], args))
    steps, last_use = _plan(G, run)
    for i, (_, op, spec) in enumerate(steps):
        env.update(_execute(G, op, spec, env, run))
        for t in op.inputs:
            if t is not None and last_use.get(t) == i:
                env.pop(t, None)  # free activations as soon as their last reader has run
    where = f"graph '{G.graph.get('name')}'"
    tensors = G.graph["tensors"]
    return [
        env[t] if t in env else _constant(G, tensors[t], True, run, where)
        for t in G.graph["outputs"]
    ]


def _check_shape(y: np.ndarray, t: Tensor, where: str) -> None:
    if t.dtype in _OPAQUE or (t.shape_signature and -1 in t.shape_signature):
        return
    if tuple(y.shape) != tuple(t.shape) and 0 not in t.shape:
        raise ExecutionError(f"{where}: output '{t.name}' has shape {y.shape}, expected {t.shape}")


def run_graph(G: nx.MultiDiGraph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``G`` on ``inputs`` and return its outputs by tensor name.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        A graph of :mod:`tacopt.fusion.ir` (the main graph; nested graphs come from
        ``G.graph["subgraphs"]``). Dropped constants must be filled first (``rehydrate``).
    inputs : mapping
        Tensor name -> array for every graph input, in the stored dtype (quantized inputs as
        integers). Values are converted to the tensor's dtype.

    Returns
    -------
    dict
        Output tensor name -> array, in the order of ``G.graph["outputs"]``.

    Raises
    ------
    ExecutionError
        An input is missing, an op kind has no kernel, a constant was dropped, or a kernel
        cannot run on the values it got.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor(n, (2,), "float32") for n in "abc"],
    ...                [Op("add_0", "ADD", ("a", "b"), ("c",))], ["a", "b"], ["c"])
    >>> run_graph(G, {"a": np.ones(2), "b": np.arange(2)})["c"]
    array([1., 2.], dtype=float32)
    """
    tensors = G.graph["tensors"]
    args = []
    for name in G.graph["inputs"]:
        if name not in inputs:
            raise ExecutionError(f"graph '{G.graph.get('name')}': no value for input '{name}'")
        args.append(np.asarray(inputs[name], dtype=numpy_dtype(tensors[name].dtype)))
    outs = _run(G, args, _Run(G))
    return dict(zip(G.graph["outputs"], outs))


def run_op(
    G: nx.MultiDiGraph,
    name: str,
    values: Mapping[str, np.ndarray],
    *,
    root: nx.MultiDiGraph | None = None,
) -> dict[str, np.ndarray]:
    """Run the single op ``name`` of ``G`` on given input values; return its outputs by name.

    Used to check ops one at a time inside a whole model (feed the interpreter's intermediate
    tensors, compare the op's outputs). Constant inputs come from ``G``; ``root`` is the main
    graph when ``G`` is a nested one (for ops that call subgraphs).

    Raises
    ------
    ExecutionError
        If an activation input is not in ``values`` or the op cannot run.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor("x", (2,), "float32"), Tensor("y", (2,), "float32")],
    ...                [Op("neg_0", "NEG", ("x",), ("y",))], ["x"], ["y"])
    >>> run_op(G, "neg_0", {"x": np.array([1.0, -2.0], np.float32)})["y"]
    array([-1.,  2.], dtype=float32)
    """
    op = G.nodes[name]["op"]
    spec = _KERNELS.find(op.kind)
    if spec is None:
        raise ExecutionError(f"op '{name}': no kernel for kind '{op.kind}'")
    tensors = G.graph["tensors"]
    for t in op.inputs:
        if t is not None and t not in values and not tensors[t].is_constant:
            if not tensors[t].is_variable:
                raise ExecutionError(f"op '{name}' ({op.kind}): no value for input '{t}'")
    env = {
        t: np.asarray(v, dtype=numpy_dtype(tensors[t].dtype))
        for t, v in values.items()
        if t in tensors
    }
    return _execute(G, op, spec, env, _Run(G if root is None else root))


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------

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
        elif is_quantized(t):
            info = np.iinfo(dtype)
            out[name] = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
        elif np.issubdtype(dtype, np.integer):
            high = _index_bound(G, name) or 10
            out[name] = rng.integers(0, high, shape).astype(dtype)
        else:
            raise ExecutionError(f"graph input '{name}': cannot make random {t.dtype} values")
    return out

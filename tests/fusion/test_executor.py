"""The reference executor against the real TFLite interpreter (ai-edge-litert).

Single-op models are built with :class:`tacopt.fusion.builder.GraphBuilder`, written with
:func:`tacopt.fusion.writer.serialize_tflite`, and run by both; outputs must agree within
:func:`tacopt.fusion.executor.tolerance` (float) or one quantization step (quantized). Whole models:
the bundled ones (always) and a few shared-zoo ones, rehydrated. The full zoo is surveyed by
``benchmarks/check_executor.py``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tacopt.fusion.builder import GraphBuilder
from tacopt.fusion.errors import ExecutionError
from tacopt.fusion.executor import (
    random_inputs,
    register_kernel,
    run_graph,
    run_op,
    supported_kinds,
    tolerance,
)
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph, ops_of, validate_graph
from tacopt.fusion.reader import read_tflite
from tacopt.fusion.rehydrate import rehydrate
from tacopt.fusion.writer import serialize_tflite

RNG = np.random.default_rng(0)


def _w(*shape: int, scale: float = 0.5) -> np.ndarray:
    return RNG.normal(0, scale, shape).astype(np.float32)


def interpret(
    data: bytes, feeds: dict[str, np.ndarray], *, builtin_only: bool = False
) -> dict[str, np.ndarray]:
    """Outputs of the real interpreter by tensor name (XNNPack delegate unless builtin_only)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = (
        OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if builtin_only else OpResolverType.AUTO
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = Interpreter(model_content=data, num_threads=1, experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], feeds[d["name"]])
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}


#: The builder writes version 1; these kinds need a later version in the interpreter.
MIN_VERSIONS = {"BROADCAST_TO": 2}


def with_versions(G):
    """``G`` with op versions raised to what the interpreter registers for the kind."""
    for name, op in list(ops_of(G)):
        if op.version < MIN_VERSIONS.get(op.kind, 1):
            G.nodes[name]["op"] = dataclasses.replace(op, version=MIN_VERSIONS[op.kind])
    return G


def assert_matches_tflite(
    G, feeds: dict[str, np.ndarray] | None = None, *, steps: int = 1, builtin_only: bool = False
):
    """Run ``G`` in both; float outputs within the tolerance of its (last) op, ints within steps."""
    G = with_versions(G)
    validate_graph(G)
    feeds = random_inputs(G, seed=1) if feeds is None else feeds
    ours = run_graph(G, feeds)
    theirs = interpret(serialize_tflite(G), feeds, builtin_only=builtin_only)
    kinds = [op.kind for _, op in ops_of(G)]
    rtol, atol = max(tolerance(k) for k in kinds)
    for name, want in theirs.items():
        got = ours[name]
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        t = G.graph["tensors"][name]
        if t.is_quantized and t.dtype in ("int8", "uint8", "int16"):
            diff = np.abs(got.astype(np.int64) - want.astype(np.int64)).max(initial=0)
            assert diff <= steps, f"{name}: {diff} quantization steps off"
        elif np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)
    return ours


# --------------------------------------------------------------------------------------------
# single float ops: each case builds a one-op (or two-op) graph
# --------------------------------------------------------------------------------------------


def unary(kind: str, low: float = -3, high: float = 3, **opts) -> Callable[[], tuple]:
    def build():
        b = GraphBuilder(kind.lower())
        x = b.input("x", (2, 5, 7))
        G = b.build([b.op(kind, x, **opts)])
        feeds = {"x": RNG.uniform(low, high, (2, 5, 7)).astype(np.float32)}
        return G, feeds

    return build


def binary(kind: str, positive: bool = False, **opts) -> Callable[[], tuple]:
    def build():
        b = GraphBuilder(kind.lower())
        x, y = b.input("x", (2, 3, 4)), b.input("y", (3, 1))
        G = b.build([b.op(kind, x, y, **opts)])
        lo = 0.5 if positive else -2
        feeds = {
            "x": RNG.uniform(lo, 2, (2, 3, 4)).astype(np.float32),
            "y": RNG.uniform(lo, 2, (3, 1)).astype(np.float32),
        }
        return G, feeds

    return build


def single(kind: str, *inputs, shape=None, dtype=None, n_outputs=None, **opts):
    """A one-op graph; each input is a shape tuple (a float graph input, or ``("int32",
    shape)`` for an integer one), an array (a constant) or None (an omitted input)."""

    def build():
        b = GraphBuilder(kind.lower())
        names = []
        for i, x in enumerate(inputs):
            if isinstance(x, tuple) and x and x[0] == "int32":
                names.append(b.input(f"x{i}", x[1], "int32"))
            elif isinstance(x, tuple):
                names.append(b.input(f"x{i}", x))
            else:
                names.append(x)
        extra = {"shape": shape, "dtype": dtype, "n_outputs": n_outputs}
        out = b.op(kind, *names, **{k: v for k, v in extra.items() if v is not None}, **opts)
        return b.build(list(out) if isinstance(out, tuple) else [out]), None

    return build


def i32(*values) -> np.ndarray:
    return np.array(values, dtype=np.int32)


PADS = np.array([[1, 2], [2, 1]], np.int32)


FLOAT_CASES: dict[str, Callable[[], tuple]] = {
    **{k: unary(k) for k in ["NEG", "ABS", "TANH", "LOGISTIC", "HARD_SWISH", "RELU", "RELU6"]},
    **{k: unary(k) for k in ["RELU_N1_TO_1", "RELU_0_TO_1", "ELU", "SQUARE", "SIN", "COS"]},
    **{k: unary(k) for k in ["FLOOR", "CEIL", "ROUND", "EXP"]},
    **{k: unary(k, 0.1, 4) for k in ["RSQRT", "SQRT", "LOG"]},
    "GELU_tanh": unary("GELU", approximate=True),
    "GELU_erf": unary("GELU", approximate=False),
    "LEAKY_RELU": unary("LEAKY_RELU", alpha=0.3),
    "SOFTMAX": unary("SOFTMAX", beta=0.7),
    "LOG_SOFTMAX": unary("LOG_SOFTMAX"),
    "L2_NORMALIZATION": unary("L2_NORMALIZATION"),
    **{k: binary(k) for k in ["SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"]},
    **{k: binary(k) for k in ["LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "NOT_EQUAL"]},
    "ADD_relu": binary("ADD", fused_activation_function="RELU"),
    "MUL_relu6": binary("MUL", fused_activation_function="RELU6"),
    "DIV": binary("DIV", positive=True),
    "POW": binary("POW", positive=True),
    "FLOOR_DIV": binary("FLOOR_DIV", positive=True),
    "FLOOR_MOD": binary("FLOOR_MOD", positive=True),
    "PRELU": single("PRELU", (1, 4, 4, 3), _w(1, 1, 3), shape=(1, 4, 4, 3)),
    "CONV_2D_same_s2_relu6": single(
        "CONV_2D",
        (1, 9, 11, 3),
        _w(8, 3, 3, 3),
        _w(8),
        stride_h=2,
        stride_w=2,
        fused_activation_function="RELU6",
    ),
    "CONV_2D_valid_dilated": single(
        "CONV_2D",
        (2, 10, 10, 4),
        _w(5, 3, 2, 4),
        _w(5),
        padding="VALID",
        dilation_h_factor=2,
        dilation_w_factor=3,
    ),
    "CONV_2D_grouped": single("CONV_2D", (1, 6, 6, 8), _w(4, 3, 3, 4), _w(4), shape=(1, 6, 6, 4)),
    "CONV_2D_1x1": single("CONV_2D", (1, 5, 5, 16), _w(8, 1, 1, 16), _w(8)),
    "DEPTHWISE_CONV_2D_mult2": single(
        "DEPTHWISE_CONV_2D",
        (1, 9, 9, 3),
        _w(1, 3, 3, 6),
        _w(6),
        depth_multiplier=2,
        stride_h=2,
        stride_w=2,
        fused_activation_function="RELU",
    ),
    "DEPTHWISE_CONV_2D_valid": single(
        "DEPTHWISE_CONV_2D",
        (1, 8, 8, 4),
        _w(1, 5, 5, 4),
        _w(4),
        padding="VALID",
        depth_multiplier=1,
    ),
    "TRANSPOSE_CONV_same": single(
        "TRANSPOSE_CONV",
        i32(1, 10, 12, 5),
        _w(5, 3, 3, 4),
        (1, 5, 6, 4),
        _w(5),
        padding="SAME",
        stride_h=2,
        stride_w=2,
    ),
    "TRANSPOSE_CONV_valid": single(
        "TRANSPOSE_CONV",
        i32(1, 11, 9, 2),
        _w(2, 3, 3, 4),
        (1, 5, 4, 4),
        padding="VALID",
        stride_h=2,
        stride_w=2,
    ),
    "FULLY_CONNECTED": single(
        "FULLY_CONNECTED", (2, 3, 16), _w(10, 16), _w(10), fused_activation_function="RELU"
    ),
    "FULLY_CONNECTED_keep_dims": single(
        "FULLY_CONNECTED", (2, 3, 16), _w(10, 16), None, keep_num_dims=True
    ),
    "BATCH_MATMUL": single("BATCH_MATMUL", (2, 3, 4), (1, 4, 5)),
    "BATCH_MATMUL_adj": single("BATCH_MATMUL", (2, 4, 3), (2, 5, 4), adj_x=True, adj_y=True),
    "AVERAGE_POOL_2D_same": single(
        "AVERAGE_POOL_2D",
        (1, 7, 9, 3),
        filter_height=3,
        filter_width=3,
        stride_h=2,
        stride_w=2,
        padding="SAME",
    ),
    "MAX_POOL_2D_valid": single(
        "MAX_POOL_2D",
        (1, 8, 8, 3),
        filter_height=2,
        filter_width=3,
        stride_h=2,
        stride_w=1,
        padding="VALID",
    ),
    "RESHAPE": single("RESHAPE", (2, 3, 4), i32(4, -1)),
    "TRANSPOSE": single("TRANSPOSE", (2, 3, 4), i32(2, 0, 1)),
    "SQUEEZE": single("SQUEEZE", (1, 3, 1, 4), squeeze_dims=[2], shape=(1, 3, 4)),
    "EXPAND_DIMS": single("EXPAND_DIMS", (3, 4), i32(-1), shape=(3, 4, 1)),
    # (TFLite's builtin kernel rejects a fused activation on float CONCATENATION.)
    "CONCATENATION": single("CONCATENATION", (2, 3), (2, 5), (2, 1), axis=-1),
    "PACK": single("PACK", (2, 3), (2, 3), axis=1, values_count=2, shape=(2, 2, 3)),
    "UNPACK": single("UNPACK", (3, 2, 4), axis=1, num=2, n_outputs=2, shape=(3, 4)),
    "SPLIT": single("SPLIT", i32(1), (2, 6), num_splits=3),
    "SPLIT_V": single(
        "SPLIT_V",
        (2, 9),
        i32(2, -1, 3),
        i32(1),
        num_splits=3,
        shape=[(2, 2), (2, 4), (2, 3)],
    ),
    "SLICE": single("SLICE", (4, 5, 6), i32(1, 0, 2), i32(2, -1, 3), shape=(2, 5, 3)),
    "STRIDED_SLICE_masks": single(
        "STRIDED_SLICE",
        (4, 6, 8),
        i32(1, 0, 6),
        i32(3, 5, 1),
        i32(1, 2, -2),
        begin_mask=2,
        end_mask=1,
        shape=(3, 3, 3),
    ),
    "STRIDED_SLICE_shrink_newaxis": single(
        "STRIDED_SLICE",
        (4, 6, 8),
        i32(2, 0, 0, 1),
        i32(3, 0, 0, 7),
        i32(1, 1, 1, 2),
        shrink_axis_mask=1,
        new_axis_mask=2,
        begin_mask=4,
        end_mask=4,
        shape=(1, 6, 3),
    ),
    "STRIDED_SLICE_ellipsis": single(
        "STRIDED_SLICE",
        (2, 3, 4, 5),
        i32(0, 1),
        i32(0, 4),
        i32(1, 1),
        ellipsis_mask=1,
        shape=(2, 3, 4, 3),
    ),
    "STRIDED_SLICE_offset": single(
        "STRIDED_SLICE",
        (6, 4),
        i32(1, 0),
        i32(3, 4),
        i32(1, 2),
        offset=True,
        shape=(3, 2),
    ),
    "PAD": single("PAD", (2, 3), np.array([[1, 0], [2, 1]], np.int32)),
    "PADV2": single("PADV2", (2, 3), np.array([[0, 1], [1, 1]], np.int32), (), shape=(3, 5)),
    "MIRROR_PAD_reflect": single("MIRROR_PAD", (3, 4), PADS, mode="REFLECT", shape=(6, 7)),
    "MIRROR_PAD_symmetric": single("MIRROR_PAD", (3, 4), PADS, mode="SYMMETRIC", shape=(6, 7)),
    "TILE": single("TILE", (2, 3), i32(2, 3), shape=(4, 9)),
    "BROADCAST_TO": single("BROADCAST_TO", (3, 1), i32(2, 3, 4), shape=(2, 3, 4)),
    "GATHER_axis1": single("GATHER", (3, 5, 2), i32(4, 0, 4, 1), axis=1),
    "GATHER_batch_dims": single(
        "GATHER",
        (2, 5, 3),
        np.array([[1, 4], [0, 0]], np.int32),
        axis=1,
        batch_dims=1,
        shape=(2, 2, 3),
    ),
    "GATHER_ND": single("GATHER_ND", (4, 5, 3), np.array([[1, 2], [3, 0]], np.int32), shape=(2, 3)),
    "EMBEDDING_LOOKUP": single("EMBEDDING_LOOKUP", ("int32", (4,)), _w(10, 6)),
    "REVERSE_V2": single("REVERSE_V2", (2, 3, 4), i32(1), shape=(2, 3, 4)),
    "ARG_MAX": single("ARG_MAX", (3, 7), i32(1), output_type="INT32", shape=(3,), dtype="int32"),
    "ARG_MIN": single("ARG_MIN", (3, 7), i32(0), output_type="INT32", shape=(7,), dtype="int32"),
    "MEAN_keep": single("MEAN", (2, 5, 6, 3), i32(1, 2), keep_dims=True),
    "SUM": single("SUM", (2, 5, 3), i32(-1), keep_dims=False),
    "REDUCE_MAX": single("REDUCE_MAX", (2, 5, 3), i32(0, 2), keep_dims=False),
    "REDUCE_MIN": single("REDUCE_MIN", (2, 5, 3), i32(1), keep_dims=True),
    "REDUCE_PROD": single("REDUCE_PROD", (2, 4, 3), i32(1), keep_dims=False),
    "RESIZE_BILINEAR_half_pixel": single(
        "RESIZE_BILINEAR",
        (1, 4, 5, 2),
        i32(7, 9),
        half_pixel_centers=True,
        shape=(1, 7, 9, 2),
    ),
    "RESIZE_BILINEAR_align": single(
        "RESIZE_BILINEAR", (1, 4, 5, 2), i32(7, 9), align_corners=True, shape=(1, 7, 9, 2)
    ),
    "RESIZE_NEAREST_half_pixel": single(
        "RESIZE_NEAREST_NEIGHBOR",
        (1, 4, 5, 2),
        i32(8, 3),
        half_pixel_centers=True,
        shape=(1, 8, 3, 2),
    ),
    "RESIZE_NEAREST_align": single(
        "RESIZE_NEAREST_NEIGHBOR",
        (1, 4, 5, 2),
        i32(7, 9),
        align_corners=True,
        shape=(1, 7, 9, 2),
    ),
    "DEPTH_TO_SPACE": single("DEPTH_TO_SPACE", (1, 2, 3, 8), block_size=2, shape=(1, 4, 6, 2)),
    "SPACE_TO_DEPTH": single("SPACE_TO_DEPTH", (1, 4, 6, 2), block_size=2, shape=(1, 2, 3, 8)),
    "ZEROS_LIKE": single("ZEROS_LIKE", (2, 3), shape=(2, 3)),
    "SHAPE": single("SHAPE", (2, 3, 5), out_type="INT32", shape=(3,), dtype="int32"),
    "CAST": single("CAST", (2, 6), dtype="int32", in_data_type="FLOAT32", out_data_type="INT32"),
    "FILL": single("FILL", i32(2, 3), (), shape=(2, 3), dtype="float32"),
}


@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_float_op_matches_tflite(case: str) -> None:
    G, feeds = FLOAT_CASES[case]()
    assert_matches_tflite(G, feeds)


@st.composite
def strided_slices(draw):
    """A random rank-1..4 input and STRIDED_SLICE spec: begin / end masks, shrinks, negative
    strides, out-of-range bounds, offset. (Ellipsis and new-axis masks are covered by the cases
    above: random combinations of them can crash the interpreter itself.)"""
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    n = draw(st.integers(1, rank))
    begin = [draw(st.integers(-shape[i], shape[i])) for i in range(n)]
    end = [draw(st.integers(-shape[i] - 1, shape[i] + 1)) for i in range(n)]
    strides = draw(st.lists(st.sampled_from([-2, -1, 1, 2, 3]), min_size=n, max_size=n))
    bits = st.integers(0, 2**n - 1)
    masks = {k: draw(bits) for k in ("begin_mask", "end_mask", "shrink_axis_mask")}
    for i in range(n):  # a shrunk axis takes one valid index, stride 1
        if masks["shrink_axis_mask"] >> i & 1:
            begin[i] = draw(st.integers(-shape[i], shape[i] - 1))
            strides[i] = 1  # (TFLite reads uninitialised memory for a negative-stride shrink)
            masks["begin_mask"] &= ~(1 << i)
    masks["offset"] = n == rank and draw(st.booleans())
    if masks["offset"]:  # TFLite does not clamp offset slices: keep them inside the input
        for i in range(n):
            begin[i] = draw(st.integers(0, shape[i] - 1))
            end[i] = draw(st.integers(0, shape[i] - begin[i]))
            strides[i] = abs(strides[i])
        masks["begin_mask"] = masks["end_mask"] = masks["shrink_axis_mask"] = 0
    return shape, begin, end, strides, masks


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(strided_slices())
def test_strided_slice_matches_tflite_on_random_specs(spec) -> None:
    """Whatever the masks, where TFLite's builtin kernel accepts the slice we agree with it.
    (XNNPack's slice differs: it reads begin == end == 0 with stride 1 as the whole axis.)"""
    shape, begin, end, strides, masks = spec
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    try:
        want_shape = _tflite_slice_shape(shape, begin, end, strides, masks)
    except (RuntimeError, ValueError):
        return  # TFLite rejects this spec (e.g. shrinking an empty range)
    b = GraphBuilder("ss")
    xin = b.input("x", shape)
    y = b.op("STRIDED_SLICE", xin, i32(*begin), i32(*end), i32(*strides), **masks, shape=want_shape)
    G = b.build([y])
    try:
        theirs = interpret(serialize_tflite(G), {"x": x}, builtin_only=True)[y]
    except (RuntimeError, ValueError):
        return
    np.testing.assert_array_equal(run_graph(G, {"x": x})[y], theirs)


def _tflite_slice_shape(shape, begin, end, strides, masks) -> tuple[int, ...]:
    """The output shape the interpreter computes (a dynamic-shape probe run)."""
    b = GraphBuilder("probe")
    xin = b.input("x", shape)
    y = b.op("STRIDED_SLICE", xin, i32(*begin), i32(*end), i32(*strides), **masks, shape=(1,))
    feeds = {"x": np.zeros(shape, np.float32)}
    out = interpret(serialize_tflite(b.build([y])), feeds, builtin_only=True)
    return tuple(out[y].shape)


def test_select_and_logical_ops_match_tflite() -> None:
    """a, b ──LESS──► c ──┬── SELECT_V2(c, a, b) ──► s
    └── LOGICAL_OR(c, NOT c) ─► t"""
    b = GraphBuilder("select")
    x, y = b.input("x", (2, 3)), b.input("y", (2, 3))
    c = b.op("LESS", x, y)
    s = b.op("SELECT_V2", c, x, y, shape=(2, 3), dtype="float32")
    s1 = b.op("SELECT", c, y, x, shape=(2, 3), dtype="float32")
    t = b.op("LOGICAL_OR", c, b.op("LOGICAL_NOT", c, shape=(2, 3)))
    u = b.op("LOGICAL_AND", c, b.op("EQUAL", x, x))
    ours = assert_matches_tflite(b.build([s, s1, t, u]))
    assert ours[t].all() and ours[s].dtype == np.float32


def test_gather_with_random_int_input_stays_in_range() -> None:
    b = GraphBuilder("ids")
    ids = b.input("ids", (1, 64), "int32")
    G = b.build([b.op("GATHER", _w(30, 4), b.op("CAST", ids, dtype="int32"), axis=0)])
    feeds = random_inputs(G, seed=3)
    assert feeds["ids"].max() < 30 and feeds["ids"].min() >= 0
    assert_matches_tflite(G, feeds)


# --------------------------------------------------------------------------------------------
# LSTMs
# --------------------------------------------------------------------------------------------


def _lstm_inputs(n_in: int, n_cell: int, *, cifg=False, peephole=False, proj: int = 0):
    """The 17 weight inputs of one LSTM direction (TFLite gate order i, f, c, o)."""
    n_out = proj or n_cell
    w = [None if cifg and k == 0 else _w(n_cell, n_in) for k in range(4)]
    r = [None if cifg and k == 0 else _w(n_cell, n_out) for k in range(4)]
    p = [None if cifg and k == 0 else _w(n_cell) for k in range(3)] if peephole else [None] * 3
    bias = [None if cifg and k == 0 else _w(n_cell) for k in range(4)]
    pr = [_w(proj, n_cell), _w(proj)] if proj else [None, None]
    return [*w, *r, *p, *bias, *pr]


LSTM_CASES = {
    "plain": {},
    "time_major": {"time_major": True},
    "cifg_peephole": {"cifg": True, "peephole": True},
    "projection_clip": {"proj": 3, "cell_clip": 0.5, "proj_clip": 0.4},
}


@pytest.mark.parametrize("case", sorted(LSTM_CASES))
def test_unidirectional_lstm_matches_tflite(case: str) -> None:
    """x (B, T, I) ──UNIDIRECTIONAL_SEQUENCE_LSTM(weights, h0=0, c0=0)──► y (B, T, O)"""
    o = dict(LSTM_CASES[case])
    time_major = o.pop("time_major", False)
    clips = {k: o.pop(k) for k in ("cell_clip", "proj_clip") if k in o}
    n_in, n_cell, batch, steps = 5, 4, 2, 6
    n_out = o.get("proj") or n_cell
    b = GraphBuilder("lstm")
    x = b.input("x", (steps, batch, n_in) if time_major else (batch, steps, n_in))
    h0 = _variable(b, "h0", (batch, n_out))
    c0 = _variable(b, "c0", (batch, n_cell))
    y = b.op(
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        x,
        *_lstm_inputs(n_in, n_cell, **o),
        h0,
        c0,
        fused_activation_function="TANH",
        time_major=time_major,
        **clips,
        shape=(steps, batch, n_out) if time_major else (batch, steps, n_out),
    )
    assert_matches_tflite(b.build([y]))


def _variable(b: GraphBuilder, name: str, shape: tuple[int, ...]) -> str:
    b._add_tensor(Tensor(name, shape, "float32", is_variable=True))
    return name


@pytest.mark.parametrize("merge", [False, True])
def test_bidirectional_lstm_matches_tflite(merge: bool) -> None:
    n_in, n_cell, batch, steps = 3, 4, 1, 5
    b = GraphBuilder("bilstm")
    x = b.input("x", (batch, steps, n_in))
    states = [_variable(b, f"s{k}", (batch, n_cell)) for k in range(4)]
    shapes = [(batch, steps, 2 * n_cell)] if merge else [(batch, steps, n_cell)] * 2
    out = b.op(
        "BIDIRECTIONAL_SEQUENCE_LSTM",
        x,
        *_lstm_inputs(n_in, n_cell),
        *_lstm_inputs(n_in, n_cell),
        *states,
        *[None] * 9,
        fused_activation_function="TANH",
        time_major=False,
        merge_outputs=merge,
        shape=shapes,
    )
    assert_matches_tflite(b.build(list(out) if isinstance(out, tuple) else [out]))


def test_lstm_step_matches_tflite() -> None:
    """x (B, I) ──LSTM(weights, h0=0, c0=0)──► h (B, O): one step of the sequence kernel"""
    b = GraphBuilder("lstm_step")
    x = b.input("x", (2, 5))
    h0, c0 = _variable(b, "h0", (2, 4)), _variable(b, "c0", (2, 4))
    y = b.op(
        "LSTM",
        x,
        *_lstm_inputs(5, 4, peephole=True),
        h0,
        c0,
        fused_activation_function="TANH",
        kernel_type="FULL",
        shape=(2, 4),
    )
    assert_matches_tflite(b.build([y]))


@pytest.mark.parametrize("kind", ["RNN", "UNIDIRECTIONAL_SEQUENCE_RNN"])
def test_rnn_matches_tflite(kind: str) -> None:
    b = GraphBuilder("rnn")
    shape = (2, 5) if kind == "RNN" else (2, 6, 5)
    x = b.input("x", shape)
    h0 = _variable(b, "h0", (2, 3))
    y = b.op(
        kind,
        x,
        _w(3, 5),
        _w(3, 3),
        _w(3),
        h0,
        fused_activation_function="TANH",
        shape=shape[:-1] + (3,),
    )
    assert_matches_tflite(b.build([y]))


def test_scatter_and_dynamic_update_slice_match_tflite() -> None:
    b = GraphBuilder("scatter")
    u = b.input("u", (3, 4))
    s = b.op(
        "SCATTER_ND",
        np.array([[1], [3], [1]], np.int32),
        u,
        i32(5, 4),
        shape=(5, 4),
        dtype="float32",
    )
    x = b.input("x", (4, 6))
    d = b.op("DYNAMIC_UPDATE_SLICE", x, b.input("v", (2, 3)), i32(3, 1), shape=(4, 6))
    assert_matches_tflite(b.build([s, d]))


# --------------------------------------------------------------------------------------------
# control flow
# --------------------------------------------------------------------------------------------


def test_while_loop_matches_tflite() -> None:
    """(i=0, x) ──WHILE[cond: i < 5; body: i+1, x*0.5 + 1]──► (i, x)"""
    b = GraphBuilder("main")
    i0, x0 = b.input("i0", (), "int32"), b.input("x0", (2, 3))
    cond = b.subgraph("cond")
    ci, cx = cond.input("ci", (), "int32"), cond.input("cx", (2, 3))
    cond.set_outputs([cond.op("LESS", ci, np.int32(5))])
    body = b.subgraph("body")
    bi, bx = body.input("bi", (), "int32"), body.input("bx", (2, 3))
    body.set_outputs(
        [body.op("ADD", bi, np.int32(1)), body.op("ADD", body.op("MUL", bx, np.float32(0.5)), 1.0)]
    )
    outs = b.op(
        "WHILE",
        i0,
        x0,
        cond_subgraph="cond",
        body_subgraph="body",
        shape=[(), (2, 3)],
        dtype=["int32", "float32"],
    )
    G = b.build(list(outs))
    feeds = {"i0": np.array(0, np.int32), "x0": np.ones((2, 3), np.float32)}
    ours = assert_matches_tflite(G, feeds)
    assert ours[outs[0]].reshape(-1).tolist() == [5]
    del cx


def test_if_runs_the_branch_the_flag_selects() -> None:
    b = GraphBuilder("main")
    flag, x = b.input("flag", (), "bool"), b.input("x", (3,))
    then = b.subgraph("then")
    then.set_outputs([then.op("NEG", then.input("a", (3,)))])
    other = b.subgraph("else")
    other.set_outputs([other.op("ABS", other.input("a2", (3,)))])
    y = b.op("IF", flag, x, then_subgraph="then", else_subgraph="else", shape=(3,), dtype="float32")
    G = b.build([y])
    x_val = np.array([-1.0, 2.0, -3.0], np.float32)
    for f in (True, False):
        assert_matches_tflite(G, {"flag": np.array(f), "x": x_val})
    assert run_graph(G, {"flag": np.array(True), "x": x_val})[y].tolist() == [1.0, -2.0, 3.0]


def test_range_matches_tflite() -> None:
    b = GraphBuilder("range")
    start, limit, delta = (b.input(n, (), "int32") for n in ("start", "limit", "delta"))
    G = b.build([b.op("RANGE", start, limit, delta, shape=(3,), dtype="int32")])
    feeds = {k: np.array(v, np.int32) for k, v in (("start", 2), ("limit", 11), ("delta", 3))}
    ours = assert_matches_tflite(G, feeds)
    assert ours["range_0"].tolist() == [2, 5, 8]


def test_resource_variables_round_trip() -> None:
    """x ──ASSIGN_VARIABLE(VAR_HANDLE "v")   READ_VARIABLE(VAR_HANDLE "v") ──► y"""
    ts = [
        Tensor("x", (2,), "float32"),
        Tensor("h", (), "resource"),
        Tensor("h2", (), "resource"),
        Tensor("y", (2,), "float32"),
    ]
    ops = [
        Op("var_handle_0", "VAR_HANDLE", (), ("h",), {"container": "", "shared_name": "v"}),
        Op("assign_variable_1", "ASSIGN_VARIABLE", ("h", "x"), ()),
        Op("var_handle_2", "VAR_HANDLE", (), ("h2",), {"container": "", "shared_name": "v"}),
        Op("read_variable_3", "READ_VARIABLE", ("h2",), ("y",)),
    ]
    G = make_graph("vars", ts, ops, ["x"], ["y"])
    assert run_graph(G, {"x": np.array([3.0, 4.0])})["y"].tolist() == [3.0, 4.0]


def test_call_and_composite_run_their_subgraph() -> None:
    """x ──CALL[sq: x*x]──► y ──STABLEHLO_COMPOSITE("my.double", decomposition: y+y)──► z"""
    b = GraphBuilder("main")
    x = b.input("x", (3,))
    sq = b.subgraph("sq")
    a = sq.input("a", (3,))
    sq.set_outputs([sq.op("MUL", a, a)])
    dbl = b.subgraph("dbl")
    c = dbl.input("c", (3,))
    dbl.set_outputs([dbl.op("ADD", c, c)])
    y = b.op("CALL", x, subgraph="sq", shape=(3,))
    z = b.op("STABLEHLO_COMPOSITE", y, name="my.double", decomposition_subgraph="dbl", shape=(3,))
    out = run_graph(b.build([z]), {"x": np.array([1.0, -2.0, 3.0])})
    assert out[z].tolist() == [2.0, 8.0, 18.0]


# --------------------------------------------------------------------------------------------
# quantized ops
# --------------------------------------------------------------------------------------------


def _q(scale: float, zp: int = 0) -> Quantization:
    return Quantization((scale,), (zp,))


def _int8_conv(kind: str) -> tuple:
    b = GraphBuilder("qconv")
    x = b.input("x", (1, 8, 8, 4), "int8", quantization=_q(0.05, -3))
    cout = 6 if kind == "CONV_2D" else 8
    wshape = (cout, 3, 3, 4) if kind == "CONV_2D" else (1, 3, 3, 8)
    scales = tuple(float(s) for s in RNG.uniform(0.002, 0.01, cout))
    w = b.const(
        RNG.integers(-127, 128, wshape).astype(np.int8),
        quantization=Quantization(scales, (0,) * cout, axis=0 if kind == "CONV_2D" else 3),
    )
    bias = b.const(
        RNG.integers(-2000, 2000, cout).astype(np.int32),
        quantization=Quantization(tuple(0.05 * s for s in scales), (0,) * cout),
    )
    opts = {"depth_multiplier": 2} if kind != "CONV_2D" else {}
    y = b.op(
        kind,
        x,
        w,
        bias,
        quantization=_q(0.08, 5),
        fused_activation_function="RELU6",
        stride_h=2,
        stride_w=2,
        **opts,
    )
    return b.build([y]), None


def _int8_unary(kind: str, out_q: Quantization, **opts) -> Callable[[], tuple]:
    def build():
        b = GraphBuilder(kind.lower())
        x = b.input("x", (2, 4, 4, 8), "int8", quantization=_q(0.04, 2))
        return b.build([b.op(kind, x, quantization=out_q, **opts)]), None

    return build


def _int8_binary(kind: str) -> tuple:
    b = GraphBuilder(kind.lower())
    x = b.input("x", (2, 5, 3), "int8", quantization=_q(0.03, -4))
    y = b.input("y", (5, 1), "int8", quantization=_q(0.05, 7))
    return b.build([b.op(kind, x, y, quantization=_q(0.07, -2))]), None


def _quantize_dequantize() -> tuple:
    b = GraphBuilder("qdq")
    x = b.input("x", (3, 7))
    q = b.op("QUANTIZE", x, dtype="int8", quantization=_q(0.02, 3))
    return b.build([q, b.op("DEQUANTIZE", q)]), None


def _int8_fc() -> tuple:
    b = GraphBuilder("qfc")
    x = b.input("x", (3, 16), "int8", quantization=_q(0.05, 1))
    w = b.const(RNG.integers(-127, 128, (10, 16)).astype(np.int8), quantization=_q(0.01))
    bias = b.const(RNG.integers(-500, 500, 10).astype(np.int32), quantization=_q(0.0005))
    return b.build([b.op("FULLY_CONNECTED", x, w, bias, quantization=_q(0.1, -10))]), None


def _hybrid_fc() -> tuple:
    b = GraphBuilder("hybrid")
    x = b.input("x", (3, 16))
    w = b.const(RNG.integers(-127, 128, (10, 16)).astype(np.int8), quantization=_q(0.01))
    return b.build([b.op("FULLY_CONNECTED", x, w, _w(10))]), None


QUANT_CASES: dict[str, Callable[[], tuple]] = {
    "CONV_2D": lambda: _int8_conv("CONV_2D"),
    "DEPTHWISE_CONV_2D": lambda: _int8_conv("DEPTHWISE_CONV_2D"),
    "FULLY_CONNECTED": _int8_fc,
    "QUANTIZE_DEQUANTIZE": _quantize_dequantize,
    "ADD": lambda: _int8_binary("ADD"),
    "MUL": lambda: _int8_binary("MUL"),
    "SUB": lambda: _int8_binary("SUB"),
    "LOGISTIC": _int8_unary("LOGISTIC", _q(1 / 256, -128)),
    "TANH": _int8_unary("TANH", _q(1 / 128, 0)),
    "SOFTMAX": _int8_unary("SOFTMAX", _q(1 / 256, -128), beta=1.0),
    "HARD_SWISH": _int8_unary("HARD_SWISH", _q(0.03, -20)),
    "RELU": _int8_unary("RELU", _q(0.04, -128)),
    "AVERAGE_POOL_2D": _int8_unary(
        "AVERAGE_POOL_2D",
        _q(0.04, 2),
        filter_height=2,
        filter_width=2,
        stride_h=2,
        stride_w=2,
        padding="VALID",
    ),
    "MAX_POOL_2D": _int8_unary(
        "MAX_POOL_2D", _q(0.04, 2), filter_height=3, filter_width=3, stride_h=1, stride_w=1
    ),
}


@pytest.mark.parametrize("case", sorted(QUANT_CASES))
def test_quantized_op_within_one_step_of_tflite(case: str) -> None:
    G, feeds = QUANT_CASES[case]()
    assert_matches_tflite(G, feeds, steps=1)


@pytest.mark.parametrize("case", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
def test_integer_kernels_are_bit_exact(case: str) -> None:
    """int8 GEMM ops take the exact integer path: equal to TFLite's builtin kernels."""
    G, _ = QUANT_CASES[case]()
    feeds = random_inputs(G, seed=4)
    theirs = interpret(serialize_tflite(G), feeds, builtin_only=True)
    ours = run_graph(G, feeds)
    for name, want in theirs.items():
        np.testing.assert_array_equal(ours[name], want)


@pytest.mark.parametrize("kind", ["RESHAPE", "REVERSE_V2", "PAD", "TRANSPOSE"])
def test_quantized_data_movement_copies_stored_values(kind: str) -> None:
    """Like TFLite, data movement copies int8 values even when the output scale differs."""
    b = GraphBuilder(kind.lower())
    x = b.input("x", (2, 3), "int8", quantization=_q(0.1, 1))
    second = {
        "RESHAPE": i32(3, 2),
        "REVERSE_V2": i32(1),
        "PAD": np.array([[1, 0], [0, 2]], np.int32),
        "TRANSPOSE": i32(1, 0),
    }[kind]
    shape = {"RESHAPE": (3, 2), "REVERSE_V2": (2, 3), "PAD": (3, 5), "TRANSPOSE": (3, 2)}[kind]
    y = b.op(kind, x, second, shape=shape, quantization=_q(0.3, -2))
    # (XNNPack refuses PAD and TRANSPOSE with different scales: compare with the builtins.)
    ours = assert_matches_tflite(b.build([y]), steps=0, builtin_only=True)
    if kind == "PAD":  # padded with the output zero point
        assert ours[y][0].tolist() == [-2] * 5


def test_quantized_mean_within_one_step() -> None:
    b = GraphBuilder("qmean")
    x = b.input("x", (1, 6, 6, 8), "int8", quantization=_q(0.04, 2))
    G = b.build([b.op("MEAN", x, i32(1, 2), keep_dims=True, quantization=_q(0.03, -1))])
    assert_matches_tflite(G, steps=1)


def test_hybrid_fully_connected_matches_tflite() -> None:
    G, _ = _hybrid_fc()
    feeds = random_inputs(G, seed=0)
    ours = run_graph(G, feeds)
    theirs = interpret(serialize_tflite(G), feeds, builtin_only=True)
    (name,) = theirs
    # TFLite's hybrid kernel quantizes each input row symmetrically to int8, as we do. (XNNPack
    # quantizes rows asymmetrically instead: about 1 % apart on this example.)
    np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------------------------
# whole models
# --------------------------------------------------------------------------------------------

BUNDLED = Path(__file__).resolve().parents[2] / "benchmarks" / "models"


def _model_error(path: Path) -> tuple[dict, dict, object]:
    G = rehydrate(read_tflite(path), seed=0)
    feeds = random_inputs(G, seed=0)
    return run_graph(G, feeds), interpret(serialize_tflite(G), feeds), G


def _assert_model(path: Path, *, rel: float, steps: int) -> None:
    ours, theirs, G = _model_error(path)
    assert set(theirs) <= set(ours)
    for name, want in theirs.items():
        got = ours[name]
        assert got.shape == want.shape and got.dtype == want.dtype
        if np.issubdtype(want.dtype, np.floating):
            scale = float(np.abs(want).max())
            assert float(np.abs(got - want).max()) <= rel * scale + 1e-7, name
        else:
            assert np.abs(got.astype(int) - want.astype(int)).max() <= steps, name


BUNDLED_CASES = {
    "keras__mobilenet_v2_float32": (1e-4, 0),
    "keras__mobilenet_v2_int8": (0, 2),
    "keras__text_lstm_float32": (1e-4, 0),  # WHILE loop with cond / body graphs
    "keras__text_lstm_tfkeras_float32": (1e-4, 0),  # fused UNIDIRECTIONAL_SEQUENCE_LSTM
    "keras__text_transformer_float32": (1e-4, 0),
    "torch__resnet18_float32": (1e-4, 0),
}


@pytest.mark.parametrize("name", sorted(BUNDLED_CASES))
def test_bundled_model_matches_tflite(name: str) -> None:
    rel, steps = BUNDLED_CASES[name]
    _assert_model(BUNDLED / f"{name}.tflite", rel=rel, steps=steps)


ZOO_CASES = {
    "keras__text_bilstm_float32": (1e-4, 0),  # two WHILE loops, REVERSE_V2
    "keras__mobilenet_v3_small_int8": (0, 2),  # int8 HARD_SWISH, MEAN, MUL
    "keras__text_lstm_dynamic": (1e-4, 0),  # hybrid (dynamic-range) FULLY_CONNECTED
    "torch__bert_tiny_random_float32": (1e-4, 0),  # GATHER, BATCH_MATMUL, GELU
    "keras__resnet50_int8": (0, 3),
}


@pytest.mark.parametrize("name", sorted(ZOO_CASES))
def test_zoo_model_matches_tflite(name: str, zoo_dir: Path) -> None:
    rel, steps = ZOO_CASES[name]
    _assert_model(zoo_dir / f"{name}.tflite", rel=rel, steps=steps)


def _per_op_steps(path: Path, kinds: set[str] | None = None) -> dict[str, float]:
    """Each main-graph op run alone on the interpreter's own intermediates (builtin kernels):
    the largest error of its outputs in quantization steps, by op name."""
    from ai_edge_litert.interpreter import Interpreter

    G = rehydrate(read_tflite(path), seed=0)
    feeds = random_inputs(G, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = Interpreter(
            model_content=serialize_tflite(G), num_threads=1, experimental_preserve_all_tensors=True
        )
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], feeds[d["name"]])
    it.invoke()
    index = {d["name"]: d["index"] for d in it.get_tensor_details()}
    tensors = G.graph["tensors"]
    errors = {}
    for name, op in ops_of(G):
        if kinds is not None and op.kind not in kinds:
            continue
        live = [
            t
            for t in op.inputs
            if t is not None and not tensors[t].is_constant and not tensors[t].is_variable
        ]
        ours = run_op(G, name, {t: it.get_tensor(index[t]) for t in live})
        errors[name] = max(
            float(np.abs(v.astype(np.int64) - it.get_tensor(index[t]).astype(np.int64)).max())
            for t, v in ours.items()
        )
    return errors


def test_int8_model_every_op_within_one_step() -> None:
    """Every op of MobileNetV2 int8, fed the interpreter's inputs, is within one step of it."""
    errors = _per_op_steps(BUNDLED / "keras__mobilenet_v2_int8.tflite")
    assert len(errors) == 65
    assert max(errors.values()) <= 1, {k: v for k, v in errors.items() if v > 1}


@pytest.mark.xfail(
    strict=True,
    reason="full-integer (8x8->16) LSTM: TFLite's kernel works in fixed point (gate biases "
    "only enter through layer norm, tanh of the cell takes 15 + log2(cell scale) integer bits); "
    "the reference computes in float and only saturates h and c at their tensors' ranges, so it "
    "is far off on the zoo's saturating int8 LSTMs (the model outputs after it still agree)",
)
def test_full_integer_lstm_within_one_step() -> None:
    errors = _per_op_steps(
        BUNDLED / "keras__text_lstm_tfkeras_int8.tflite", {"UNIDIRECTIONAL_SEQUENCE_LSTM"}
    )
    assert errors and max(errors.values()) <= 1


# --------------------------------------------------------------------------------------------
# errors, registry, inputs
# --------------------------------------------------------------------------------------------


def _one_op(kind: str) -> object:
    ts = [Tensor("x", (2,), "float32"), Tensor("y", (2,), "float32")]
    return make_graph("g", ts, [Op("op_0", kind, ("x",), ("y",))], ["x"], ["y"])


def test_unknown_kind_raises_naming_the_op() -> None:
    with pytest.raises(ExecutionError, match=r"op 'op_0'.*'NOT_A_KIND'"):
        run_graph(_one_op("NOT_A_KIND"), {"x": np.zeros(2)})


def test_missing_input_raises() -> None:
    with pytest.raises(ExecutionError, match="no value for input 'x'"):
        run_graph(_one_op("NEG"), {})


def test_dropped_constant_raises_naming_the_tensor() -> None:
    ts = [
        Tensor("x", (2,), "float32"),
        Tensor("w", (2,), "float32", buffer=Buffer.placeholder(8)),
        Tensor("y", (2,), "float32"),
    ]
    G = make_graph("g", ts, [Op("add_0", "ADD", ("x", "w"), ("y",))], ["x"], ["y"])
    with pytest.raises(ExecutionError, match=r"add_0.*'w'.*dropped"):
        run_graph(G, {"x": np.zeros(2)})


def test_register_custom_kernel_and_duplicates() -> None:
    kind = "CUSTOM:TEST_TRIPLE"
    register_kernel(kind, lambda call: 3 * call.input(0), tolerance=(0.0, 0.0))
    assert kind in supported_kinds() and tolerance(kind) == (0.0, 0.0)
    assert run_graph(_one_op(kind), {"x": np.ones(2)})["y"].tolist() == [3.0, 3.0]
    with pytest.raises(ExecutionError, match="already registered"):
        register_kernel(kind, lambda call: call.input(0))
    register_kernel(kind, lambda call: -call.input(0), replace=True)
    assert run_graph(_one_op(kind), {"x": np.ones(2)})["y"].tolist() == [-1.0, -1.0]


def test_unsupported_lstm_variant_raises() -> None:
    b = GraphBuilder("lstm")
    x = b.input("x", (1, 2, 3))
    y = b.op(
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        x,
        *_lstm_inputs(3, 4),
        None,
        None,
        diagonal_recurrent_tensors=True,
        shape=(1, 2, 4),
    )
    with pytest.raises(ExecutionError, match="diagonal"):
        run_graph(b.build([y]), random_inputs(b.build([y]), seed=0))


def test_every_zoo_op_kind_has_a_kernel(manifest: dict) -> None:
    kinds = {k for row in manifest.values() for k, _ in row["op_histogram"]}
    assert kinds - set(supported_kinds()) == set()


def test_random_inputs_are_reproducible() -> None:
    G, _ = FLOAT_CASES["CONV_2D_1x1"]()
    a, b = random_inputs(G, seed=5), random_inputs(G, seed=5)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["x0"], random_inputs(G, seed=6)["x0"])


def test_run_op_matches_run_graph() -> None:
    G, feeds = FLOAT_CASES["CONV_2D_same_s2_relu6"]()
    feeds = random_inputs(G, seed=2)
    (name,) = G.nodes
    (out,) = G.graph["outputs"]
    assert np.array_equal(run_op(G, name, feeds)[out], run_graph(G, feeds)[out])

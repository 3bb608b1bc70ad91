"""Each pattern rule on a small builder graph: structure, origin, and numerics in LiteRT
(custom fused ops: their numpy kernel against the region they replaced, run in LiteRT)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tacopt.fusion.fuse import fuse
from tacopt.fusion.ir import ops_of, validate_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.ir.vocabulary import FUSION_ONLY_KINDS
from tacopt.fusion.tflite.litert import assert_same_outputs, check_fused_regions
from tacopt.fusion.unfuse import unfuse

RNG = np.random.default_rng(0)


def _w(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _kinds(G):
    return [op.kind for _, op in ops_of(G)]


def _check(G, want_kinds, want_counts):
    r = fuse(G)
    validate_graph(r.graph)
    assert _kinds(r.graph) == want_kinds
    assert r.counts == want_counts
    assert_same_outputs(G, r.graph, seed=3)
    custom = sum(k in FUSION_ONLY_KINDS for k in _kinds(r.graph))
    assert check_fused_regions(G, r.graph, seed=3) == custom
    return r


def test_conv_batchnorm_relu_folds_into_one_conv():
    """x ─CONV_2D─MUL(s)─ADD(t)─RELU─► y   =>   x ─CONV_2D(relu)─► y"""
    b = GraphBuilder()
    x = b.input("x", (1, 6, 6, 3))
    h = b.op("CONV_2D", x, _w(4, 3, 3, 3), _w(4))
    h = b.op("ADD", b.op("MUL", h, _w(4)), _w(1, 1, 1, 4))
    G = b.build(outputs=[b.op("RELU", h)])
    r = _check(G, ["CONV_2D"], {"fold_activation": 1, "fold_bias_scale": 2})
    conv = next(op for _, op in ops_of(r.graph))
    assert conv.options["fused_activation_function"] == "RELU"
    assert conv.origin == (0, 1, 2, 3)


def test_intermediate_read_twice_blocks_folding():
    """x ─CONV_2D─┬─ADD(c)─► y
    └────────► z   (conv output is a graph output: no fold)"""
    b = GraphBuilder()
    h = b.op("CONV_2D", b.input("x", (1, 4, 4, 2)), _w(2, 1, 1, 2), _w(2))
    G = b.build(outputs=[b.op("ADD", h, _w(2)), h])
    assert fuse(G).counts == {}


def test_pad_valid_conv_becomes_same_only_when_pads_match():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 8, 2))
    p = b.op("PAD", x, np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    G = b.build(outputs=[b.op("CONV_2D", p, _w(3, 3, 3, 2), _w(3), padding="VALID")])
    r = _check(G, ["CONV_2D"], {"fold_pad": 1})
    assert next(op for _, op in ops_of(r.graph)).options["padding"] == "SAME"
    b = GraphBuilder()
    x = b.input("x", (1, 8, 8, 2))
    p = b.op("PAD", x, np.array([[0, 0], [2, 0], [1, 1], [0, 0]], np.int32))
    G = b.build(outputs=[b.op("CONV_2D", p, _w(3, 3, 3, 2), _w(3), padding="VALID")])
    assert fuse(G).counts == {}


def _hard_swish(b, x):
    r = b.op("RELU6", b.op("ADD", x, np.float32(3)))
    return b.op("MUL", x, b.op("MUL", r, np.float32(1 / 6)))


def _gelu_tanh(b, x):
    cube = b.op("MUL", b.op("MUL", x, x), x)
    inner = b.op("ADD", x, b.op("MUL", cube, np.float32(0.044715)))
    t = b.op("TANH", b.op("MUL", inner, np.float32(math.sqrt(2 / math.pi))))
    return b.op("MUL", b.op("MUL", x, np.float32(0.5)), b.op("ADD", t, np.float32(1)))


def _gelu_erf(b, x):
    e = b.op("CUSTOM:Erf", b.op("MUL", x, np.float32(1 / math.sqrt(2))), shape=(2, 8))
    return b.op("MUL", b.op("MUL", x, np.float32(0.5)), b.op("ADD", e, np.float32(1)))


def _swish(b, x):
    return b.op("MUL", x, b.op("LOGISTIC", x))


def _layer_norm(b, x):
    axes = np.array([-1], np.int32)
    m = b.op("MEAN", x, axes, keep_dims=True)
    v = b.op("MEAN", b.op("SQUARED_DIFFERENCE", x, m), axes, keep_dims=True)
    g = b.op("MUL", b.op("RSQRT", b.op("ADD", v, np.float32(1e-3))), _w(8))
    return b.op("ADD", b.op("MUL", x, g), b.op("MUL", b.op("NEG", m), g))


def _softmax(b, x):
    axes = np.array([-1], np.int32)
    e = b.op("EXP", b.op("SUB", x, b.op("REDUCE_MAX", x, axes, keep_dims=True)))
    return b.op("DIV", e, b.op("SUM", e, axes, keep_dims=True))


def _l2(b, x):
    s = b.op("SUM", b.op("MUL", x, x), np.array([-1], np.int32), keep_dims=True)
    return b.op("MUL", x, b.op("RSQRT", b.op("MAXIMUM", s, np.float32(1e-12))))


def _leaky(b, x):
    return b.op("MAXIMUM", x, b.op("MUL", x, np.float32(0.2)))


@pytest.mark.parametrize(
    "build, kind, rule",
    [
        (_hard_swish, "HARD_SWISH", "hard_swish"),
        (_gelu_tanh, "GELU", "gelu"),
        (_gelu_erf, "GELU", "gelu"),
        (_swish, "CUSTOM:Swish", "swish"),
        (_layer_norm, "CUSTOM:LayerNorm", "layer_norm"),
        (_softmax, "SOFTMAX", "softmax"),
        (_l2, "L2_NORMALIZATION", "l2_normalization"),
        (_leaky, "LEAKY_RELU", "leaky_relu"),
    ],
)
def test_recognizer_fuses_and_matches_numerics(build, kind, rule):
    b = GraphBuilder()
    G = b.build(outputs=[build(b, b.input("x", (2, 8)))])
    r = _check(G, [kind], {rule: 1})
    assert r.graph.nodes[next(iter(r.graph))]["op"].origin == tuple(range(G.number_of_nodes()))


def test_recognizer_guard_wrong_constant():
    b = GraphBuilder()
    x = b.input("x", (2, 8))
    r = b.op("RELU6", b.op("ADD", x, np.float32(2.5)))
    G = b.build(outputs=[b.op("MUL", x, b.op("MUL", r, np.float32(1 / 6)))])
    assert "HARD_SWISH" not in _kinds(fuse(G).graph)


def test_quantized_tensors_are_not_recognized():
    from tacopt.fusion.ir import Quantization

    b = GraphBuilder()
    x = b.input("x", (4,), "int8", quantization=Quantization((0.1,), (0,)))
    G = b.build(outputs=[b.op("MUL", x, b.op("LOGISTIC", x))])
    assert fuse(G).counts == {}


def test_fp16_dequantize_folds_into_float_constant():
    b = GraphBuilder()
    w = b.op("DEQUANTIZE", b.const(_w(4).astype(np.float16)))
    G = b.build(outputs=[b.op("ADD", b.input("x", (4,)), w)])
    r = _check(G, ["ADD"], {"fold_dequantize": 1})
    assert r.graph.graph["tensors"][w].dtype == "float32"


@pytest.mark.parametrize("build", [_hard_swish, _gelu_tanh, _gelu_erf, _swish, _layer_norm])
def test_unfuse_inverts_recognizers(build):
    b = GraphBuilder()
    F = fuse(b.build(outputs=[build(b, b.input("x", (2, 8)))])).graph
    U = unfuse(F)
    validate_graph(U)
    assert len(U) > 1 and _kinds(fuse(U).graph) == _kinds(F)
    assert_same_outputs(F, U, seed=5)


def test_fusing_alone_registers_the_custom_kernels():
    """The kernels of the custom kinds exist whenever the fusion does (no unfuse import)."""
    import subprocess
    import sys

    code = (
        "import sys; from tacopt.fusion.fuse import fuse; "
        "loaded = 'tacopt.fusion.rules.custom' in sys.modules; "
        "from tacopt.fusion.rules.custom import kernel_kinds; "
        "assert 'tacopt.fusion.unfuse' not in sys.modules and 'tacopt.fusion.tflite.litert' not in "
        "sys.modules; print(loaded, ','.join(kernel_kinds()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, kinds = out.stdout.split()
    assert loaded == "True" and set(kinds.split(",")) >= FUSION_ONLY_KINDS

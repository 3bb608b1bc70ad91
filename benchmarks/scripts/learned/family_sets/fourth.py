"""The fourth held-out set of families (issue 47, session 5): written before that round's tuning.

The seventeen families so far (``families.FAMILIES``, ``HELDOUT_FAMILIES``,
``family_sets.third.THIRD_FAMILIES``) have all been looked at and tuned on. These seven put ops
where none of them, no sampler and none of the zoo's classifiers and text models do, and are
measured and reported once, on the round's final learn:

- ``ghostnet``: an efficient classifier (GhostNet / MnasNet-like): ghost modules (a 1x1
  convolution to half the channels, a depthwise convolution of it, the two CONCATENATED on
  channels), squeeze-and-excitation pooled by a global AVERAGE_POOL_2D, fully-connected layers
  written as 1x1 convolutions on a 1 x 1 plane, a LOGISTIC gate broadcast by MUL, strided
  shortcuts, a head of a 1x1 convolution, a global pool, a RESHAPE and a SOFTMAX classifier;
- ``mobilebert``: a MobileBERT-like encoder: word-piece GATHER embeddings, the trigram
  embedding (shifted STRIDED_SLICEs padded back by PAD, CONCATENATION), position and token-type
  embeddings, NoNorm (a per-channel MUL and ADD), bottleneck FULLY_CONNECTED layers on (tokens,
  d), an attention mask built in-graph (CAST, SUB, MUL, RESHAPE), 4-head attention (RESHAPE,
  TRANSPOSE, BATCH_MATMUL, SOFTMAX), stacked feed-forward blocks, a TANH pooler on the first
  token;
- ``yolo``: a YOLOv8-like anchor-free detector: SiLU (LOGISTIC, MUL) convolutions, C2f-like
  blocks (SPLIT, CONCATENATION), an FPN by RESIZE_NEAREST_NEIGHBOR, three scales of box and
  class heads RESHAPEd and CONCATENATED to (1, anchors, 64 + classes), TRANSPOSEd, cut by
  SPLIT_V, the box distributions (RESHAPE, TRANSPOSE, SOFTMAX over 16 bins, a FULLY_CONNECTED
  expectation) decoded against constant anchor points and strides (SLICE, SUB, ADD, MUL); in
  one model the best boxes picked by REDUCE_MAX, TOPK_V2 and a batched GATHER;
- ``aspp``: a DeepLabV3+-like segmenter: a strided depthwise-separable backbone, atrous spatial
  pyramid pooling (a 1x1 branch, three dilated 3x3 convolutions, an image-pooling branch by
  MEAN, a 1x1 convolution and RESIZE_BILINEAR back to the map), CONCATENATION, a decoder with a
  low-level skip, RESIZE_BILINEAR (align_corners) to the input; in one model the dilated
  convolutions written as the TF converter writes them (SPACE_TO_BATCH_ND, a VALID convolution,
  BATCH_TO_SPACE_ND) and the labels taken by ARG_MAX;
- ``style``: a fast style-transfer / image-to-image network (Johnson-like): MIRROR_PAD (reflect)
  before every VALID convolution, instance norm written out (MEAN over the plane, SUB, MUL,
  RSQRT, a per-channel MUL and ADD), strided downsampling, residual blocks, upsampling by
  TRANSPOSE_CONV (in one model by RESIZE_NEAREST_NEIGHBOR and a convolution), a TANH output
  scaled to pixels;
- ``palm``: a palm / hand detector (BlazePalm-like SSD): 5x5 depthwise blaze blocks with
  max-pooled, channel-PADded shortcuts, an FPN by RESIZE_BILINEAR and ADD, two scales of
  anchors (2 and 6 a cell), the raw scores clipped (MAXIMUM, MINIMUM) through a LOGISTIC, the
  boxes and seven keypoints decoded in-graph against constant anchors (RESHAPE, MUL, ADD, SLICE,
  CONCATENATION); in one model the best palm's keypoints (ARG_MAX, GATHER, PAD to 3-D) turned
  into a crop matrix by MediaPipe's custom ``Landmarks2TransformMatrix`` (which plain LiteRT
  cannot run: priced by its rule);
- ``onset``: a note / onset transcriber's heads (basic-pitch-like): a CQT-like plane stacked by
  harmonics (SLICEs shifted by each harmonic's bins, PADded back, CONCATENATION on channels), an
  unfolded batch norm (MUL, ADD), 2-D convolutions with (3 x 39) and frequency-strided (1, 3)
  kernels, three LOGISTIC heads (contour, note, onset: the onset branch CONCATENATES the note
  posterior), each SQUEEZEd to (frames, bins).

    python -m tacopt.benchmarks.scripts.learned.families write DIR --set fourth
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import networkx as nx
import numpy as np

from tacopt.benchmarks.scripts.learned.family_sets.blocks import conv, depthwise, weights
from tacopt.benchmarks.scripts.learned.family_sets.blocks import i32 as _i32
from tacopt.fusion.ir.builder import GraphBuilder

#: The fourth set's weights: a generator of their own, so the files are those measured.
_RNG = np.random.default_rng(47474747)

_w = functools.partial(weights, rng=_RNG)
_conv = functools.partial(conv, rng=_RNG)
_dw = functools.partial(depthwise, rng=_RNG)



def _f32(*v: float) -> np.ndarray:
    return np.array(v, np.float32)


def _shape(b: GraphBuilder, x: str) -> tuple[int, ...]:
    return b.tensor(x).shape


# ---- ghostnet ------------------------------------------------------------------------------


def _ghost(b: GraphBuilder, x: str, cin: int, cout: int, *, relu: bool) -> str:
    act = "RELU" if relu else "NONE"
    p = _conv(b, x, cin, cout // 2, fused_activation_function=act)
    g = _dw(b, p, cout // 2, 3, fused_activation_function=act)
    return b.op("CONCATENATION", p, g, axis=3)


def _squeeze_excite(b: GraphBuilder, x: str, c: int) -> str:
    _, hh, ww, _ = _shape(b, x)
    s = b.op("AVERAGE_POOL_2D", x, filter_height=hh, filter_width=ww)  # (1, 1, 1, c)
    r = max(8, c // 4)
    s = _conv(b, _conv(b, s, c, r, fused_activation_function="RELU"), r, c)
    return b.op("MUL", x, b.op("LOGISTIC", s))


def ghostnet(h: int, width: float, classes: int) -> nx.MultiDiGraph:
    b = GraphBuilder(f"ghostnet_{h}_{round(width * 100)}_{classes}")

    def ch(v: int) -> int:
        return max(8, int(v * width + 2) // 4 * 4)

    c = ch(16)
    x = _conv(b, b.input("x", (1, h, h, 3)), 3, c, 3, stride_h=2, stride_w=2,
              fused_activation_function="RELU")  # fmt: skip
    for exp, out, stride, se in ((16, 16, 1, False), (48, 24, 2, False), (72, 24, 1, False),
                                 (72, 40, 2, True), (120, 40, 1, True), (240, 80, 2, False),
                                 (200, 80, 1, False), (480, 112, 1, True),
                                 (672, 160, 2, True)):  # fmt: skip
        e, o = ch(exp), ch(out)
        y = _ghost(b, x, c, e, relu=True)
        if stride == 2:
            y = _dw(b, y, e, 3, stride_h=2, stride_w=2)
        if se:
            y = _squeeze_excite(b, y, e)
        y = _ghost(b, y, e, o, relu=False)
        if stride == 1 and o == c:
            s = x
        else:
            s = _conv(b, _dw(b, x, c, 3, stride_h=stride, stride_w=stride), c, o)
        x = b.op("ADD", y, s)
        c = o
    x = _conv(b, x, c, ch(960), fused_activation_function="RELU")
    _, hh, ww, _ = _shape(b, x)
    x = b.op("AVERAGE_POOL_2D", x, filter_height=hh, filter_width=ww)
    x = _conv(b, x, ch(960), 1280, fused_activation_function="RELU")  # FC as a 1x1 conv
    x = b.op("RESHAPE", x, _i32(1, 1280))
    y = b.op("FULLY_CONNECTED", x, _w(classes, 1280), np.zeros(classes, np.float32))
    return b.build(outputs=[b.op("SOFTMAX", y)])


# ---- mobilebert ----------------------------------------------------------------------------


def mobilebert(seq: int, layers: int, vocab: int) -> nx.MultiDiGraph:
    emb, hidden, inner, heads, ffns = 128, 512, 128, 4, 4
    d = inner // heads
    b = GraphBuilder(f"mobilebert_{seq}_{layers}_{vocab}")

    def fc(x: str, cin: int, cout: int, **opts: str) -> str:
        return b.op("FULLY_CONNECTED", x, _w(cout, cin), np.zeros(cout, np.float32),
                    keep_num_dims=True, **opts)  # fmt: skip

    def no_norm(x: str, dim: int) -> str:
        return b.op("ADD", b.op("MUL", x, np.ones(dim, np.float32)), np.zeros(dim, np.float32))

    def heads_of(x: str, perm: tuple[int, ...]) -> str:
        return b.op("TRANSPOSE", b.op("RESHAPE", x, _i32(1, seq, heads, d)), _i32(*perm))

    ids = b.input("input_ids", (1, seq), dtype="int32")
    x = b.op("GATHER", _w(vocab, emb), ids, axis=0)  # (1, seq, emb)
    nxt = b.op("STRIDED_SLICE", x, _i32(0, 1, 0), _i32(1, seq, emb), _i32(1, 1, 1),
               shape=(1, seq - 1, emb))  # fmt: skip
    prv = b.op("STRIDED_SLICE", x, _i32(0, 0, 0), _i32(1, seq - 1, emb), _i32(1, 1, 1),
               shape=(1, seq - 1, emb))  # fmt: skip
    nxt = b.op("PAD", nxt, _i32(0, 0, 0, 1, 0, 0).reshape(3, 2))
    prv = b.op("PAD", prv, _i32(0, 0, 1, 0, 0, 0).reshape(3, 2))
    x = fc(b.op("CONCATENATION", nxt, x, prv, axis=2), 3 * emb, hidden)
    x = b.op("ADD", x, _w(1, seq, hidden))  # position embeddings
    types = b.input("token_type_ids", (1, seq), dtype="int32")
    x = no_norm(b.op("ADD", x, b.op("GATHER", _w(2, hidden), types, axis=0)), hidden)
    mask = b.op("CAST", b.input("input_mask", (1, seq), dtype="int32"), in_data_type="INT32",
                out_data_type="FLOAT32", dtype="float32")  # fmt: skip
    mask = b.op("MUL", b.op("SUB", np.ones(1, np.float32), mask), _f32(-10000.0))
    mask = b.op("RESHAPE", mask, _i32(1, 1, 1, seq))
    for _ in range(layers):
        shortcut = no_norm(fc(x, hidden, inner), inner)
        att_in = no_norm(fc(x, hidden, inner), inner)
        q = heads_of(fc(att_in, inner, inner), (0, 2, 1, 3))
        k = heads_of(fc(att_in, inner, inner), (0, 2, 3, 1))
        v = heads_of(fc(x, hidden, inner), (0, 2, 1, 3))
        s = b.op("ADD", b.op("MUL", b.op("BATCH_MATMUL", q, k), _f32(d**-0.5)), mask)
        o = b.op("TRANSPOSE", b.op("BATCH_MATMUL", b.op("SOFTMAX", s), v), _i32(0, 2, 1, 3))
        a = no_norm(b.op("ADD", fc(b.op("RESHAPE", o, _i32(1, seq, inner)), inner, inner),
                         shortcut), inner)  # fmt: skip
        for _ in range(ffns):
            f = fc(a, inner, hidden, fused_activation_function="RELU")
            a = no_norm(b.op("ADD", fc(f, hidden, inner), a), inner)
        x = no_norm(b.op("ADD", fc(a, inner, hidden), x), hidden)
    first = b.op("STRIDED_SLICE", x, _i32(0, 0, 0), _i32(1, 1, hidden), _i32(1, 1, 1),
                 shape=(1, 1, hidden))  # fmt: skip
    pooled = b.op("FULLY_CONNECTED", b.op("RESHAPE", first, _i32(1, hidden)), _w(hidden, hidden),
                  np.zeros(hidden, np.float32))  # fmt: skip
    pooled = b.op("TANH", pooled)
    logits = b.op("FULLY_CONNECTED", pooled, _w(2, hidden), np.zeros(2, np.float32))
    return b.build(outputs=[b.op("SOFTMAX", logits), x])


# ---- yolo ----------------------------------------------------------------------------------


def _silu(b: GraphBuilder, x: str) -> str:
    return b.op("MUL", x, b.op("LOGISTIC", x))


def _conv_silu(b: GraphBuilder, x: str, cin: int, cout: int, k: int = 1, stride: int = 1) -> str:
    return _silu(b, _conv(b, x, cin, cout, k, stride_h=stride, stride_w=stride))


def _c2f(b: GraphBuilder, x: str, cin: int, cout: int) -> str:
    half = cout // 2
    a, c = b.op("SPLIT", np.array(3, np.int32), _conv_silu(b, x, cin, cout), num_splits=2)
    y = _conv_silu(b, _conv_silu(b, c, half, half, 3), half, half, 3)
    y = b.op("ADD", y, c)
    return _conv_silu(b, b.op("CONCATENATION", a, c, y, axis=3), 3 * half, cout)


def yolo(h: int, c: int, classes: int, *, top: int = 0) -> nx.MultiDiGraph:
    b = GraphBuilder(f"yolo_{h}_{c}_{classes}" + (f"_top{top}" if top else ""))
    x = _conv_silu(b, b.input("images", (1, h, h, 3)), 3, c, 3, 2)
    x = _c2f(b, _conv_silu(b, x, c, 2 * c, 3, 2), 2 * c, 2 * c)  # h / 4
    p3 = _c2f(b, _conv_silu(b, x, 2 * c, 4 * c, 3, 2), 4 * c, 4 * c)  # h / 8
    p4 = _c2f(b, _conv_silu(b, p3, 4 * c, 8 * c, 3, 2), 8 * c, 8 * c)  # h / 16
    p5 = _c2f(b, _conv_silu(b, p4, 8 * c, 8 * c, 3, 2), 8 * c, 8 * c)  # h / 32

    def up_cat(x: str, skip: str, cin: int, cskip: int, cout: int) -> str:
        _, hh, ww, _ = _shape(b, skip)
        u = b.op("RESIZE_NEAREST_NEIGHBOR", x, _i32(hh, ww), shape=(1, hh, ww, cin))
        return _c2f(b, b.op("CONCATENATION", u, skip, axis=3), cin + cskip, cout)

    n4 = up_cat(p5, p4, 8 * c, 8 * c, 8 * c)
    n3 = up_cat(n4, p3, 8 * c, 4 * c, 4 * c)
    rows, anchor_xy, strides = [], [], []
    for feat, cf in ((n3, 4 * c), (n4, 8 * c), (p5, 8 * c)):
        _, g, _, _ = _shape(b, feat)
        box = _conv(b, _conv_silu(b, _conv_silu(b, feat, cf, 64, 3), 64, 64, 3), 64, 64)
        cls = _conv(b, _conv_silu(b, _conv_silu(b, feat, cf, 2 * c, 3), 2 * c, 2 * c, 3),
                    2 * c, classes)  # fmt: skip
        out = b.op("CONCATENATION", box, cls, axis=3)
        rows.append(b.op("RESHAPE", out, _i32(1, g * g, 64 + classes)))
        ys, xs = np.meshgrid(np.arange(g) + 0.5, np.arange(g) + 0.5, indexing="ij")
        anchor_xy.append(np.stack([xs.ravel(), ys.ravel()]))
        strides.append(np.full(g * g, h / g))
    n = sum(a.shape[1] for a in anchor_xy)
    heads = b.op("TRANSPOSE", b.op("CONCATENATION", *rows, axis=1), _i32(0, 2, 1))
    box, cls = b.op("SPLIT_V", heads, _i32(64, classes), np.array(1, np.int32), num_splits=2,
                    shape=((1, 64, n), (1, classes, n)))  # fmt: skip
    dist = b.op("TRANSPOSE", b.op("RESHAPE", box, _i32(1, 4, 16, n)), _i32(0, 1, 3, 2))
    dist = b.op("FULLY_CONNECTED", b.op("SOFTMAX", dist), np.arange(16, dtype=np.float32)[None],
                np.zeros(1, np.float32), keep_num_dims=True)  # (1, 4, n, 1): the expectation
    dist = b.op("RESHAPE", dist, _i32(1, 4, n))
    lt = b.op("SLICE", dist, _i32(0, 0, 0), _i32(1, 2, n), shape=(1, 2, n))
    rb = b.op("SLICE", dist, _i32(0, 2, 0), _i32(1, 2, n), shape=(1, 2, n))
    anchors = np.concatenate(anchor_xy, axis=1)[None].astype(np.float32)
    x1y1, x2y2 = b.op("SUB", anchors, lt), b.op("ADD", anchors, rb)
    centre = b.op("MUL", b.op("ADD", x1y1, x2y2), _f32(0.5))
    boxes = b.op("CONCATENATION", centre, b.op("SUB", x2y2, x1y1), axis=1)
    boxes = b.op("MUL", boxes, np.concatenate(strides)[None, None].astype(np.float32))
    scores = b.op("LOGISTIC", cls)
    outs = [b.op("CONCATENATION", boxes, scores, axis=1)]  # (1, 4 + classes, n)
    if top:
        best = b.op("REDUCE_MAX", scores, _i32(1))  # (1, n)
        vals, idx = b.op("TOPK_V2", best, np.array(top, np.int32), shape=((1, top), (1, top)),
                         dtype=["float32", "int32"])  # fmt: skip
        rows_of = b.op("TRANSPOSE", boxes, _i32(0, 2, 1))  # (1, n, 4)
        outs += [vals, b.op("GATHER", rows_of, idx, axis=1, batch_dims=1, shape=(1, top, 4))]
    return b.build(outputs=outs)


# ---- aspp ----------------------------------------------------------------------------------


def _atrous(b: GraphBuilder, x: str, cin: int, cout: int, rate: int, *, s2b: bool) -> str:
    """A 3x3 convolution dilated by ``rate``, SAME: native, or as the TF converter writes it."""
    if not s2b:
        return _conv(b, x, cin, cout, 3, dilation_h_factor=rate, dilation_w_factor=rate,
                     fused_activation_function="RELU")  # fmt: skip
    _, hh, ww, _ = _shape(b, x)
    eh, ew = -hh % rate, -ww % rate
    ph, pw = (hh + 2 * rate + eh) // rate, (ww + 2 * rate + ew) // rate
    s = b.op("SPACE_TO_BATCH_ND", x, _i32(rate, rate),
             _i32(rate, rate + eh, rate, rate + ew).reshape(2, 2),
             shape=(rate * rate, ph, pw, cin))  # fmt: skip
    y = _conv(b, s, cin, cout, 3, padding="VALID", fused_activation_function="RELU")
    return b.op("BATCH_TO_SPACE_ND", y, _i32(rate, rate), _i32(0, eh, 0, ew).reshape(2, 2),
                shape=(1, hh, ww, cout))  # fmt: skip


def aspp(h: int, c: int, classes: int, *, s2b: bool = False) -> nx.MultiDiGraph:
    b = GraphBuilder(f"aspp_{h}_{c}_{classes}" + ("_s2b" if s2b else ""))
    x = _conv(b, b.input("image", (1, h, h, 3)), 3, c, 3, stride_h=2, stride_w=2,
              fused_activation_function="RELU6")  # fmt: skip

    def sep(x: str, cin: int, cout: int, stride: int) -> str:
        y = _dw(b, x, cin, 3, stride_h=stride, stride_w=stride, fused_activation_function="RELU6")
        return _conv(b, y, cin, cout, fused_activation_function="RELU6")

    low = sep(sep(x, c, c, 1), c, 2 * c, 2)  # h / 4
    f = sep(sep(low, 2 * c, 4 * c, 2), 4 * c, 4 * c, 1)  # h / 8
    f = sep(sep(f, 4 * c, 8 * c, 2), 8 * c, 8 * c, 1)  # h / 16
    cf, a = 8 * c, 8 * c
    _, g, _, _ = _shape(b, f)
    branches = [_conv(b, f, cf, a, fused_activation_function="RELU")]
    branches += [_atrous(b, f, cf, a, rate, s2b=s2b) for rate in (6, 12, 18)]
    pool = b.op("MEAN", f, _i32(1, 2), keep_dims=True)
    pool = _conv(b, pool, cf, a, fused_activation_function="RELU")
    branches.append(b.op("RESIZE_BILINEAR", pool, _i32(g, g), shape=(1, g, g, a)))
    y = _conv(b, b.op("CONCATENATION", *branches, axis=3), 5 * a, a,
              fused_activation_function="RELU")  # fmt: skip
    _, q, _, _ = _shape(b, low)
    y = b.op("RESIZE_BILINEAR", y, _i32(q, q), align_corners=True, shape=(1, q, q, a))
    skip = _conv(b, low, 2 * c, 48, fused_activation_function="RELU")
    y = sep(b.op("CONCATENATION", y, skip, axis=3), a + 48, a, 1)
    y = _conv(b, y, a, classes)
    y = b.op("RESIZE_BILINEAR", y, _i32(h, h), align_corners=True, shape=(1, h, h, classes))
    if s2b:
        y = b.op("ARG_MAX", y, np.array(3, np.int32), output_type="INT32", shape=(1, h, h),
                 dtype="int32")  # fmt: skip
    return b.build(outputs=[y])


# ---- style ---------------------------------------------------------------------------------


def _instance_norm(b: GraphBuilder, x: str, c: int) -> str:
    mu = b.op("MEAN", x, _i32(1, 2), keep_dims=True)
    cen = b.op("SUB", x, mu)
    var = b.op("MEAN", b.op("MUL", cen, cen), _i32(1, 2), keep_dims=True)
    y = b.op("MUL", cen, b.op("RSQRT", b.op("ADD", var, _f32(1e-3))))
    return b.op("ADD", b.op("MUL", y, np.ones(c, np.float32)), np.zeros(c, np.float32))


def _reflect_conv(b: GraphBuilder, x: str, cin: int, cout: int, k: int, stride: int = 1) -> str:
    p = k // 2
    x = b.op("MIRROR_PAD", x, _i32(0, 0, p, p, p, p, 0, 0).reshape(4, 2), mode="REFLECT")
    return _conv(b, x, cin, cout, k, padding="VALID", stride_h=stride, stride_w=stride)


def style(h: int, c: int, blocks: int, *, resize_up: bool = False) -> nx.MultiDiGraph:
    b = GraphBuilder(f"style_{h}_{c}_{blocks}" + ("_resize" if resize_up else ""))

    def layer(x: str, cin: int, cout: int, k: int, stride: int = 1, relu: bool = True) -> str:
        y = _instance_norm(b, _reflect_conv(b, x, cin, cout, k, stride), cout)
        return b.op("RELU", y) if relu else y

    x = layer(b.input("content", (1, h, h, 3)), 3, c, 9)
    x = layer(layer(x, c, 2 * c, 3, 2), 2 * c, 4 * c, 3, 2)
    for _ in range(blocks):
        r = layer(layer(x, 4 * c, 4 * c, 3), 4 * c, 4 * c, 3, relu=False)
        x = b.op("ADD", x, r)
    cin = 4 * c
    for cout in (2 * c, c):
        _, hh, ww, _ = _shape(b, x)
        if resize_up:
            x = b.op("RESIZE_NEAREST_NEIGHBOR", x, _i32(2 * hh, 2 * ww),
                     shape=(1, 2 * hh, 2 * ww, cin))  # fmt: skip
            x = layer(x, cin, cout, 3)
        else:
            up = _i32(1, 2 * hh, 2 * ww, cout)
            x = b.op("TRANSPOSE_CONV", up, _w(cout, 3, 3, cin), x, np.zeros(cout, np.float32),
                     padding="SAME", stride_h=2, stride_w=2)  # fmt: skip
            x = b.op("RELU", _instance_norm(b, x, cout))
        cin = cout
    y = b.op("TANH", _reflect_conv(b, x, c, 3, 9))
    return b.build(outputs=[b.op("ADD", b.op("MUL", y, _f32(127.5)), _f32(127.5))])


# ---- palm ----------------------------------------------------------------------------------


def _blaze(b: GraphBuilder, x: str, cin: int, cout: int, stride: int = 1) -> str:
    y = _conv(b, _dw(b, x, cin, 5, stride_h=stride, stride_w=stride), cin, cout)
    s = x
    if stride == 2:
        s = b.op("MAX_POOL_2D", s, filter_height=2, filter_width=2, stride_h=2, stride_w=2)
    if cout > cin:
        s = b.op("PAD", s, _i32(0, 0, 0, 0, 0, 0, 0, cout - cin).reshape(4, 2))
    return b.op("RELU", b.op("ADD", y, s))


def palm(h: int, c: int, *, matrix: bool = False) -> nx.MultiDiGraph:
    b = GraphBuilder(f"palm_{h}_{c}" + ("_matrix" if matrix else ""))
    x = _conv(b, b.input("image", (1, h, h, 3)), 3, c, 5, stride_h=2, stride_w=2,
              fused_activation_function="RELU")  # fmt: skip
    x = _blaze(b, _blaze(b, x, c, c), c, c)
    x = _blaze(b, _blaze(b, x, c, 2 * c, 2), 2 * c, 2 * c)  # h / 4
    p8 = _blaze(b, _blaze(b, x, 2 * c, 4 * c, 2), 4 * c, 4 * c)  # h / 8
    p16 = _blaze(b, _blaze(b, p8, 4 * c, 4 * c, 2), 4 * c, 4 * c)  # h / 16
    p32 = _blaze(b, _blaze(b, p16, 4 * c, 4 * c, 2), 4 * c, 4 * c)  # h / 32

    def top_down(src: str, dst: str) -> str:
        _, g, _, _ = _shape(b, dst)
        up = b.op("RESIZE_BILINEAR", src, _i32(g, g), shape=(1, g, g, 4 * c))
        return b.op("RELU", b.op("ADD", dst, _conv(b, up, 4 * c, 4 * c)))

    p16 = top_down(p32, p16)
    p8 = top_down(p16, p8)
    scores, raw, centres, sizes = [], [], [], []
    for feat, per_cell in ((p8, 2), (p16, 6)):
        _, g, _, _ = _shape(b, feat)
        n = g * g * per_cell
        scores.append(b.op("RESHAPE", _conv(b, feat, 4 * c, per_cell), _i32(1, n, 1)))
        raw.append(b.op("RESHAPE", _conv(b, feat, 4 * c, per_cell * 18), _i32(1, n, 18)))
        ys, xs = np.meshgrid((np.arange(g) + 0.5) / g, (np.arange(g) + 0.5) / g, indexing="ij")
        centres.append(np.repeat(np.stack([xs.ravel(), ys.ravel()], axis=1), per_cell, axis=0))
        sizes.append(np.full((n, 2), 1.0))
    n = sum(a.shape[0] for a in centres)
    score = b.op("CONCATENATION", *scores, axis=1)
    score = b.op("MINIMUM", b.op("MAXIMUM", score, _f32(-100.0)), _f32(100.0))
    score = b.op("LOGISTIC", score)  # (1, n, 1)
    reg = b.op("RESHAPE", b.op("CONCATENATION", *raw, axis=1), _i32(1, n, 9, 2))
    centre = np.concatenate(centres)[None, :, None].astype(np.float32)  # (1, n, 1, 2)
    offset = np.concatenate([centre, np.zeros_like(centre), np.repeat(centre, 7, axis=2)], 2)
    dec = b.op("ADD", b.op("MUL", reg, (np.concatenate(sizes)[None, :, None] / h)
                           .astype(np.float32)), offset)  # fmt: skip
    mid = b.op("SLICE", dec, _i32(0, 0, 0, 0), _i32(1, n, 1, 2), shape=(1, n, 1, 2))
    half = b.op("MUL", b.op("SLICE", dec, _i32(0, 0, 1, 0), _i32(1, n, 1, 2), shape=(1, n, 1, 2)),
                _f32(0.5))  # fmt: skip
    box = b.op("CONCATENATION", b.op("SUB", mid, half), b.op("ADD", mid, half), axis=2)
    box = b.op("RESHAPE", box, _i32(1, n, 4))
    kps = b.op("SLICE", dec, _i32(0, 0, 2, 0), _i32(1, n, 7, 2), shape=(1, n, 7, 2))
    outs = [box, b.op("RESHAPE", kps, _i32(1, n, 14)), score]
    if matrix:
        best = b.op("ARG_MAX", b.op("RESHAPE", score, _i32(1, n)), np.array(1, np.int32),
                    output_type="INT32", shape=(1,), dtype="int32")  # fmt: skip
        lm = b.op("GATHER", kps, best, axis=1, shape=(1, 1, 7, 2))
        lm = b.op("PAD", b.op("RESHAPE", lm, _i32(1, 7, 2)), _i32(0, 0, 0, 0, 0, 1).reshape(3, 2))
        outs.append(b.op("CUSTOM:Landmarks2TransformMatrix", lm, shape=(1, 4, 4),
                         dtype="float32"))  # fmt: skip
    return b.build(outputs=outs)


# ---- onset ---------------------------------------------------------------------------------

#: Harmonics stacked on the CQT-like plane (basic-pitch's: a sub-harmonic and seven).
_HARMONICS = (0.5, 1, 2, 3, 4, 5, 6, 7)


def onset(frames: int, semitones: int, c: int) -> nx.MultiDiGraph:
    bins = 3 * semitones  # three bins a semitone
    b = GraphBuilder(f"onset_{frames}_{semitones}_{c}")
    x = b.input("cqt", (1, frames, bins, 1))
    planes = []
    for harmonic in _HARMONICS:
        shift = round(36 * math.log2(harmonic))
        if shift == 0:
            planes.append(x)
            continue
        lo, keep = (shift, bins - shift) if shift > 0 else (0, bins + shift)
        s = b.op("SLICE", x, _i32(0, 0, lo, 0), _i32(1, frames, keep, 1),
                 shape=(1, frames, keep, 1))  # fmt: skip
        pad = (0, shift) if shift > 0 else (-shift, 0)
        planes.append(b.op("PAD", s, _i32(0, 0, 0, 0, *pad, 0, 0).reshape(4, 2)))
    k = len(_HARMONICS)
    hs = b.op("CONCATENATION", *planes, axis=3)  # (1, frames, bins, 8)
    hs = b.op("ADD", b.op("MUL", hs, np.full(k, 0.5, np.float32)), np.zeros(k, np.float32))
    y = _conv(b, hs, k, c, 5, fused_activation_function="RELU")
    y = _conv(b, y, c, 8, (3, 39), fused_activation_function="RELU")
    contour = b.op("LOGISTIC", _conv(b, y, 8, 1, 5))  # (1, frames, bins, 1)
    note = _conv(b, contour, 1, 32, 7, stride_w=3, fused_activation_function="RELU")
    note = b.op("LOGISTIC", _conv(b, note, 32, 1, (7, 3)))  # (1, frames, semitones, 1)
    on = _conv(b, hs, k, 32, 5, stride_w=3, fused_activation_function="RELU")
    on = b.op("LOGISTIC", _conv(b, b.op("CONCATENATION", on, note, axis=3), 33, 1, 3))
    outs = [b.op("SQUEEZE", t, squeeze_dims=[3], shape=(1, frames, w))
            for t, w in ((contour, bins), (note, semitones), (on, semitones))]  # fmt: skip
    return b.build(outputs=outs)


#: Family -> its models (three sizes each). Not to be measured or looked at before session 5's
#: final learn.
FOURTH_FAMILIES: dict[str, tuple[Callable[[], nx.MultiDiGraph], ...]] = {
    "ghostnet": (lambda: ghostnet(128, 0.5, 100), lambda: ghostnet(160, 1.0, 1000),
                 lambda: ghostnet(224, 0.75, 1000)),  # fmt: skip
    "mobilebert": (lambda: mobilebert(64, 2, 8000), lambda: mobilebert(128, 1, 30522),
                   lambda: mobilebert(32, 3, 8000)),  # fmt: skip
    "yolo": (lambda: yolo(160, 16, 80), lambda: yolo(224, 16, 20, top=100),
             lambda: yolo(320, 24, 80)),  # fmt: skip
    "aspp": (lambda: aspp(128, 16, 21), lambda: aspp(224, 16, 21, s2b=True),
             lambda: aspp(256, 24, 2)),  # fmt: skip
    "style": (lambda: style(128, 16, 3), lambda: style(192, 32, 5),
              lambda: style(256, 16, 3, resize_up=True)),  # fmt: skip
    "palm": (lambda: palm(192, 32), lambda: palm(128, 24, matrix=True), lambda: palm(256, 32)),
    "onset": (lambda: onset(86, 88, 16), lambda: onset(172, 88, 32), lambda: onset(64, 48, 16)),
}

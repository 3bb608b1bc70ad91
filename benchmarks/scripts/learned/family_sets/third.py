"""The third held-out set of families (issue 47, session 4): written before that round's tuning.

The first five families (``families.FAMILIES``) and the second six (``HELDOUT_FAMILIES``) have
both been looked at and tuned on. These six put ops where neither set nor any sampler did, and
are measured and reported once, on the round's final learn:

- ``unet``: a depth / matting decoder (U-Net-like): convolutions down by max pools, back up by
  RESIZE_NEAREST_NEIGHBOR, each level concatenated with its encoder skip (CONCATENATION on
  channels), a sigmoid matte or a ReLU depth map;
- ``pose``: a pose / hand landmark head with heatmaps read by a soft-argmax (no ARG_MAX): the
  heatmaps reshaped to (keypoints, pixels) by RESHAPE + TRANSPOSE, a sharpened SOFTMAX over the
  pixels, the expected coordinates by a BATCH_MATMUL with the pixel grid, a visibility score by
  REDUCE_MAX;
- ``speech``: a speech / TTS-like 1-D convolution stack (mel frames): EXPAND_DIMS to a plane,
  (1 x k) convolutions to twice the channels gated without a GRU (SPLIT, LOGISTIC, MUL: a GLU),
  a (1 x 7) depthwise convolution, residual ADDs, a TANH post-net, SQUEEZE back to frames;
- ``vit``: a ViT-tiny: a patch-embedding convolution (kernel = stride = patch), the tokens with
  a class token (CONCATENATION of a constant) and position embeddings, LayerNorm written as
  MEAN / SQUARED_DIFFERENCE / RSQRT, multi-head attention, a GELU MLP, the class token cut by
  STRIDED_SLICE to a classifier;
- ``crnn``: an OCR model (CRNN-like): convolutions and (2, 2) / (2, 1) max pools to a
  one-pixel-high feature line, RESHAPE + TRANSPOSE to a time-major sequence, a forward and a
  reversed (STRIDED_SLICE with stride -1) projection added, every second step kept (strided
  STRIDED_SLICE), LOG_SOFTMAX over the characters;
- ``facemesh``: a face-mesh-like regressor: a strided stem, residual depthwise blocks with PReLU,
  max-pooled shortcuts and channel PADs, 468 landmarks regressed by a convolution over the last
  plane; in one model the input is cropped by MediaPipe's custom ``TransformTensorBilinear``
  (which plain LiteRT cannot run: priced by its rule), in another a refinement heatmap is
  upsampled by the custom ``Convolution2DTransposeBias``.

    python -m tacopt.benchmarks.scripts.learned.families write DIR --set third
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable

import networkx as nx
import numpy as np

from tacopt.benchmarks.scripts.learned.family_sets.blocks import conv, depthwise, weights
from tacopt.benchmarks.scripts.learned.family_sets.blocks import i32 as _i32
from tacopt.fusion.ir.builder import GraphBuilder

#: The third set's weights: a generator of their own, so the files are those measured.
_RNG = np.random.default_rng(474747)

_w = functools.partial(weights, rng=_RNG)
_conv = functools.partial(conv, rng=_RNG)
_dw = functools.partial(depthwise, rng=_RNG)



def unet(h: int, c: int, levels: int, *, matte: bool = True) -> nx.MultiDiGraph:
    b = GraphBuilder(f"unet_{h}_{c}_{levels}" + ("_matte" if matte else "_depth"))
    x = b.input("x", (1, h, h, 3))
    cin, skips = 3, []
    for i in range(levels):
        x = _conv(b, x, cin, c << i, 3, fused_activation_function="RELU")
        skips.append((x, c << i))
        x = b.op("MAX_POOL_2D", x, filter_height=2, filter_width=2, stride_h=2, stride_w=2)
        cin = c << i
    x = _conv(b, x, cin, cin * 2, 3, fused_activation_function="RELU")
    cin *= 2
    for skip, cs in reversed(skips):
        n, hh, ww, _ = b.tensor(skip).shape
        x = b.op("RESIZE_NEAREST_NEIGHBOR", x, _i32(hh, ww), half_pixel_centers=matte,
                 shape=(n, hh, ww, cin))  # fmt: skip
        x = b.op("CONCATENATION", x, skip, axis=3)
        x = _conv(b, x, cin + cs, cs, 3, fused_activation_function="RELU")
        cin = cs
    y = _conv(b, x, cin, 1, 1)
    return b.build(outputs=[b.op("LOGISTIC", y) if matte else b.op("RELU", y)])


def pose(h: int, c: int, points: int) -> nx.MultiDiGraph:
    b = GraphBuilder(f"pose_{h}_{c}_{points}")
    x = _conv(b, b.input("x", (1, h, h, 3)), 3, c, 3, stride_h=2, stride_w=2,
              fused_activation_function="RELU6")  # fmt: skip
    x = _conv(b, _dw(b, x, c, fused_activation_function="RELU6"), c, 2 * c)
    x = _dw(b, x, 2 * c, stride_h=2, stride_w=2, fused_activation_function="RELU6")
    x = _conv(b, x, 2 * c, 2 * c, fused_activation_function="RELU6")
    heat = _conv(b, x, 2 * c, points)  # (1, q, q, points)
    q = h // 4
    flat = b.op("TRANSPOSE", b.op("RESHAPE", heat, _i32(1, q * q, points)), _i32(0, 2, 1))
    prob = b.op("SOFTMAX", flat, beta=10.0)  # (1, points, q * q), sharpened
    ys, xs = np.meshgrid(np.arange(q), np.arange(q), indexing="ij")
    grid = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)[None] / q
    coords = b.op("BATCH_MATMUL", prob, grid)  # (1, points, 2): expected x, y
    vis = b.op("LOGISTIC", b.op("REDUCE_MAX", flat, _i32(2)))  # (1, points)
    return b.build(outputs=[coords, vis])


def speech(frames: int, mels: int, c: int, blocks: int) -> nx.MultiDiGraph:
    b = GraphBuilder(f"speech_{frames}_{mels}_{c}_{blocks}")
    x = b.op("EXPAND_DIMS", b.input("mel", (1, frames, mels)), np.array(1, np.int32),
             shape=(1, 1, frames, mels))  # fmt: skip

    def glu(x: str, cin: int, k: int) -> str:
        a, g = b.op("SPLIT", np.array(3, np.int32), _conv(b, x, cin, 2 * c, (1, k)), num_splits=2)
        return b.op("MUL", a, b.op("LOGISTIC", g))

    x = glu(x, mels, 5)
    for _ in range(blocks):
        y = _dw(b, x, c, (1, 7))
        y = glu(y, c, 3)
        x = b.op("ADD", x, y)
    y = b.op("TANH", _conv(b, x, c, mels, (1, 5)))
    y = b.op("ADD", y, b.op("EXPAND_DIMS", b.input("prenet", (1, frames, mels)),
                            np.array(1, np.int32), shape=(1, 1, frames, mels)))  # fmt: skip
    return b.build(outputs=[b.op("SQUEEZE", y, squeeze_dims=[1], shape=(1, frames, mels))])


def _layer_norm(b: GraphBuilder, x: str, dim: int) -> str:
    mu = b.op("MEAN", x, _i32(2), keep_dims=True)
    var = b.op("MEAN", b.op("SQUARED_DIFFERENCE", x, mu), _i32(2), keep_dims=True)
    inv = b.op("RSQRT", b.op("ADD", var, np.array([1e-6], np.float32)))
    y = b.op("MUL", b.op("SUB", x, mu), inv)
    return b.op("ADD", b.op("MUL", y, np.ones(dim, np.float32)), np.zeros(dim, np.float32))


def vit(img: int, patch: int, dim: int, heads: int, layers: int) -> nx.MultiDiGraph:
    b = GraphBuilder(f"vit_{img}_{patch}_{dim}_{heads}_{layers}")
    g = img // patch
    n, d = g * g + 1, dim // heads
    p = _conv(b, b.input("x", (1, img, img, 3)), 3, dim, patch, stride_h=patch, stride_w=patch,
              padding="VALID")  # fmt: skip
    t = b.op("RESHAPE", p, _i32(1, g * g, dim))
    t = b.op("CONCATENATION", _w(1, 1, dim), t, axis=1)
    t = b.op("ADD", t, _w(1, n, dim))

    def fc(x: str, cin: int, cout: int, **opts: str) -> str:
        return b.op("FULLY_CONNECTED", x, _w(cout, cin), np.zeros(cout, np.float32),
                    keep_num_dims=True, **opts)  # fmt: skip

    for _ in range(layers):
        h = _layer_norm(b, t, dim)
        q, k, v = (b.op("TRANSPOSE", b.op("RESHAPE", fc(h, dim, dim), _i32(1, n, heads, d)),
                        _i32(*perm))
                   for perm in ((0, 2, 1, 3), (0, 2, 3, 1), (0, 2, 1, 3)))  # fmt: skip
        a = b.op("SOFTMAX", b.op("MUL", b.op("BATCH_MATMUL", q, k),
                                 np.array([d**-0.5], np.float32)))  # fmt: skip
        o = b.op("TRANSPOSE", b.op("BATCH_MATMUL", a, v), _i32(0, 2, 1, 3))
        t = b.op("ADD", t, fc(b.op("RESHAPE", o, _i32(1, n, dim)), dim, dim))
        m = b.op("GELU", fc(_layer_norm(b, t, dim), dim, 4 * dim))
        t = b.op("ADD", t, fc(m, 4 * dim, dim))
    cls = b.op("STRIDED_SLICE", _layer_norm(b, t, dim), _i32(0, 0, 0), _i32(1, 1, dim),
               _i32(1, 1, 1), shape=(1, 1, dim))  # fmt: skip
    y = b.op("FULLY_CONNECTED", b.op("RESHAPE", cls, _i32(1, dim)), _w(100, dim),
             np.zeros(100, np.float32))  # fmt: skip
    return b.build(outputs=[b.op("SOFTMAX", y)])


def crnn(width: int, c: int, chars: int) -> nx.MultiDiGraph:
    b = GraphBuilder(f"crnn_{width}_{c}_{chars}")
    x = b.input("line", (1, 32, width, 1))
    cin = 1
    for cout, (ph, pw) in ((c, (2, 2)), (2 * c, (2, 2)), (4 * c, (2, 1)), (4 * c, (2, 1))):
        x = _conv(b, x, cin, cout, 3, fused_activation_function="RELU")
        x = b.op("MAX_POOL_2D", x, filter_height=ph, filter_width=pw, stride_h=ph, stride_w=pw)
        cin = cout
    x = _conv(b, x, cin, cin, (2, 1), padding="VALID", fused_activation_function="RELU")
    steps = width // 4
    seq = b.op("TRANSPOSE", b.op("RESHAPE", x, _i32(1, steps, cin)), _i32(1, 0, 2))  # (T, 1, C)

    def fc(x: str) -> str:
        return b.op("FULLY_CONNECTED", x, _w(chars, cin), np.zeros(chars, np.float32),
                    keep_num_dims=True)  # fmt: skip

    def reverse(x: str, last: int) -> str:
        return b.op("STRIDED_SLICE", x, _i32(0, 0, 0), _i32(0, 0, 0), _i32(-1, 1, 1),
                    begin_mask=7, end_mask=7, shape=(steps, 1, last))  # fmt: skip

    logits = b.op("ADD", fc(seq), reverse(fc(reverse(seq, cin)), chars))
    kept = b.op("STRIDED_SLICE", logits, _i32(0, 0, 0), _i32(steps, 1, chars), _i32(2, 1, 1),
                shape=((steps + 1) // 2, 1, chars))  # fmt: skip
    return b.build(outputs=[b.op("LOG_SOFTMAX", kept)])


def facemesh(h: int, c: int, *, crop: bool = False, refine: bool = False) -> nx.MultiDiGraph:
    suffix = ("_crop" if crop else "") + ("_refine" if refine else "")
    b = GraphBuilder(f"facemesh_{h}_{c}{suffix}")
    if crop:
        x = b.op("CUSTOM:TransformTensorBilinear", b.input("image", (1, 2 * h, 2 * h, 3)),
                 b.input("matrix", (1, 4, 4)), shape=(1, h, h, 3), dtype="float32")  # fmt: skip
    else:
        x = b.input("x", (1, h, h, 3))

    def prelu(x: str, ch: int) -> str:
        return b.op("PRELU", x, np.full((1, 1, ch), 0.25, np.float32))

    x = prelu(_conv(b, x, 3, c, 3, stride_h=2, stride_w=2), c)
    cin, mid = c, None
    for cout, stride in ((c, 1), (2 * c, 2), (2 * c, 1), (4 * c, 2), (4 * c, 2), (4 * c, 2)):
        y = _conv(b, _dw(b, x, cin, 3, stride_h=stride, stride_w=stride), cin, cout)
        s = x
        if stride == 2:
            s = b.op("MAX_POOL_2D", s, filter_height=2, filter_width=2, stride_h=2, stride_w=2)
        if cout > cin:
            s = b.op("PAD", s, _i32(0, 0, 0, 0, 0, 0, 0, cout - cin).reshape(4, 2))
        x = prelu(b.op("ADD", y, s), cout)
        cin = cout
        if mid is None and stride == 2:
            mid = (x, cout)
    q = b.tensor(x).shape[1]
    lm = _conv(b, x, cin, 468 * 3, q, padding="VALID")
    outs = [b.op("RESHAPE", lm, _i32(1, 468, 3)),
            b.op("LOGISTIC", _conv(b, x, cin, 1, q, padding="VALID"))]  # fmt: skip
    if refine:
        assert mid is not None, "a refined face mesh needs a stride-2 stage"
        m, cm = mid
        mh = b.tensor(m).shape[1]
        outs.append(b.op("CUSTOM:Convolution2DTransposeBias", m, _w(4, 2, 2, cm),
                         np.zeros(4, np.float32), shape=(1, 2 * mh, 2 * mh, 4),
                         custom_options=struct.pack("<3i", 1, 2, 2)))  # fmt: skip
    return b.build(outputs=outs)


#: Family -> its models (three sizes each). Not to be measured or looked at before session 4's
#: final learn.
THIRD_FAMILIES: dict[str, tuple[Callable[[], nx.MultiDiGraph], ...]] = {
    "unet": (lambda: unet(128, 8, 3), lambda: unet(96, 16, 2, matte=False),
             lambda: unet(160, 12, 3)),  # fmt: skip
    "pose": (lambda: pose(128, 16, 21), lambda: pose(192, 24, 17), lambda: pose(256, 16, 33)),
    "speech": (lambda: speech(100, 80, 64, 2), lambda: speech(200, 80, 128, 3),
               lambda: speech(64, 40, 96, 2)),  # fmt: skip
    "vit": (lambda: vit(96, 16, 96, 3, 2), lambda: vit(128, 16, 128, 4, 1),
            lambda: vit(112, 8, 64, 2, 1)),  # fmt: skip
    "crnn": (lambda: crnn(100, 16, 37), lambda: crnn(160, 32, 80), lambda: crnn(256, 24, 97)),
    "facemesh": (lambda: facemesh(128, 16), lambda: facemesh(192, 16, crop=True),
                 lambda: facemesh(160, 24, refine=True)),  # fmt: skip
}

"""The ``tail`` prior of the sweep: op kinds production mobile models use that the generic
prior never drew.

The generic prior (:mod:`tacopt.cost_models.learned.sampling.samplers`) covers the kinds of the
classic CNN and transformer families. Models built for phones (face, hand and pose landmark
networks, detectors, segmenters, audio taggers) also use parametric ReLUs, resizes and
transposed convolutions for their decoders, divisions and exponentials in their heads, packs,
unpacks and depth-to-space shuffles. An op of a kind the sweep never measured is priced by the
fallback (its family's floor), which can be off several times. This prior draws those kinds
from the same generic design rules (shapes from :func:`samplers.draw_shape`, channels from the
common widths; the kind list is the TFLite builtin set XNNPACK or the builtin kernels run, not
any model's op list), so ``tacopt learn`` measures them in a phase of their own.

>>> G = SAMPLERS["PRELU"][0](np.random.default_rng(0))
>>> [G.nodes[n]["op"].kind for n in G]
['PRELU']
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.sampling.samplers import (
    SAMPLERS,
    Rng,
    activation,
    binary_sampler,
    draw_channels,
    draw_shape,
    finish,
    softmax_sampler,
    unary_sampler,
)
from tacopt.fusion.ir.builder import GraphBuilder


def _feature_map(rng: Rng, *, max_elements: int = 1_000_000) -> tuple[int, int, int, int]:
    """An NHWC activation (square 85 % of the time) of at most ``max_elements`` elements."""
    n, h, w, c = draw_shape(rng, 4, max_elements=max_elements)
    return n, h, w, c


def _prelu(rng: Rng) -> nx.MultiDiGraph:
    """A parametric ReLU: one slope per channel (``(1, 1, C)``, the Keras layout), or one per
    element, or a single one."""
    shape = draw_shape(rng) if rng.random() < 0.25 else _feature_map(rng)
    c = shape[-1]
    form = rng.choice(["channel", "channel", "channel", "full", "scalar"])
    alpha_shape = {
        "channel": (*([1] * (len(shape) - 2)), c),
        "full": shape[1:],
        "scalar": (1,),
    }[str(form)]
    b = GraphBuilder("prelu")
    alpha = rng.uniform(0.05, 0.3, alpha_shape).astype(np.float32)
    return finish(b, b.op("PRELU", b.input("x", shape), alpha))


def _leaky_relu(rng: Rng) -> nx.MultiDiGraph:
    b = GraphBuilder("leaky_relu")
    alpha = float(rng.choice([0.01, 0.1, 0.2]))
    return finish(b, b.op("LEAKY_RELU", b.input("x", draw_shape(rng)), alpha=alpha))


#: Image-like planes an upsampling skip reads: 1-4 channels.
_IMAGE_CHANNELS = (1, 2, 3, 3, 4)


def _resize(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """Upsampling by 2 (mostly), 4 or to a fixed size, as decoders and segmenters do; a third
    of the time an image of 1-4 channels by 2-4 (a super-resolution skip: XNNPACK's nearest
    upsampling of 3 channels ran at ~11 ns an output pixel, a model that drew only wider maps
    priced it at 0.3x)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        if rng.random() < 0.35:
            side = int(rng.choice([32, 48, 64, 96, 128, 160, 192, 256]))
            n, h, w, c = 1, side, side, int(rng.choice(_IMAGE_CHANNELS))
            factor = float(rng.choice([2, 2, 3, 4]))
        else:
            n, h, w, c = _feature_map(rng, max_elements=250_000)
            factor = float(rng.choice([2, 2, 2, 4, 0.5, 1.5]))
        oh, ow = max(int(h * factor), 1), max(int(w * factor), 1)
        while oh * ow * c > 1_500_000:
            oh, ow = max(oh // 2, 1), max(ow // 2, 1)
        half = bool(rng.random() < 0.6)
        align = (not half) and bool(rng.random() < 0.3)
        b = GraphBuilder(kind.lower())
        y = b.op(
            kind,
            b.input("x", (n, h, w, c)),
            np.array([oh, ow], np.int32),
            align_corners=align,
            half_pixel_centers=half,
            shape=(n, oh, ow, c),
        )
        return finish(b, y)

    return build


def _transpose_conv(rng: Rng) -> nx.MultiDiGraph:
    """A decoder's upsampling convolution: stride 2 (mostly), kernel 2-4, SAME padding; a
    third of the time a segmenter's head, 1-8 output channels (XNNPACK runs those at 2-17
    GFLOP/s where wider ones run at 40-250: a learn that drew few priced MediaPipe's
    ``Convolution2DTransposeBias`` to 8 channels at 0.37x). Half of the heads are narrow
    decoders' last layers, 4-32 input channels on planes up to 192 x 192: 394 draws of heads
    with wide inputs left a segmenter's 8 -> 8 channel head at 0.26-0.39x (XNNPACK runs it at
    ~1 ns per input pixel, tap and input channel, whatever the output channels up to 8)."""
    head = rng.random() < 0.4
    while True:
        n, h, w, cin = _feature_map(rng, max_elements=400_000 if head else 200_000)
        if head and rng.random() < 0.5:
            side = int(rng.choice([24, 32, 48, 64, 96, 128, 192]))
            h, w, cin = side, side, int(rng.choice([4, 8, 8, 12, 16, 24, 32]))
        stride = int(rng.choice([2, 2, 2, 1]))
        k = int(rng.choice([2, 3, 4] if stride == 2 else [3]))
        cout = int(rng.choice([1, 2, 3, 4, 8])) if head else draw_channels(rng)
        oh, ow = h * stride, w * stride
        if oh * ow * cout * k * k * cin <= 4e8 and oh * ow * cout <= 1_500_000:
            break
    b = GraphBuilder("transpose_conv")
    x = b.input("x", (n, h, w, cin))
    weights = rng.normal(0, 0.1, (cout, k, k, cin)).astype(np.float32)
    bias = np.zeros(cout, np.float32) if rng.random() < 0.8 else None
    y = b.op(
        "TRANSPOSE_CONV",
        np.array([n, oh, ow, cout], np.int32),
        weights,
        x,
        bias,
        padding="SAME",
        stride_h=stride,
        stride_w=stride,
        fused_activation_function=activation(rng) if bias is not None else "NONE",
        shape=(n, oh, ow, cout),
        dtype="float32",  # not that of the first input (the output shape, int32)
    )
    return finish(b, y)


#: Lengths of a long last axis: a heatmap's pixels (32 x 32 to 96 x 96), a vocabulary's logits.
_LONG_AXIS = (1024, 2304, 4096, 9216)


def _reduce(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """A reduction over H and W, or the last axis; a quarter of the time over the long last axis
    of a few rows (a keypoint's visibility, the max of its heatmap ``(1, K, P)``: the third
    set's were priced at 0.73-0.8x by a learn whose reduced rows were at most 1,280 long)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        shape = draw_shape(rng)
        if rng.random() < 0.25:
            shape = (1, int(rng.choice([1, 4, 17, 21, 33, 64])), int(rng.choice(_LONG_AXIS)))
        axes = [1, 2] if len(shape) == 4 and rng.random() < 0.6 else [len(shape) - 1]
        keep = bool(rng.random() < 0.5)
        b = GraphBuilder(kind.lower())
        y = b.op(kind, b.input("x", shape), np.array(axes, np.int32), keep_dims=keep)
        return finish(b, y)

    return build


def _pack(rng: Rng) -> nx.MultiDiGraph:
    shape = draw_shape(rng, int(rng.choice([2, 3])))
    n = int(rng.choice([2, 2, 3, 4]))
    axis = int(rng.integers(0, len(shape) + 1))
    b = GraphBuilder("pack")
    xs = [b.input(f"x{i}", shape) for i in range(n)]
    out = (*shape[:axis], n, *shape[axis:])
    return finish(b, b.op("PACK", *xs, values_count=n, axis=axis, shape=out))


def _unpack(rng: Rng) -> nx.MultiDiGraph:
    n = int(rng.choice([2, 3, 4]))
    inner = draw_shape(rng, int(rng.choice([2, 3])))
    axis = int(rng.integers(0, len(inner) + 1))
    shape = (*inner[:axis], n, *inner[axis:])
    b = GraphBuilder("unpack")
    ys = b.op("UNPACK", b.input("x", shape), num=n, axis=axis, shape=(inner,) * n)
    return b.build(outputs=list(ys))


def _depth_to_space(rng: Rng) -> nx.MultiDiGraph:
    block = int(rng.choice([2, 2, 4]))
    n, h, w, c = _feature_map(rng, max_elements=400_000)
    c = max(c // (block * block), 1) * block * block
    b = GraphBuilder("depth_to_space")
    y = b.op(
        "DEPTH_TO_SPACE",
        b.input("x", (n, h, w, c)),
        block_size=block,
        shape=(n, h * block, w * block, c // (block * block)),
    )
    return finish(b, y)


def _space_to_depth(rng: Rng) -> nx.MultiDiGraph:
    block = 2
    n, h, w, c = _feature_map(rng, max_elements=400_000)
    h, w = max(h // block, 1) * block, max(w // block, 1) * block
    b = GraphBuilder("space_to_depth")
    y = b.op(
        "SPACE_TO_DEPTH",
        b.input("x", (n, h, w, c)),
        block_size=block,
        shape=(n, h // block, w // block, c * block * block),
    )
    return finish(b, y)


def _pad_kind(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """PADV2 (an explicit fill value) and MIRROR_PAD (reflected borders): spatial, or channels
    padded up to a wider block (a detector's shortcut)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        n, h, w, c = _feature_map(rng)
        if kind == "PADV2" and rng.random() < 0.3:
            pads = [[0, 0], [0, 0], [0, 0], [0, int(c * rng.choice([1, 0.5])) or 1]]
        else:
            p = int(rng.choice([1, 1, 2, 3]))
            p = min(p, h - 1, w - 1) if kind == "MIRROR_PAD" else p
            pads = [[0, 0], [p, p], [p, p], [0, 0]]
        out = tuple(d + lo + hi for d, (lo, hi) in zip((n, h, w, c), pads, strict=True))
        b = GraphBuilder(kind.lower())
        x = b.input("x", (n, h, w, c))
        if kind == "PADV2":
            y = b.op(kind, x, np.array(pads, np.int32), np.zeros((), np.float32), shape=out)
        else:
            y = b.op(kind, x, np.array(pads, np.int32), mode="REFLECT", shape=out)
        return finish(b, y)

    return build


def _gather(rng: Rng) -> nx.MultiDiGraph:
    """An embedding lookup (constant table, runtime indices) or a gather along a feature map's
    channels."""
    b = GraphBuilder("gather")
    if rng.random() < 0.6:
        vocab, dim = int(rng.choice([100, 1000, 5000, 30000])), int(rng.choice([32, 64, 128, 256]))
        seq = int(rng.choice([1, 16, 64, 128]))
        table = rng.normal(0, 0.1, (vocab, dim)).astype(np.float32)
        ids = b.input("i", (1, seq), dtype="int32")
        return finish(b, b.op("GATHER", table, ids, axis=0, shape=(1, seq, dim)))
    shape = draw_shape(rng)
    k = max(int(shape[-1] * rng.choice([0.25, 0.5, 1.0])), 1)
    idx = rng.integers(0, shape[-1], k).astype(np.int32)
    out = (*shape[:-1], k)
    y = b.op("GATHER", b.input("x", shape), idx, axis=len(shape) - 1, shape=out)
    return finish(b, y)


#: The ``tail`` prior: these samplers and their weights (``tacopt measure --prior tail``); the
#: decoder and activation kinds weigh most (most used in the mobile families above).
TAIL_PRIOR: dict[str, float] = {
    "PRELU": 3.0,
    "RESIZE_BILINEAR": 2.0,
    "RESIZE_NEAREST_NEIGHBOR": 1.5,
    "TRANSPOSE_CONV": 3.5,
    "LEAKY_RELU": 1.0,
    "DIV": 1.0,
    "MINIMUM": 0.7,
    "EXP": 0.7,
    "SQRT": 0.5,
    "ABS": 0.5,
    "SUM": 0.7,
    "REDUCE_MAX": 0.7,
    "PACK": 0.7,
    "UNPACK": 0.7,
    "DEPTH_TO_SPACE": 0.7,
    "SPACE_TO_DEPTH": 0.5,
    "PADV2": 0.7,
    "MIRROR_PAD": 0.5,
    "GATHER": 0.7,
    # an audio model's log-magnitude spectrum (basic-pitch's CQT: squared parts, then a log)
    "LOG": 0.5,
    "SQUARE": 0.5,
    # the log-probabilities of a CTC or a classifier head (the builtin kernels: XNNPACK refuses it)
    "LOG_SOFTMAX": 0.7,
}

_TAIL_BUILDERS: dict[str, Callable[[Rng], nx.MultiDiGraph]] = {
    "PRELU": _prelu,
    "RESIZE_BILINEAR": _resize("RESIZE_BILINEAR"),
    "RESIZE_NEAREST_NEIGHBOR": _resize("RESIZE_NEAREST_NEIGHBOR"),
    "TRANSPOSE_CONV": _transpose_conv,
    "LEAKY_RELU": _leaky_relu,
    "DIV": binary_sampler("DIV"),
    "MINIMUM": binary_sampler("MINIMUM"),
    "EXP": unary_sampler("EXP"),
    "SQRT": unary_sampler("SQRT"),
    "ABS": unary_sampler("ABS"),
    "SUM": _reduce("SUM"),
    "REDUCE_MAX": _reduce("REDUCE_MAX"),
    "PACK": _pack,
    "UNPACK": _unpack,
    "DEPTH_TO_SPACE": _depth_to_space,
    "SPACE_TO_DEPTH": _space_to_depth,
    "PADV2": _pad_kind("PADV2"),
    "MIRROR_PAD": _pad_kind("MIRROR_PAD"),
    "GATHER": _gather,
    "LOG": unary_sampler("LOG"),
    "SQUARE": unary_sampler("SQUARE"),
    "LOG_SOFTMAX": softmax_sampler("LOG_SOFTMAX"),
}
SAMPLERS.update({k: (_TAIL_BUILDERS[k], w) for k, w in TAIL_PRIOR.items()})

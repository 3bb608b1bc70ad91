"""The per-kind priors of the sweep (:mod:`tacopt.cost_models.learned.sampling.sweep`): each sampler
draws one single-op graph, built with :class:`tacopt.fusion.ir.builder.GraphBuilder`, from a generic
prior of typical mobile-CNN / transformer values (never read from the shared zoo).

>>> G = SAMPLERS["CONV_2D"][0](np.random.default_rng(0))
>>> [G.nodes[n]["op"].kind for n in G]
['CONV_2D']
"""

from __future__ import annotations

import math
from collections.abc import Callable

import networkx as nx
import numpy as np

from tacopt.fusion.ir import Quantization
from tacopt.fusion.ir.builder import GraphBuilder, window_out

CHANNELS = (
    *(8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 112, 120, 128, 144, 160, 192, 240, 256),
    *(288, 320, 384, 480, 512, 576, 640, 672, 768, 960, 1024, 1152, 1280),
)
_ODDCHANNELS = (1, 3, 4, 6, 12, 20, 36, 100, 200)
SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 19, 20, 24, 28, 32, 38, 40, 48, 56, 64, 80)
SIZES_BIG = (96, 112, 128, 150, 160, 192, 224)
_ACTS = ("NONE", "NONE", "RELU", "RELU6")

#: Largest work per sample: keeps one configuration's timing short.
MAX_MACS = 4e8
MAX_ELEMENTS = 1_500_000

Rng = np.random.Generator


def draw_channels(rng: Rng) -> int:
    """A channel count: a multiple of 8 of :data:`CHANNELS` (76 %), an odd one (12 %), or any
    count of 2-1,024, log-uniform (12 %): networks not rounded to 8 (NASNet's 11-528,
    ShuffleNet's 58-464, GhostNet's) run XNNPACK's remainder paths."""
    u = rng.random()
    if u < 0.12:
        return int(rng.choice(_ODDCHANNELS))
    if u < 0.24:
        return int(round(math.exp(rng.uniform(math.log(2), math.log(1024)))))
    return int(rng.choice(CHANNELS))


def draw_size(rng: Rng) -> int:
    """A spatial size: one of :data:`SIZES_BIG` (25 %) or of :data:`SIZES`."""
    return int(rng.choice(SIZES_BIG if rng.random() < 0.25 else SIZES))


def draw_shape(
    rng: Rng, rank: int | None = None, *, max_elements: int = MAX_ELEMENTS
) -> tuple[int, ...]:
    """An activation shape: NHWC (60 %), (1, seq, features) or (rows, features), of at most
    ``max_elements`` elements."""
    rank = rank or int(rng.choice([4, 4, 4, 3, 2]))
    while True:
        if rank == 4:
            h = draw_size(rng)
            shape: tuple[int, ...] = (
                1,
                h,
                h if rng.random() < 0.85 else draw_size(rng),
                draw_channels(rng),
            )
        elif rank == 3:
            shape = (1, int(rng.choice([1, 4, 16, 49, 64, 77, 128, 196, 256])), draw_channels(rng))
        else:
            shape = (int(rng.choice([1, 1, 2, 8, 32])), draw_channels(rng))
        if math.prod(shape) <= max_elements:
            return shape


def _plane(rng: Rng) -> tuple[int, int]:
    """An activation's height and width: square (80 %), a row (1 x W: a 1-D convolution over
    time, as audio models run it; 8 %) or any two sizes (12 %: landscape inputs, spectrograms)."""
    u = rng.random()
    if u < 0.8:
        h = draw_size(rng)
        return h, h
    if u < 0.88:
        return 1, int(rng.choice([*SIZES[6:], *SIZES_BIG, 256, 400, 512]))
    return draw_size(rng), draw_size(rng)


def _kernel(rng: Rng, k: int, h: int) -> tuple[int, int]:
    """A ``k``-wide kernel for an ``h``-high input: 1 x k over a row, else k x k (85 %), 1 x k
    or k x 1 (factorized convolutions, as Inception's 1x7 / 7x1)."""
    if h == 1 or k == 1:
        return 1, k
    if rng.random() < 0.85:
        return k, k
    return (1, k) if rng.random() < 0.5 else (k, 1)


def _conv(rng: Rng) -> nx.MultiDiGraph:
    while True:
        k = int(rng.choice([1, 1, 1, 3, 3, 3, 5, 7]))
        stride = int(rng.choice([1, 1, 1, 2]))
        dil = 2 if k > 1 and stride == 1 and rng.random() < 0.08 else 1
        h, w = _plane(rng)
        kh, kw = _kernel(rng, k, h)
        sh = 1 if h == 1 else stride
        cin = int(rng.choice([3, 3, *CHANNELS])) if rng.random() < 0.9 else draw_channels(rng)
        cout = draw_channels(rng)
        pad = "SAME" if rng.random() < 0.8 else "VALID"
        out_h, out_w = window_out(h, kh, sh, pad, dil), window_out(w, kw, stride, pad, dil)
        if min(out_h, out_w) >= 1 and out_h * out_w * cout * kh * kw * cin <= MAX_MACS:
            break
    b = GraphBuilder("conv")
    x = b.input("x", (1, h, w, cin))
    weights = rng.normal(0, 0.1, (cout, kh, kw, cin))
    opts = dict(stride_h=sh, stride_w=stride, dilation_h_factor=dil, dilation_w_factor=dil)
    y = b.op(
        "CONV_2D",
        x,
        weights,
        np.zeros(cout),
        padding=pad,
        fused_activation_function=activation(rng),
        **opts,
    )
    return finish(b, y)


def _grouped_conv(rng: Rng) -> nx.MultiDiGraph:
    """A CONV_2D whose filter sees a slice of the input channels (``groups`` > 1): TFLite runs
    it outside XNNPACK's GEMM, several times slower per MAC (ConvNeXt-style exports)."""
    while True:
        k = int(rng.choice([1, 3, 5, 7, 7]))
        h, cin = draw_size(rng), int(rng.choice(CHANNELS))
        groups = cin if rng.random() < 0.5 else int(rng.choice([2, 4, 8, 16, 32]))
        if cin % groups == 0 and h * h * cin * k * k * (cin // groups) <= MAX_MACS:
            break
    b = GraphBuilder("grouped_conv")
    x = b.input("x", (1, h, h, cin))
    w = rng.normal(0, 0.1, (cin, k, k, cin // groups))
    y = b.op("CONV_2D", x, w, np.zeros(cin), fused_activation_function=activation(rng))
    return finish(b, y)


def activation(rng: Rng) -> str:
    return str(rng.choice(_ACTS))


def finish(b: GraphBuilder, y: str) -> nx.MultiDiGraph:
    """The graph ``b`` built, with ``y`` its one output."""
    return b.build(outputs=[y])


def _dwconv(rng: Rng) -> nx.MultiDiGraph:
    while True:
        k = int(rng.choice([3, 3, 3, 5, 7]))
        stride = int(rng.choice([1, 1, 2]))
        (h, w), c = _plane(rng), draw_channels(rng)
        kh, kw = _kernel(rng, k, h)
        sh = 1 if h == 1 else stride
        mult = 1 if rng.random() < 0.95 else 2
        pad = "SAME" if rng.random() < 0.85 else "VALID"
        out_h, out_w = window_out(h, kh, sh, pad), window_out(w, kw, stride, pad)
        if min(out_h, out_w) >= 1 and h * w * c <= MAX_ELEMENTS:
            break
    b = GraphBuilder("dwconv")
    x = b.input("x", (1, h, w, c))
    y = b.op(
        "DEPTHWISE_CONV_2D",
        x,
        rng.normal(0, 0.1, (1, kh, kw, c * mult)),
        np.zeros(c * mult),
        padding=pad,
        stride_h=sh,
        stride_w=stride,
        depth_multiplier=mult,
        fused_activation_function=activation(rng),
    )
    return finish(b, y)


def _fc(rng: Rng) -> nx.MultiDiGraph:
    while True:
        rows = int(rng.choice([1, 1, 1, 4, 16, 49, 64, 128, 196, 256]))
        cin, cout = draw_channels(rng), draw_channels(rng) if rng.random() < 0.9 else 1000
        if rows * cin * cout <= MAX_MACS:
            break
    b = GraphBuilder("fc")
    x = b.input("x", (rows, cin))
    y = b.op(
        "FULLY_CONNECTED",
        x,
        rng.normal(0, 0.1, (cout, cin)),
        np.zeros(cout),
        fused_activation_function=activation(rng),
    )
    return finish(b, y)


#: Transformer widths beyond :data:`CHANNELS` (hidden sizes, 4x MLP expansions).
_WIDE = (1536, 2048, 3072, 4096)


def _fc_tokens(rng: Rng) -> nx.MultiDiGraph:
    """A FULLY_CONNECTED over the pixels (tokens) of a feature map, keeping its dimensions
    (transformers, ConvNeXt's pointwise MLPs): up to thousands of rows, and a quarter of the
    time a transformer's MLP width (up to 2.5x :data:`MAX_MACS`: ViT-B's 197 x 768 x 3,072)."""
    while True:
        h = int(rng.choice([7, 14, 14, 28, 28, 56]))
        cin, cout = draw_channels(rng), draw_channels(rng)
        wide = rng.random() < 0.25
        if wide and rng.random() < 0.5:
            cin = int(rng.choice(_WIDE))  # an MLP's second layer, or an expansion's output
        elif wide:
            cout = int(rng.choice(_WIDE))
        if h * h * cin * cout <= (2.5 if wide else 1.0) * MAX_MACS:
            break
    b = GraphBuilder("fc_tokens")
    x = b.input("x", (1, h, h, cin) if rng.random() < 0.5 else (1, h * h, cin))
    y = b.op(
        "FULLY_CONNECTED",
        x,
        rng.normal(0, 0.1, (cout, cin)),
        np.zeros(cout),
        keep_num_dims=True,
        fused_activation_function=activation(rng),
    )
    return finish(b, y)


def binary_sampler(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """A binary element-wise op: operands alike (runtime or constant), a scalar, per channel or
    per pixel; an ADD or a MUL an eighth of the time of one tensor by itself (``x * x``: a
    power spectrum, a variance), which reads half the bytes: the first set's audio models ran
    their ``MUL(x, x)`` at 0.035-0.08 ns an element, priced 1.3-1.9x by a learn that drew only
    two tensors (the records' ``bytes`` count the one input once)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        shape = draw_shape(rng)
        if kind in ("ADD", "MUL") and rng.random() < 0.125:
            b = GraphBuilder(kind.lower())
            x = b.input("x", shape)
            return finish(b, b.op(kind, x, x, fused_activation_function=activation(rng)))
        pattern = rng.choice(["none", "none", "scalar", "channel", "spatial", "const"])
        other: tuple[int, ...] = {
            "none": shape,
            "const": shape,
            "scalar": (1,),
            "channel": (shape[-1],),
            "spatial": (*shape[:-1], 1),
        }[str(pattern)]
        b = GraphBuilder(kind.lower())
        x = b.input("x", shape)
        z = (
            b.input("z", other)
            if pattern in ("none", "spatial")
            else b.const(rng.uniform(0.5, 1.5, other).astype(np.float32))
        )
        opts = (
            {"fused_activation_function": activation(rng)} if kind in ("ADD", "SUB", "MUL") else {}
        )
        return finish(b, b.op(kind, x, z, **opts))

    return build


def unary_sampler(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    def build(rng: Rng) -> nx.MultiDiGraph:
        b = GraphBuilder(kind.lower())
        return finish(b, b.op(kind, b.input("x", draw_shape(rng))))

    return build


#: Lengths of a long last axis: a heatmap's pixels (32 x 32 to 96 x 96), a vocabulary's logits.
_LONG_AXIS = (256, 576, 1024, 2304, 4096, 9216)


def _softmax_shape(rng: Rng) -> tuple[int, ...]:
    """What a softmax normalizes: an activation over its last axis (60 %), a few rows of a long
    last axis (30 %: a soft-argmax over each keypoint's heatmap pixels, ``(1, K, P)``), or a
    time-major sequence ``(T, 1, C)`` (10 %: a CTC head's characters per step)."""
    u = rng.random()
    if u < 0.3:
        rows = int(rng.choice([1, 4, 17, 21, 33, 64]))
        return (1, rows, int(rng.choice(_LONG_AXIS)))
    if u < 0.4:
        return (int(rng.choice([8, 13, 25, 32, 64, 128])), 1, draw_channels(rng))
    return draw_shape(rng, int(rng.choice([2, 3, 4])))


def softmax_sampler(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """A SOFTMAX or LOG_SOFTMAX over the last axis (:func:`_softmax_shape`); a softmax with a
    temperature 30 % of the time (``beta`` other than 1: a soft-argmax sharpened over a
    heatmap's pixels), which XNNPACK refuses, as it refuses LOG_SOFTMAX: the builtin kernels ran
    the third set's sharpened pose heads (``(1, 33, 4096)``, beta 10) at 5x what a learn that drew
    only beta 1 over rows of at most 1,280 priced, and a CTC head's LOG_SOFTMAX at 2-3x the
    fallback's price (no sampler drew the kind)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        b = GraphBuilder(kind.lower())
        x = b.input("x", _softmax_shape(rng))
        if kind == "SOFTMAX" and rng.random() < 0.3:
            return finish(b, b.op(kind, x, beta=float(rng.choice([0.5, 2.0, 10.0, 20.0]))))
        return finish(b, b.op(kind, x))

    return build


def _pool(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """A pooling window of 2 x 2 (a detector's or a landmark model's downsampling), 3 x 3, 5 x 5
    or 1 x 1, or over the whole plane (15 %: converters mostly write a global pool as a MEAN);
    or (25 %) 2 x 2 by 2 on a narrow map; or (20 %) a window of one axis, (2, 1) / (1, 2) /
    (3, 1) strided by itself, on a plane wider than high: an OCR model pools the height of a text
    line away and keeps its width (the third set's (2, 1) pools were priced at 0.74-0.83x by a
    learn that drew only square windows)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        u = rng.random()
        if u < 0.25:
            # an encoder's downsampling of a narrow map, 2 x 2 by 2 on 32-256 pixels of 4-48
            # channels (U-Nets, face meshes, OCR stems): 6 of a learn's 117 float max pools, and
            # the third set's 12 priced at 1.14-1.22x
            side, c = int(rng.choice([32, 48, 64, 96, 128, 160, 192, 256])), int(
                rng.choice([4, 8, 8, 12, 16, 16, 24, 32, 48]))  # fmt: skip
            w = side if rng.random() < 0.7 else side * int(rng.choice([2, 4]))
            while side * w * c > MAX_ELEMENTS:
                w //= 2
            b = GraphBuilder(kind.lower())
            pad = str(rng.choice(["VALID", "SAME"]))
            y = b.op(kind, b.input("x", (1, side, w, c)), padding=pad, stride_h=2, stride_w=2,
                     filter_height=2, filter_width=2)  # fmt: skip
            return finish(b, y)
        if u < 0.45:
            kh, kw = ((2, 1), (2, 1), (1, 2), (3, 1))[int(rng.integers(0, 4))]
            c = draw_channels(rng)
            h, w = int(rng.choice([2, 4, 8, 16, 32])), int(rng.choice([25, 40, 64, 100, 128, 256]))
            h = max(h, kh)  # a VALID (3, 1) window on 2 rows would have no output row
            h, w = (h, w) if kh > 1 else (w, h)
            while h * w * c > MAX_ELEMENTS:
                c = max(c // 2, 1)
            b = GraphBuilder(kind.lower())
            y = b.op(kind, b.input("x", (1, h, w, c)), padding="VALID", stride_h=kh,
                     stride_w=kw, filter_height=kh, filter_width=kw)  # fmt: skip
            return finish(b, y)
        h, c = draw_size(rng), draw_channels(rng)
        glob = rng.random() < 0.15
        k = h if glob else int(rng.choice([1, 2, 2, 3, 3, 5]))
        # a 1x1 window only subsamples (stride 2: NASNet's shortcut paths)
        stride = 1 if glob else 2 if k == 1 else int(rng.choice([1, 2, 2]))
        pad = "VALID" if glob or rng.random() < 0.5 else "SAME"
        if pad == "VALID" and k > h:
            k = h
        b = GraphBuilder(kind.lower())
        y = b.op(
            kind,
            b.input("x", (1, h, h, c)),
            padding=pad,
            stride_h=stride,
            stride_w=stride,
            filter_height=k,
            filter_width=k,
        )
        return finish(b, y)

    return build


def _mean(rng: Rng) -> nx.MultiDiGraph:
    shape = draw_shape(rng)
    axes = [1, 2] if len(shape) == 4 and rng.random() < 0.7 else [len(shape) - 1]
    b = GraphBuilder("mean")
    keep = bool(rng.random() < 0.5)
    y = b.op("MEAN", b.input("x", shape), np.array(axes, np.int32), keep_dims=keep)
    return finish(b, y)


def _concat(rng: Rng) -> nx.MultiDiGraph:
    """Parts of one shape cut to a quarter, a half or whole along the axis (the last 70 %);
    or (25 %) a token prepended along axis 1, ``(1, 1, C) + (1, N, C)``, a constant half the
    time (a ViT's class token: parts 1 : N, priced at 1.13-1.21x by a learn that drew parts at
    most 4 : 1 and no constant); or (20 %) a dense block's growth, a wide map and a narrow one
    along the channels (``C + 32``: the zoo's DenseNet-121 concatenations, 128-992 + 32
    channels, were priced at 0.77-1.46x, 60 of its test half's 95 misses of the kind)."""
    u = rng.random()
    if u < 0.2:
        h, wide = int(rng.choice([7, 14, 28, 56])), int(rng.choice(CHANNELS[8:]))
        b = GraphBuilder("concat")
        parts = [b.input("x0", (1, h, h, wide)), b.input("x1", (1, h, h, int(rng.choice(
            [12, 16, 24, 32, 48]))))]  # fmt: skip
        return finish(b, b.op("CONCATENATION", *parts, axis=3))
    if u < 0.45:
        n, c = int(rng.choice([16, 36, 49, 64, 196, 256, 576])), draw_channels(rng)
        b = GraphBuilder("concat")
        tokens = b.input("x", (1, n, c))
        first = (b.const(rng.normal(0, 0.1, (1, 1, c)).astype(np.float32))
                 if rng.random() < 0.5 else b.input("t", (1, 1, c)))  # fmt: skip
        return finish(b, b.op("CONCATENATION", first, tokens, axis=1))
    shape = draw_shape(rng)
    n = int(rng.choice([2, 2, 2, 3, 4]))
    axis = len(shape) - 1 if rng.random() < 0.7 else int(rng.integers(1, len(shape)))
    b = GraphBuilder("concat")
    xs = []
    for i in range(n):
        part = list(shape)
        part[axis] = max(1, int(part[axis] * rng.choice([0.25, 0.5, 1.0])))
        xs.append(b.input(f"x{i}", tuple(part)))
    return finish(b, b.op("CONCATENATION", *xs, axis=axis))


def _reshape(rng: Rng) -> nx.MultiDiGraph:
    shape = draw_shape(rng, 4)
    new = (1, shape[1] * shape[2], shape[3]) if rng.random() < 0.5 else (1, math.prod(shape[1:]))
    b = GraphBuilder("reshape")
    return finish(b, b.op("RESHAPE", b.input("x", shape), np.array(new, np.int32)))


def _transpose(rng: Rng) -> nx.MultiDiGraph:
    shape = draw_shape(rng, int(rng.choice([3, 4])))
    perm = [0, *(int(p) + 1 for p in rng.permutation(len(shape) - 1))]
    b = GraphBuilder("transpose")
    return finish(b, b.op("TRANSPOSE", b.input("x", shape), np.array(perm, np.int32)))


def _pad(rng: Rng) -> nx.MultiDiGraph:
    """A pad of H and W (both sides, 60 %; bottom-right by one, as TF's SAME stride-2 padding
    converts, 15 %) or of the channels (25 %: a detector's shortcut widening C to add a block's
    output, as BlazeFace and MediaPipe's landmark models do). One in ten pads an input image
    (3 channels, 96-224 px: a converted ZeroPadding2D before the stem), where the copy is one
    short run per pixel: Keras ResNet50's 224 x 224 x 3 pad took ~480 us on the Zen 4."""
    shape = draw_shape(rng, 4)
    if rng.random() < 0.1:
        side = int(rng.choice(SIZES_BIG))
        shape = (1, side, side, 3)
    u, p = rng.random(), int(rng.choice([1, 1, 2, 3]))
    if u < 0.25:
        pads = [[0, 0], [0, 0], [0, 0], [0, int(shape[3] * rng.choice([1.0, 1.0, 0.5])) or 1]]
    elif u < 0.4:
        pads = [[0, 0], [0, 1], [0, 1], [0, 0]]
    else:
        pads = [[0, 0], [p, p], [p, p], [0, 0]]
    b = GraphBuilder("pad")
    return finish(b, b.op("PAD", b.input("x", shape), np.array(pads, np.int32)))


def _slice(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    def build(rng: Rng) -> nx.MultiDiGraph:
        shape = draw_shape(rng)
        begin = [0] * len(shape)
        size = list(shape)
        if len(shape) == 4 and min(shape[1:3]) > 2 and rng.random() < 0.3:
            # a crop of a few pixels off both spatial sides (Cropping2D, asymmetric padding
            # undone): one run of C per output pixel
            for ax in (1, 2):
                lo, hi = (int(v) for v in rng.integers(0, 3, 2))
                lo, hi = (1, 0) if lo + hi == 0 else (lo, hi)
                if shape[ax] - lo - hi >= 1:
                    begin[ax], size[ax] = lo, shape[ax] - lo - hi
        else:
            ax = int(rng.integers(0, len(shape)))
            if shape[ax] > 1:
                size[ax] = max(1, int(shape[ax] * rng.choice([0.25, 0.5, 0.75])))
                begin[ax] = int(rng.integers(0, shape[ax] - size[ax] + 1))
        b = GraphBuilder(kind.lower())
        x = b.input("x", shape)
        if kind == "SLICE":
            y = b.op("SLICE", x, np.array(begin, np.int32), np.array(size, np.int32), shape=size)
        else:
            end = [bg + s for bg, s in zip(begin, size, strict=True)]
            y = b.op(
                "STRIDED_SLICE",
                x,
                np.array(begin, np.int32),
                np.array(end, np.int32),
                np.ones(len(shape), np.int32),
                shape=size,
            )
        return finish(b, y)

    return build


def _split(rng: Rng) -> nx.MultiDiGraph:
    shape = list(draw_shape(rng))
    k = int(rng.choice([2, 2, 3, 4]))
    shape[-1] = max(k, shape[-1] // k * k)
    b = GraphBuilder("split")
    outs = b.op(
        "SPLIT", np.array(len(shape) - 1, np.int32), b.input("x", tuple(shape)), num_splits=k
    )
    return b.build(outputs=list(outs))


def _batch_matmul(rng: Rng) -> nx.MultiDiGraph:
    while True:
        bs = int(rng.choice([1, 2, 4, 8, 12]))
        m, k, n = (int(rng.choice([1, 16, 49, 64, 77, 128, 196])) for _ in range(3))
        if bs * m * k * n <= MAX_MACS:
            break
    b = GraphBuilder("bmm")
    if rng.random() < 0.3:
        # a product with a constant: a soft-argmax's probabilities by the pixel grid (1, P, 2),
        # a projection of a long axis to a few values; k up to a heatmap's 9,216 pixels (the
        # third set's (1, K, 4096) x (1, 4096, 2) ran at 0.43-0.68x what a learn that drew
        # k <= 196 and no constant priced)
        m, k, n = int(rng.choice([1, 17, 21, 33, 64])), int(rng.choice(_LONG_AXIS)), int(
            rng.choice([1, 2, 3, 4, 16, 64]))  # fmt: skip
        grid = rng.uniform(-1, 1, (1, k, n)).astype(np.float32)
        return finish(b, b.op("BATCH_MATMUL", b.input("a", (1, m, k)), b.const(grid)))
    # attention's heads (1, heads, tokens, depth): 4-D, both operands computed (XNNPACK refused
    # the int8 ones of a text transformer, 64.8 us where a model of 3-D ones priced 5.2); a
    # fifth of them with an operand read transposed (``adj_x`` / ``adj_y``: a key not
    # transposed beforehand)
    lead = (1, bs) if rng.random() < 0.5 else (bs,)
    adj = int(rng.integers(0, 3)) if rng.random() < 0.2 else -1
    a_shape, b_shape = (*lead, k, m) if adj == 0 else (*lead, m, k), (*lead, k, n)
    if adj >= 1:
        b_shape = (*lead, n, k)
    y = b.op("BATCH_MATMUL", b.input("a", a_shape), b.input("b", b_shape), adj_x=adj == 0,
             adj_y=adj >= 1)  # fmt: skip
    return finish(b, y)


def _convert(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    def build(rng: Rng) -> nx.MultiDiGraph:
        shape = draw_shape(rng)
        q = Quantization(scale=(0.02,), zero_point=(int(rng.integers(-128, 32)),))
        b = GraphBuilder(kind.lower())
        if kind == "QUANTIZE":
            y = b.op("QUANTIZE", b.input("x", shape), dtype="int8", quantization=q)
        else:
            y = b.op("DEQUANTIZE", b.input("x", shape, "int8", quantization=q))
        return finish(b, y)

    return build


#: Samplers by name (the op kind, or a variant of it) and their relative weight.
SAMPLERS: dict[str, tuple[Callable[[Rng], nx.MultiDiGraph], float]] = {
    "CONV_2D": (_conv, 8.0),
    "DEPTHWISE_CONV_2D": (_dwconv, 4.0),
    "FULLY_CONNECTED": (_fc, 2.5),
    "BATCH_MATMUL": (_batch_matmul, 1.0),
    **{k: (binary_sampler(k), 2.0) for k in ("ADD", "MUL")},
    **{k: (binary_sampler(k), 1.0) for k in ("SUB", "SQUARED_DIFFERENCE", "MAXIMUM")},
    **{
        k: (unary_sampler(k), 1.0)
        for k in ("LOGISTIC", "HARD_SWISH", "RELU", "RELU6", "TANH", "GELU", "RSQRT", "NEG")
    },
    "SOFTMAX": (softmax_sampler("SOFTMAX"), 1.5),
    "AVERAGE_POOL_2D": (_pool("AVERAGE_POOL_2D"), 1.0),
    "MAX_POOL_2D": (_pool("MAX_POOL_2D"), 1.0),
    "MEAN": (_mean, 1.5),
    "CONCATENATION": (_concat, 2.0),
    "RESHAPE": (_reshape, 1.0),
    "TRANSPOSE": (_transpose, 1.0),
    "PAD": (_pad, 1.0),
    "SLICE": (_slice("SLICE"), 1.0),
    "STRIDED_SLICE": (_slice("STRIDED_SLICE"), 1.0),
    "SPLIT": (_split, 1.0),
    "QUANTIZE": (_convert("QUANTIZE"), 0.5),
    "DEQUANTIZE": (_convert("DEQUANTIZE"), 0.5),
}

#: The samplers of a sweep without explicit weights (seed 0's prior: the committed sweep).
BASE_SAMPLERS = tuple(sorted(SAMPLERS))

#: Samplers added since, drawn when weights name them (``--adapt`` names every sampler).
SAMPLERS["CONV_2D_GROUPED"] = (_grouped_conv, 3.0)
SAMPLERS["FULLY_CONNECTED_TOKENS"] = (_fc_tokens, 2.0)

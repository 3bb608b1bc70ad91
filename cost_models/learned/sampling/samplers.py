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
    def build(rng: Rng) -> nx.MultiDiGraph:
        shape = draw_shape(rng)
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


def _softmax(rng: Rng) -> nx.MultiDiGraph:
    """A softmax over the last axis; a fifth of the time with a temperature (``beta`` other than
    1: a soft-argmax sharpened over a heatmap's pixels), which XNNPACK refuses: the builtin kernel
    ran the third set's pose heads at 5x what a learn that drew only beta 1 priced."""
    b = GraphBuilder("softmax")
    x = b.input("x", draw_shape(rng, int(rng.choice([2, 3, 4]))))
    if rng.random() < 0.2:
        return finish(b, b.op("SOFTMAX", x, beta=float(rng.choice([0.5, 2.0, 10.0, 20.0]))))
    return finish(b, b.op("SOFTMAX", x))


def _pool(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """A pooling window of 2 x 2 (a detector's or a landmark model's downsampling), 3 x 3, 5 x 5
    or 1 x 1, or over the whole plane (15 %: converters mostly write a global pool as a MEAN)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
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
    # attention's heads (1, heads, tokens, depth): 4-D, both operands computed (XNNPACK refused
    # the int8 ones of a text transformer, 64.8 us where a model of 3-D ones priced 5.2)
    lead = (1, bs) if rng.random() < 0.5 else (bs,)
    y = b.op("BATCH_MATMUL", b.input("a", (*lead, m, k)), b.input("b", (*lead, k, n)))
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
    "SOFTMAX": (_softmax, 1.0),
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

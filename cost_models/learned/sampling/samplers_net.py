"""The ``net`` prior of the sweep: single ops drawn where real networks put them.

The generic prior (:mod:`tacopt.cost_models.learned.sampling.samplers`) draws resolution and
channels independently, so the regimes a network lives in are rare in it: channels grow as
resolution shrinks (stage ``s`` of a CNN has about ``w * 16 * 2**s`` channels at ``R / 2**(s+1)``
pixels), squeeze-and-excitation blocks run 1x1 convolutions on a 1x1 map (matrix-vector
products bound by their weights), stems convolve 3 channels at full resolution, heads and
bottlenecks hold megabytes of weights at 7-10 pixels, attention transposes
``(batch, sequence, heads, head size)``, transformers and ConvNeXt normalize each token over
its channels (a layer norm, decomposed into reductions and broadcasts over ``(..., 1)``) and
recurrent models slice one time step out of a sequence. This prior draws those from the same
generic design rules (never from the shared zoo; the stage table below is the textbook MobileNet
/ ResNet / EfficientNet layout, the layer norm the textbook one), and
``sample_net_chain`` builds small networks of such blocks (weights up to megabytes) whose whole
latency against their ops' sum fits how ops slow down inside a model.

``tacopt measure --sweep N --seed S --prior net`` draws from it; ``--prior net-rnn`` adds the
fused LSTM and long chains of tiny ops (an unrolled RNN's cells), which measure what a model
pays per op.

>>> G = SAMPLERS["CONV_2D_NET"][0](np.random.default_rng(0))
>>> [G.nodes[n]["op"].kind for n in G]
['CONV_2D']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.measurement.speed import lstm_graph
from tacopt.cost_models.learned.sampling.samplers import (
    MAX_ELEMENTS,
    MAX_MACS,
    SAMPLERS,
    Rng,
    activation,
    finish,
)
from tacopt.fusion.ir.builder import GraphBuilder, window_out
from tacopt.fusion.rnn.bilstm import BIDI_INPUTS, N_WEIGHTS
from tacopt.fusion.rnn.lstm_ops import LSTM_OPTIONS

#: Input resolutions of typical vision models.
RESOLUTIONS = (128, 160, 192, 224, 224, 224, 240, 256, 299, 300, 320)

#: Width multipliers of a stage's base channel count ``16 * 2**stage``.
WIDTHS = (0.25, 0.35, 0.5, 0.75, 1.0, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)

#: Expansion ratios of inverted-residual / bottleneck blocks.
EXPANSIONS = (1, 2, 3, 4, 4, 6, 6)


def _round8(x: float) -> int:
    return max(8, int(round(x / 8)) * 8)


def stage(rng: Rng) -> tuple[int, int]:
    """``(pixels per side, channels)`` of a feature map of a CNN stage: stage ``s`` in 0-5 at
    ``R / 2**(s+1)`` pixels with ``w * 16 * 2**s`` channels (capped at 2,048), rounded to 8
    (MobileNet's rule) but one time in five (NASNet's 11 * 2**s, ShuffleNet's 58 * 2**s)."""
    s = int(rng.integers(0, 6))
    r = int(rng.choice(RESOLUTIONS))
    h = max(1, math.ceil(r / 2 ** (s + 1)))
    w = float(rng.choice(WIDTHS))
    if rng.random() < 0.2:
        return h, min(2048, max(1, round(rng.uniform(0.25, 4.0) * 16 * 2**s)))
    return h, min(2048, _round8(w * 16 * 2**s))


def _conv_graph(
    rng: Rng, h: int, cin: int, cout: int, k: int, stride: int, pad: str
) -> nx.MultiDiGraph:
    b = GraphBuilder("conv_net")
    x = b.input("x", (1, h, h, cin))
    y = b.op(
        "CONV_2D",
        x,
        rng.normal(0, 0.1, (cout, k, k, cin)),
        np.zeros(cout),
        padding=pad,
        stride_h=stride,
        stride_w=stride,
        fused_activation_function=activation(rng),
    )
    return finish(b, y)


def _conv_net(rng: Rng) -> nx.MultiDiGraph:
    """A CONV_2D of a network: pointwise expand / project / widen, 3x3 in a stage, a
    squeeze-and-excitation 1x1 on a 1x1 map, a stem, a classifier head or a patchify stem."""
    while True:
        form = str(rng.choice(["expand", "project", "pointwise", "3x3", "3x3", "se", "se",
                               "stem", "head", "patchify"]))  # fmt: skip
        h, c = stage(rng)
        k, stride, pad, cin, cout = 1, 1, "SAME", c, c
        e = int(rng.choice(EXPANSIONS))
        if form == "expand":
            cout = c * e
        elif form == "project":
            cin = c * e
        elif form == "pointwise":
            cout = c * int(rng.choice([1, 2, 4]))
            stride = int(rng.choice([1, 1, 1, 2]))
            pad = str(rng.choice(["SAME", "VALID"]))
        elif form == "3x3":
            k, stride = 3, int(rng.choice([1, 1, 2]))
            cout = c * int(rng.choice([1, 1, 2]))
            pad = "SAME" if rng.random() < 0.8 else "VALID"
        elif form == "se":
            h, cin = 1, c * e
            r = int(rng.choice([4, 4, 8, 16, 24]))
            cout = max(8, cin // r)
            if rng.random() < 0.5:
                cin, cout = cout, cin
        elif form == "stem":
            h, cin = int(rng.choice(RESOLUTIONS)), int(rng.choice([3, 3, 3, 1, 4]))
            k, stride = int(rng.choice([3, 3, 5, 7])), 2
            cout = _round8(float(rng.choice(WIDTHS)) * 32)
            pad = str(rng.choice(["SAME", "VALID"]))
        elif form == "head":
            h = int(rng.choice([1, 4, 5, 6, 7, 7, 8, 10]))
            cout = int(rng.choice([1000, 1001, 1024, 1280, 1536, 1792, 2048]))
        else:
            h, cin, k = int(rng.choice([224, 224, 256, 384])), 3, int(rng.choice([2, 4, 8, 16, 16]))
            stride, pad = k, "VALID"
            cout = int(rng.choice([64, 96, 128, 192, 384, 768]))
        if cin > 4096 or cout > 4096:
            continue
        out = window_out(h, k, stride, pad)
        if out >= 1 and out * out * cout * k * k * cin <= MAX_MACS and h * h * cin <= MAX_ELEMENTS:
            return _conv_graph(rng, h, cin, cout, k, stride, pad)


def _dwconv_net(rng: Rng) -> nx.MultiDiGraph:
    while True:
        h, c = stage(rng)
        c *= int(rng.choice(EXPANSIONS))
        k, stride = int(rng.choice([3, 3, 3, 5, 5, 7])), int(rng.choice([1, 1, 2]))
        pad = "SAME" if rng.random() < 0.85 else "VALID"
        if c <= 4096 and h * h * c <= MAX_ELEMENTS and (pad == "SAME" or h >= k):
            break
    b = GraphBuilder("dwconv_net")
    y = b.op(
        "DEPTHWISE_CONV_2D",
        b.input("x", (1, h, h, c)),
        rng.normal(0, 0.1, (1, k, k, c)),
        np.zeros(c),
        padding=pad,
        stride_h=stride,
        stride_w=stride,
        depth_multiplier=1,
        fused_activation_function=activation(rng),
    )
    return finish(b, y)


def _pool_net(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """Pools of a network: 3x3 stride 1 / 2 (Inception, NASNet), 2x2 stride 2 (DenseNet's
    transitions), 1x1 stride 2 (a strided shortcut), global."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        return _pool_graph(rng, kind)

    return build


def _pool_graph(rng: Rng, kind: str) -> nx.MultiDiGraph:
    while True:
        h, c = stage(rng)
        k, stride = [(3, 1), (3, 2), (2, 2), (1, 2), (h, 1)][int(rng.integers(0, 5))]
        pad = "VALID" if k in (1, 2, h) or rng.random() < 0.4 else "SAME"
        if h * h * c <= MAX_ELEMENTS and h >= k:
            break
    b = GraphBuilder(kind.lower())
    y = b.op(kind, b.input("x", (1, h, h, c)), padding=pad, stride_h=stride, stride_w=stride,
             filter_height=k, filter_width=k)  # fmt: skip
    return finish(b, y)


def _stage_map(rng: Rng) -> tuple[int, int]:
    """``(pixels per side, channels)`` of a stage's feature map, expanded (x 4 or 6, an
    inverted residual's inside) half of the time, of at most :data:`MAX_ELEMENTS`."""
    while True:
        h, c = stage(rng)
        c *= int(rng.choice([1, 1, 4, 6]))
        if h * h * c <= MAX_ELEMENTS:
            return h, c


def _mean_net(rng: Rng) -> nx.MultiDiGraph:
    """A global average (MEAN over height and width) of a stage's feature map."""
    h, c = _stage_map(rng)
    b = GraphBuilder("mean_net")
    keep = bool(rng.random() < 0.5)
    return finish(b, b.op("MEAN", b.input("x", (1, h, h, c)), np.array([1, 2], np.int32),
                         keep_dims=keep))  # fmt: skip


def _binary_net(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """ADD / MUL / SUB on a stage's feature map: residual (same shape), per channel as
    ``(1, 1, 1, C)`` (a folded batch norm or a squeeze-and-excitation scale, constant or
    computed), or by a scalar."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        h, c = _stage_map(rng)
        shape = (1, h, h, c)
        pattern = str(rng.choice(["same", "channel4", "channel4", "scalar"]))
        other = {"same": shape, "channel4": (1, 1, 1, c), "scalar": (1,)}[pattern]
        b = GraphBuilder(f"{kind.lower()}_net")
        x = b.input("x", shape)
        z = (
            b.input("z", other)
            if pattern == "same" or rng.random() < 0.5
            else b.const(rng.uniform(0.5, 1.5, other).astype(np.float32))
        )
        return finish(b, b.op(kind, x, z, fused_activation_function=activation(rng)))

    return build


def _unary_net(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """An activation of its own on a stage's feature map (MobileNetV3's HARD_SWISH after its
    convolutions and inside its inverted residuals: a learn that drew it on generic shapes
    priced the 0.4-0.6 M-element maps of a MobileNetV3-like model at 0.71-0.85x)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        h, c = _stage_map(rng)
        b = GraphBuilder(f"{kind.lower()}_net")
        return finish(b, b.op(kind, b.input("x", (1, h, h, c))))

    return build


def _concat_net(rng: Rng) -> nx.MultiDiGraph:
    """A channel concatenation of 2-6 feature maps of one stage (DenseNet, Inception)."""
    while True:
        h, c = stage(rng)
        n = int(rng.choice([2, 2, 3, 4, 6]))
        parts = [c * int(rng.choice([1, 1, 2])) // (1 if i == 0 else 2) for i in range(n)]
        if h * h * sum(parts) <= MAX_ELEMENTS:
            break
    b = GraphBuilder("concat_net")
    xs = [b.input(f"x{i}", (1, h, h, p)) for i, p in enumerate(parts)]
    return finish(b, b.op("CONCATENATION", *xs, axis=3))


def _fc_net(rng: Rng) -> nx.MultiDiGraph:
    """A classifier head or an MLP layer on one row: 512-4,096 features in."""
    while True:
        cin = int(rng.choice([256, 512, 576, 768, 960, 1024, 1280, 1536, 2048, 4096]))
        cout = int(rng.choice([2, 10, 128, 512, 1000, 1001, 1024, 1280, 4096]))
        if cin * cout <= MAX_MACS:
            break
    b = GraphBuilder("fc_net")
    y = b.op("FULLY_CONNECTED", b.input("x", (1, cin)), rng.normal(0, 0.1, (cout, cin)),
             np.zeros(cout), fused_activation_function=activation(rng))  # fmt: skip
    return finish(b, y)


_SEQ = (16, 32, 49, 50, 64, 77, 128, 196, 197, 256)


def _transpose_heads(rng: Rng) -> nx.MultiDiGraph:
    """Attention's transposes: ``(1, seq, heads, head size)`` to heads first (and back), keys
    transposed for the score product, and the rank-3 ``(seq, heads, size)`` swap."""
    seq, heads = int(rng.choice(_SEQ)), int(rng.choice([1, 2, 4, 8, 12]))
    dh = int(rng.choice([16, 32, 64, 64]))
    b = GraphBuilder("transpose_heads")
    if rng.random() < 0.25:
        x, perm = b.input("x", (seq, heads, dh)), [1, 0, 2]
    else:
        x = b.input("x", (1, seq, heads, dh))
        perm = [[0, 2, 1, 3], [0, 2, 1, 3], [0, 2, 3, 1], [0, 1, 3, 2], [2, 0, 1, 3]][
            int(rng.integers(0, 5))
        ]
    return finish(b, b.op("TRANSPOSE", x, np.array(perm, np.int32)))


def _slice_rows(rng: Rng) -> nx.MultiDiGraph:
    """One time step (or the class token) out of a sequence: ``(T, 1, F)``, ``(T, F)`` or
    ``(1, T, F)`` sliced along the sequence axis."""
    t, f = int(rng.choice([8, 16, 32, 64, 128, 197])), int(rng.choice([32, 64, 128, 256, 512, 768]))
    shape = [(t, 1, f), (t, f), (1, t, f)][int(rng.integers(0, 3))]
    axis = 1 if shape[0] == 1 else 0
    begin = [0] * len(shape)
    begin[axis] = int(rng.integers(0, t))
    size = list(shape)
    size[axis] = 1
    b = GraphBuilder("slice_rows")
    y = b.op("SLICE", b.input("x", shape), np.array(begin, np.int32), np.array(size, np.int32),
             shape=size)  # fmt: skip
    return finish(b, y)


#: Model widths of transformers and ConvNeXt stages (the channels a layer norm runs over).
_WIDTHS_LN = (64, 96, 128, 192, 256, 384, 512, 768, 1024)


#: The ops of a layer norm and the roles each plays in it (:func:`_layer_norm`).
_LN_ROLES: dict[str, tuple[str, ...]] = {
    "MEAN": ("mean",),
    "SQUARED_DIFFERENCE": ("centre",),
    "SUB": ("centre",),
    "MUL": ("centre", "outer", "affine"),
    "ADD": ("eps", "affine"),
    "RSQRT": ("eps",),
}


def _layer_norm(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """``kind`` as one op of a layer norm over the channels of ``(1, tokens, C)`` or
    ``(1, H, W, C)``, as converters decompose it: MEAN over the last axis; SQUARED_DIFFERENCE /
    SUB / MUL of the map and a per-token ``(..., 1)`` statistic (``centre``); ADD of eps and RSQRT
    on that statistic (``eps``); the statistic times a constant ``(C,)`` gamma, an outer product
    (``outer``: Keras); MUL / ADD of gamma / beta over the map (``affine``)."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        while True:
            c = int(rng.choice(_WIDTHS_LN))
            if rng.random() < 0.5:
                tokens: tuple[int, ...] = (int(rng.choice(_SEQ)),)
            else:
                h = int(rng.choice([7, 14, 28, 56]))
                tokens = (h, h) if rng.random() < 0.5 else (h * h,)
            if math.prod(tokens) * c <= MAX_ELEMENTS:
                break
        full, stat = (1, *tokens, c), (1, *tokens, 1)
        role = str(rng.choice(_LN_ROLES[kind]))
        gamma = rng.uniform(0.5, 1.5, (c,)).astype(np.float32)
        b = GraphBuilder(f"{kind.lower()}_ln")
        if role == "mean":
            axis = np.array([len(full) - 1], np.int32)
            y = b.op(kind, b.input("x", full), axis, keep_dims=True)
        elif role == "centre":
            y = b.op(kind, b.input("x", full), b.input("z", stat))
        elif role == "eps" and kind == "ADD":
            y = b.op(kind, b.input("x", stat), np.full((1,), 1e-6, np.float32))
        elif role == "eps":
            y = b.op(kind, b.input("x", stat))
        elif role == "outer":
            y = b.op(kind, b.input("x", stat), gamma)
        else:
            y = b.op(kind, b.input("x", full), gamma)
        return finish(b, y)

    return build


#: Layer-norm samplers (``MUL_LN`` ...) and their weights in the ``net`` prior: 15 % of its
#: draws. Added to a 15-minute learn (``learn15``, 5,590 ops), 300 of their ops took the zoo's
#: tuning half (p2a / p2b) from 71.7 / 72.8 to 73.6 / 74.7 % within ±10 % (ConvNeXt 71.0 / 72.0
#: -> 78.0 / 80.4 %), 1,162 of them to 75.0 / 75.7 % (also ViT 41.5 -> 53.7 %, the transformer
#: encoder 65.6 / 78.1 -> 71.9 / 90.6 %).
LN_PRIOR = {f"{k}_LN": w for k, w in
            [("MEAN", 0.6), ("SQUARED_DIFFERENCE", 0.6), ("SUB", 0.45), ("MUL", 1.2),
             ("ADD", 0.6), ("RSQRT", 0.15)]}  # fmt: skip


#: The ``net`` prior: these samplers and their weights (``tacopt measure --prior net``).
NET_PRIOR: dict[str, float] = {
    "CONV_2D_NET": 8.0,
    "DEPTHWISE_CONV_2D_NET": 3.0,
    "AVERAGE_POOL_2D_NET": 0.75,
    "MAX_POOL_2D_NET": 0.75,
    "MEAN_NET": 1.0,
    "ADD_NET": 1.0,
    "MUL_NET": 2.0,
    "CONCATENATION_NET": 1.0,
    "FULLY_CONNECTED_NET": 1.0,
    "TRANSPOSE_HEADS": 1.0,
    "SLICE_ROWS": 0.5,
    "HARD_SWISH_NET": 0.75,
    "LOGISTIC_NET": 0.25,
    **LN_PRIOR,
}

SAMPLERS.update(
    {
        "CONV_2D_NET": (_conv_net, NET_PRIOR["CONV_2D_NET"]),
        "DEPTHWISE_CONV_2D_NET": (_dwconv_net, NET_PRIOR["DEPTHWISE_CONV_2D_NET"]),
        "AVERAGE_POOL_2D_NET": (_pool_net("AVERAGE_POOL_2D"), NET_PRIOR["AVERAGE_POOL_2D_NET"]),
        "MAX_POOL_2D_NET": (_pool_net("MAX_POOL_2D"), NET_PRIOR["MAX_POOL_2D_NET"]),
        "MEAN_NET": (_mean_net, NET_PRIOR["MEAN_NET"]),
        "ADD_NET": (_binary_net("ADD"), NET_PRIOR["ADD_NET"]),
        "MUL_NET": (_binary_net("MUL"), NET_PRIOR["MUL_NET"]),
        "CONCATENATION_NET": (_concat_net, NET_PRIOR["CONCATENATION_NET"]),
        "FULLY_CONNECTED_NET": (_fc_net, NET_PRIOR["FULLY_CONNECTED_NET"]),
        "TRANSPOSE_HEADS": (_transpose_heads, NET_PRIOR["TRANSPOSE_HEADS"]),
        "SLICE_ROWS": (_slice_rows, NET_PRIOR["SLICE_ROWS"]),
        "HARD_SWISH_NET": (_unary_net("HARD_SWISH"), NET_PRIOR["HARD_SWISH_NET"]),
        "LOGISTIC_NET": (_unary_net("LOGISTIC"), NET_PRIOR["LOGISTIC_NET"]),
        **{name: (_layer_norm(name.removesuffix("_LN")), w) for name, w in LN_PRIOR.items()},
    }
)


#: How many times a network chain repeats its blocks (fresh weights each time, same shapes, so
#: no op configuration to time more), drawn with equal odds: real networks repeat a stage's
#: block, and the bytes a model moves per invoke set how much slower its ops run than alone
#: (``whole_model.spill_level``). Two or three blocks moved under 8 MB in most chains of seven
#: Zen 4 learns, ran at 1.00x their ops' sum, and left the spill past a 32 MB L3 to a few.
CHAIN_REPEATS = (1, 2, 4, 8)
#: The most multiply-accumulates a repeated chain runs per invoke (its blocks x repeats; a
#: chain of 1e9 runs ~20-40 ms here, float).
CHAIN_MACS = 1e9


#: Share of network chains that are a late stage's plain 3x3 convolutions with 10-80 MB of
#: weights (:func:`_heavy_chain`).
HEAVY_CHAINS = 0.2


def _heavy_chain(seed: int, i: int) -> nx.MultiDiGraph:
    """A late stage of a plain or residual CNN (ResNet's, VGG's): 3x3 convolutions of 256-512
    channels on 7-14 pixels, 4-8 of them (10-80 MB of float weights, ADDs between pairs). The
    learn's other chains held at most ~20 MB of weights, so the weights a model's data push out
    of the L3 (``whole_model.whole_model_terms``' cold term: resnet18 ran 1.7 ms over its ops'
    sum on a 32 MB L3) were fitted on a handful of chains."""
    rng = np.random.default_rng([seed, i, 13])
    h, c = int(rng.choice([7, 7, 10, 14])), int(rng.choice([256, 384, 512]))
    while h * h * 9 * c * c > MAX_MACS:  # one convolution measured alone stays in bounds
        c -= 128
    convs = int(rng.choice([4, 6, 8]))
    while convs > 2 and convs * h * h * 9 * c * c > CHAIN_MACS:
        convs -= 2
    b = GraphBuilder(f"netchain_{seed}_{i}")
    x = b.input("x", (1, h, h, c))
    for _ in range(convs // 2):
        y = x
        for act in ("RELU", "NONE"):
            w = rng.normal(0, 0.05, (c, 3, 3, c))
            y = str(b.op("CONV_2D", y, w, np.zeros(c), fused_activation_function=act))
        x = str(b.op("ADD", x, y))
    return b.build(outputs=[x])


def sample_net_chain(seed: int, i: int) -> nx.MultiDiGraph:
    """A small float network of one stage: 2-3 blocks, inverted residuals (1x1 expand,
    depthwise 3x3, squeeze-and-excitation, 1x1 project, residual ADD) or bottlenecks (1x1,
    3x3, 1x1 with up to megabytes of weights), repeated 1-8 times (:data:`CHAIN_REPEATS`), then
    maybe a global MEAN. Its whole latency against its ops' sum fits how ops slow down inside a
    model when their weights and inputs no longer stay in cache between runs.

    >>> G = sample_net_chain(3, 0)
    >>> len(G) >= 4
    True
    """
    if np.random.default_rng([seed, i, 12]).random() < HEAVY_CHAINS:
        return _heavy_chain(seed, i)
    rng = np.random.default_rng([seed, i, 11])
    while True:
        h, c = stage(rng)
        if h * h * c * 6 <= MAX_ELEMENTS and h * h * c * c * 9 <= MAX_MACS:
            break
    b = GraphBuilder(f"netchain_{seed}_{i}")
    x = b.input("x", (1, h, h, c))

    def conv(x: str, cin: int, cout: int, k: int = 1, act: str = "RELU6") -> str:
        w = rng.normal(0, 0.1, (cout, k, k, cin))
        return str(b.op("CONV_2D", x, w, np.zeros(cout), fused_activation_function=act))

    q = max(8, c // 4)
    plan = [(int(rng.choice([4, 6])), bool(rng.random() < 0.5)) for _ in range(rng.integers(2, 4))]
    macs = sum(h * h * (2 * c * c * e + 9 * c * e) if inverted else h * h * (2 * c * q + 9 * q * q)
               for e, inverted in plan)  # fmt: skip
    repeats = int(rng.choice(CHAIN_REPEATS))
    while repeats > 1 and macs * repeats > CHAIN_MACS:
        repeats //= 2
    for e, inverted in plan * repeats:
        if inverted:  # inverted residual with squeeze-and-excitation
            y = conv(x, c, c * e)
            y = str(b.op("DEPTHWISE_CONV_2D", y, rng.normal(0, 0.1, (1, 3, 3, c * e)),
                         np.zeros(c * e), fused_activation_function="RELU6"))  # fmt: skip
            s = str(b.op("MEAN", y, np.array([1, 2], np.int32), keep_dims=True))
            s = conv(conv(s, c * e, q, act="RELU"), q, c * e, act="NONE")
            y = str(b.op("MUL", y, str(b.op("LOGISTIC", s))))
            y = conv(y, c * e, c, act="NONE")
        else:  # bottleneck
            y = conv(conv(conv(x, c, q), q, q, k=3), q, c, act="NONE")
        x = str(b.op("ADD", x, y))
    if rng.random() < 0.5:
        x = str(b.op("MEAN", x, np.array([1, 2], np.int32), keep_dims=False))
    return b.build(outputs=[x])


def _lstm(rng: Rng) -> nx.MultiDiGraph:
    """A float UNIDIRECTIONAL_SEQUENCE_LSTM (time- or batch-major; no peepholes, projection or
    layer norm), as the LSTM fusions emit it: 8-128 steps, 16-256 units, batch 1-8."""
    while True:
        steps, batch = int(rng.choice([8, 16, 32, 64, 128])), int(rng.choice([1, 1, 1, 2, 4, 8]))
        n_in, units = (int(rng.choice([16, 32, 64, 128, 256])) for _ in range(2))
        if steps * batch * 4 * units * (n_in + units) <= MAX_MACS:
            break
    time_major = bool(rng.random() < 0.5)
    return lstm_graph("lstm", steps, batch, n_in, units, time_major=time_major, rng=rng)


def _bilstm(rng: Rng) -> nx.MultiDiGraph:
    """A float BIDIRECTIONAL_SEQUENCE_LSTM as :mod:`tacopt.fusion.rnn.bilstm` emits it (Keras'
    ``Bidirectional(LSTM)``): the two halves' weights in slots 1-17 and 18-34, their states in
    35-38, no auxiliary input; merged outputs (one ``2 x units`` output) or two, never merged
    for a batch-major batch of more than one (LiteRT's kernel gets those wrong, so fusion
    never emits them). 8-128 steps, 16-256 units, batch 1-8."""
    while True:
        steps, batch = int(rng.choice([8, 16, 32, 64, 128])), int(rng.choice([1, 1, 1, 2, 4, 8]))
        n_in, units = (int(rng.choice([16, 32, 64, 128, 256])) for _ in range(2))
        if 2 * steps * batch * 4 * units * (n_in + units) <= MAX_MACS:
            break
    time_major = bool(rng.random() < 0.5)
    merge = bool(rng.random() < 0.5) and (time_major or batch == 1)
    b = GraphBuilder("bilstm")
    x = b.input("x", (steps, batch, n_in) if time_major else (batch, steps, n_in))
    inputs: list[Any] = [None] * BIDI_INPUTS
    inputs[0] = x
    for half in range(2):  # slots 1-17 of each half: as UNIDIRECTIONAL_SEQUENCE_LSTM's
        at = 1 + half * N_WEIGHTS
        inputs[at : at + 4] = [rng.normal(0, 0.1, (units, n_in)) for _ in range(4)]
        inputs[at + 4 : at + 8] = [rng.normal(0, 0.1, (units, units)) for _ in range(4)]
        inputs[at + 11 : at + 15] = [np.zeros(units) for _ in range(4)]
    inputs[35:39] = [b.variable(f"{n}_state_{d}", (batch, units))
                     for d in ("fw", "bw") for n in ("output", "cell")]  # fmt: skip
    lead = (steps, batch) if time_major else (batch, steps)
    shapes = ((*lead, 2 * units),) if merge else ((*lead, units), (*lead, units))
    options = {**LSTM_OPTIONS, "time_major": time_major, "merge_outputs": merge}
    options.pop("diagonal_recurrent_tensors", None)
    ys = b.op("BIDIRECTIONAL_SEQUENCE_LSTM", *inputs, shape=shapes, **options)
    return b.build(outputs=[ys] if merge else list(ys))


#: The ``net-rnn`` prior: the ``net`` prior plus the fused LSTMs (its chains alternate with
#: unrolled-RNN-like chains of tiny ops, :func:`sample_tiny_chain`).
NET_RNN_PRIOR: dict[str, float] = {
    **NET_PRIOR,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": 0.5,
    "BIDIRECTIONAL_SEQUENCE_LSTM": 0.25,
}
SAMPLERS["UNIDIRECTIONAL_SEQUENCE_LSTM"] = (_lstm, NET_RNN_PRIOR["UNIDIRECTIONAL_SEQUENCE_LSTM"])
SAMPLERS["BIDIRECTIONAL_SEQUENCE_LSTM"] = (_bilstm, NET_RNN_PRIOR["BIDIRECTIONAL_SEQUENCE_LSTM"])


def sample_tiny_chain(seed: int, i: int) -> nx.MultiDiGraph:
    """A long chain (32-320 ops) of tiny ops on one ``(1, units)`` row, like an unrolled RNN's
    cells: FULLY_CONNECTED, ADD / MUL by constants, LOGISTIC, TANH. Each op costs little alone,
    so its whole latency against its ops' sum measures what a model pays per op it runs.

    >>> G = sample_tiny_chain(3, 0)
    >>> len(G) >= 32
    True
    """
    rng = np.random.default_rng([seed, i, 13])
    units = int(rng.choice([16, 32, 64, 128]))
    b = GraphBuilder(f"tinychain_{seed}_{i}")
    x = b.input("x", (1, units))
    for _ in range(int(rng.integers(32, 321))):
        step = str(rng.choice(["fc", "add", "mul", "logistic", "tanh"]))
        if step == "fc":
            x = str(b.op("FULLY_CONNECTED", x, rng.normal(0, 0.1, (units, units)), np.zeros(units)))
        elif step in ("add", "mul"):
            x = str(b.op(step.upper(), x, rng.uniform(0.5, 1.5, units).astype(np.float32)))
        else:
            x = str(b.op(step.upper(), x))
    return b.build(outputs=[x])


def sample_net_chain_or_tiny(seed: int, i: int) -> nx.MultiDiGraph:
    """Chain ``i`` of a ``net-rnn`` sweep: every fourth a tiny-op chain, else a network."""
    return sample_tiny_chain(seed, i) if i % 4 == 3 else sample_net_chain(seed, i)

"""The ``move`` prior of the sweep: data movement, broadcasts and small ops where real models put
them.

The generic prior draws a TRANSPOSE as a random permutation of a 3-D or 4-D activation, a
RESHAPE as a flattening, a PAD of H and W, a broadcast as a constant: the forms a CNN holds.
Held-out models of other families (MediaPipe's landmark and segmentation networks, a face
detector, an audio transcriber; issue 47) put data movement elsewhere, and the learned model
missed it there: TRANSPOSE 11 % of ops within ±10 %, EXPAND_DIMS 0 %, MIRROR_PAD 0 %,
DEPTH_TO_SPACE 0 %, STRIDED_SLICE 53 %, broadcast MUL 56 %, AVERAGE_POOL_2D 17 %, and small ops
(SHAPE, SELECT_V2, REDUCE_MAX, SUM) 0 %. This prior draws the forms those families use, from
design rules, not from any model's op list:

- transposes around attention (``(1, S, H, D)`` -> ``(1, H, S, D)`` and the key's
  ``(1, H, D, S)``), layout changes (NHWC <-> NCHW of a PyTorch export), channel shuffles (5-D)
  and pixel shuffles (6-D), matrix transposes (2-D, 3-D);
- reshapes that split or merge heads, flatten or unflatten a plane, add or drop unit axes;
  EXPAND_DIMS / SQUEEZE of a 1-D convolution over time (audio) and of a pooled vector;
- zero pads of rank 3-5, asymmetric or not; mirror pads (REFLECT and SYMMETRIC) of rank 3-4;
- DEPTH_TO_SPACE of a decoder (block 2-4 to big planes); STRIDED_SLICEs of every rank with
  strides 1-2, masks and the shrink of one axis (a class token, one channel);
- broadcast MULs and ADDs with a *runtime* operand (squeeze-and-excitation's ``(1, 1, 1, C)``,
  an attention map's ``(1, H, W, 1)``, a token gate's ``(1, S, 1)``);
- average pools of any window (2x2 to the whole plane, strided or not, non-square planes);
- small ops whose cost is the invoke path, not their work: SHAPE, SELECT_V2, CAST, comparisons,
  small reductions (REDUCE_MAX, SUM, ARG_MAX), element-wise ops of a few elements.

Whether XNNPACK takes an op (a strided STRIDED_SLICE, a MIRROR_PAD, SHAPE: it does not, and the
builtin kernel runs it alone) is measured with each record (``delegated``), not assumed.

>>> G = SAMPLERS["TRANSPOSE_HEADS_MOVE"][0](np.random.default_rng(0))
>>> [G.nodes[n]["op"].kind for n in G]
['TRANSPOSE']
"""

from __future__ import annotations

import math
from collections.abc import Callable

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.sampling.samplers import (
    SAMPLERS,
    SIZES,
    SIZES_BIG,
    Rng,
    draw_channels,
    draw_shape,
    draw_size,
    finish,
)
from tacopt.fusion.ir.builder import GraphBuilder

#: Sequence lengths and head layouts of attention blocks (tokens, heads, head width).
_SEQ = (16, 49, 64, 77, 100, 128, 196, 256, 576, 1024)
_HEADS = (1, 2, 4, 8, 12)
_HEAD_DIM = (16, 32, 64)
MAX_ELEMENTS = 1_500_000


def _plane(rng: Rng, *, max_elements: int = MAX_ELEMENTS) -> tuple[int, int, int]:
    """H, W, C of a feature map: square (70 %) or not (a landscape input, a spectrogram)."""
    while True:
        h = draw_size(rng)
        w = h if rng.random() < 0.7 else draw_size(rng)
        c = draw_channels(rng)
        if h * w * c <= max_elements:
            return h, w, c


def _heads(rng: Rng) -> tuple[int, int, int]:
    while True:
        s, h, d = (int(rng.choice(v)) for v in (_SEQ, _HEADS, _HEAD_DIM))
        if s * h * d <= MAX_ELEMENTS:
            return s, h, d


#: Narrow innermost widths of detection and audio tensors: a box's 4 coordinates, a score,
#: 12 keypoint coordinates, 16 regressors, a few channels of a spectrogram map.
_NARROW = (1, 2, 4, 8, 12, 16)


def _rows(rng: Rng) -> tuple[int, ...]:
    """Many short rows: ``(1, N, k)`` anchors of a detector (N up to 16,384) or ``(1, T, F, k)``
    a spectrogram map of a few channels, ``k`` from :data:`_NARROW`: XNNPACK walks such a
    tensor row by row, and a model that saw only wide rows priced a box decode at 0.3x."""
    k = int(rng.choice(_NARROW))
    if rng.random() < 0.65:
        return (1, int(rng.choice([256, 896, 2048, 2304, 4096, 8192, 13824, 16384])), k)
    t, f = int(rng.choice([32, 64, 96, 128])), int(rng.choice([28, 57, 86, 88, 172, 264]))
    return (1, t, f, k)


def _transpose_op(b: GraphBuilder, shape: tuple[int, ...], perm: list[int]) -> str:
    out = tuple(shape[p] for p in perm)
    x = b.input("x", shape)
    return b.op("TRANSPOSE", x, np.array(perm, np.int32), shape=out)


def _transpose_heads(rng: Rng) -> nx.MultiDiGraph:
    """An attention block's transposes: heads out of the sequence (``0 2 1 3``), the key
    transposed for its product (``0 2 3 1``), or back (``0 2 1 3`` of ``(1, H, S, D)``)."""
    s, h, d = _heads(rng)
    perm = [[0, 2, 1, 3], [0, 2, 3, 1], [0, 1, 3, 2]][int(rng.integers(0, 3))]
    b = GraphBuilder("transpose_heads")
    return finish(b, _transpose_op(b, (1, s, h, d), perm))


def _transpose_layout(rng: Rng) -> nx.MultiDiGraph:
    """A layout change (NHWC -> NCHW or back, a PyTorch export's), a channel shuffle of groups
    (5-D), a pixel shuffle (6-D), a matrix / batched-matrix transpose (2-D, 3-D), a keypoint
    head's heatmaps turned to rows of pixels (a narrow inner axis of 1-33 moved out: 0.78-0.81x
    on the third set), or a sequence made time-major (a unit axis moved: a copy)."""
    form = str(rng.choice(["nchw", "nchw", "nhwc", "shuffle", "pixel", "matrix", "batched",
                           "heatmap", "time_major"]))  # fmt: skip
    h, w, c = _plane(rng)
    shape: tuple[int, ...]
    if form == "heatmap":  # a keypoint head's (1, pixels, K) -> (1, K, pixels): a narrow inner
        k = int(rng.choice([1, 2, 5, 17, 21, 33]))
        shape, perm = (1, int(rng.choice([256, 1024, 2304, 4096, 9216])), k), [0, 2, 1]
    elif form == "time_major":  # (1, T, C) -> (T, 1, C): only a unit axis moves (an OCR head's)
        shape, perm = (1, int(rng.choice([13, 25, 40, 64, 128, 256])), c), [1, 0, 2]
    elif form == "nchw":
        shape, perm = (1, h, w, c), [0, 3, 1, 2]
    elif form == "nhwc":
        shape, perm = (1, c, h, w), [0, 2, 3, 1]
    elif form == "shuffle":
        g = int(rng.choice([2, 4]))
        shape, perm = (1, h, w, g, max(c // g, 1)), [0, 1, 2, 4, 3]
    elif form == "pixel":
        r = int(rng.choice([2, 2, 4]))
        shape, perm = (1, h, w, r, r, max(c // (r * r), 1)), [0, 1, 3, 2, 4, 5]
    elif form == "matrix":
        shape, perm = (int(rng.choice([1, 8, 64, 128, 256, 512])), c), [1, 0]
    else:
        shape, perm = (int(rng.choice([1, 4, 8])), h * w, c), [0, 2, 1]
    while math.prod(shape) > MAX_ELEMENTS:
        shape = (*shape[:-1], max(shape[-1] // 2, 1))
    b = GraphBuilder("transpose_layout")
    return finish(b, _transpose_op(b, shape, perm))


def _reshape_move(rng: Rng) -> nx.MultiDiGraph:
    """Reshapes networks write between blocks: heads split or merged, a plane flattened to
    tokens or tokens folded back to a plane, unit axes added or dropped, 5-D group splits."""
    form = str(rng.choice(["split_heads", "merge_heads", "unflatten", "flatten", "unit", "groups"]))
    shape: tuple[int, ...]
    new: tuple[int, ...]
    if form in ("split_heads", "merge_heads"):
        s, h, d = _heads(rng)
        shape, new = (1, s, h * d), (1, s, h, d)
        if form == "merge_heads":
            shape, new = new, shape
    else:
        h, w, c = _plane(rng)
        if form == "unflatten":
            shape, new = (1, h * w, c), (1, h, w, c)
        elif form == "flatten":
            shape, new = (1, h, w, c), (1, h * w * c) if rng.random() < 0.3 else (h * w, c)
        elif form == "unit":
            shape, new = (1, c), (1, 1, 1, c)
            if rng.random() < 0.5:
                shape, new = new, shape
        else:
            g = int(rng.choice([2, 4]))
            c = max(c // g, 1) * g
            shape, new = (1, h, w, c), (1, h, w, g, c // g)
    b = GraphBuilder("reshape_move")
    y = b.op("RESHAPE", b.input("x", shape), np.array(new, np.int32), shape=new)
    return finish(b, y)


def _expand_dims(rng: Rng) -> nx.MultiDiGraph:
    """EXPAND_DIMS of an audio model's 1-D convolution (``(1, T, C)`` -> ``(1, 1, T, C)``), of
    a pooled vector, or of a mask; any axis, negative ones too."""
    rank = int(rng.choice([1, 2, 3, 3, 3]))
    # draw_shape has no rank 1 (it drew a 2-D shape): a vector of its own
    shape = (int(rng.choice([1, 16, 128, 1024])),) if rank == 1 else draw_shape(rng, rank)
    axis = int(rng.integers(-len(shape) - 1, len(shape) + 1))
    pos = axis if axis >= 0 else len(shape) + 1 + axis
    out = (*shape[:pos], 1, *shape[pos:])
    b = GraphBuilder("expand_dims")
    y = b.op("EXPAND_DIMS", b.input("x", shape), np.array(axis, np.int32), shape=out)
    return finish(b, y)


def _squeeze(rng: Rng) -> nx.MultiDiGraph:
    """SQUEEZE of the unit axis an EXPAND_DIMS added (``(1, 1, T, C)``), or of a pooled
    ``(1, 1, 1, C)``."""
    if rng.random() < 0.5:
        t, c = int(rng.choice([*SIZES[8:], *SIZES_BIG, 256, 512])), draw_channels(rng)
        shape, dims = (1, 1, t, c), [1]
    else:
        shape, dims = (1, 1, 1, draw_channels(rng)), [1, 2]
    out = tuple(d for i, d in enumerate(shape) if i not in dims)
    b = GraphBuilder("squeeze")
    return finish(b, b.op("SQUEEZE", b.input("x", shape), squeeze_dims=dims, shape=out))


def _pads(rng: Rng, rank: int, *, mirror: bool, dims: tuple[int, ...]) -> list[list[int]]:
    """Pads of the spatial axes (not the batch; the channels of a 4-D zero pad 15 % of the
    time), symmetric or one side wider (TF's SAME padding of an even kernel), never wider than
    a mirror pad can reflect."""
    pads = [[0, 0] for _ in range(rank)]
    if not mirror and rank == 4 and rng.random() < 0.15:
        pads[3] = [0, max(int(dims[3] * rng.choice([0.5, 1.0])), 1)]
        return pads
    p = int(rng.choice([1, 1, 2, 3, 4]))
    for ax in range(1, rank - 1):
        lo, hi = (p, p) if rng.random() < 0.7 else (p - 1, p)
        if mirror:
            lo, hi = min(lo, dims[ax] - 1), min(hi, dims[ax] - 1)
        pads[ax] = [lo, hi]
    if all(lo + hi == 0 for lo, hi in pads):
        pads[1] = [0, 1] if dims[1] > 1 or not mirror else [0, 0]
    return pads


def _pad_move(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """A zero PAD of rank 3-5 (audio frames, feature maps, volumes) or a MIRROR_PAD (REFLECT or
    SYMMETRIC) of rank 3-4, as segmenters and audio front ends pad before a convolution."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        rank = int(rng.choice([3, 4, 4, 4] if kind == "MIRROR_PAD" else [3, 4, 4, 4, 5]))
        h, w, c = _plane(rng, max_elements=800_000)
        dims: tuple[int, ...] = {3: (1, h * w, c), 4: (1, h, w, c), 5: (1, 4, h, w, c)}[rank]
        while math.prod(dims) > 800_000:
            dims = (*dims[:-1], max(dims[-1] // 2, 1))
        mirror = kind == "MIRROR_PAD"
        pads = _pads(rng, rank, mirror=mirror, dims=dims)
        out = tuple(d + lo + hi for d, (lo, hi) in zip(dims, pads, strict=True))
        b = GraphBuilder(kind.lower())
        x = b.input("x", dims)
        if mirror:
            mode = "REFLECT" if rng.random() < 0.7 else "SYMMETRIC"
            y = b.op(kind, x, np.array(pads, np.int32), mode=mode, shape=out)
        else:
            y = b.op(kind, x, np.array(pads, np.int32), shape=out)
        return finish(b, y)

    return build


def _depth_to_space(rng: Rng) -> nx.MultiDiGraph:
    """A decoder's DEPTH_TO_SPACE: block 2 (mostly) or 4 onto planes up to 256 x 256."""
    block = int(rng.choice([2, 2, 2, 4]))
    while True:
        h = int(rng.choice([4, 8, 12, 16, 24, 32, 48, 64, 96, 128]))
        w = h if rng.random() < 0.8 else int(rng.choice([8, 16, 32, 64]))
        c = block * block * int(rng.choice([1, 2, 3, 4, 8, 16, 32, 64]))
        if h * w * c <= 800_000:
            break
    b = GraphBuilder("depth_to_space")
    y = b.op(
        "DEPTH_TO_SPACE",
        b.input("x", (1, h, w, c)),
        block_size=block,
        shape=(1, h * block, w * block, c // (block * block)),
    )
    return finish(b, y)


def _strided_slice(rng: Rng) -> nx.MultiDiGraph:
    """A STRIDED_SLICE of rank 1-5: a range of one axis, a crop, every second to fourth
    element (a subsampling, harmonic stacking), one index of an axis shrunk away (a class
    token, a box coordinate), with begin / end masks as converters write them."""
    rank = int(rng.choice([1, 2, 3, 3, 4, 4, 5]))
    if rank == 1:
        shape: tuple[int, ...] = (int(rng.choice([2, 4, 8, 64, 512, 4096])),)
    elif rank == 5:
        h, w, c = _plane(rng, max_elements=400_000)
        shape = (1, h, w, 2, max(c // 2, 1))
    else:
        shape = draw_shape(rng, rank)
    if rng.random() < 0.25:  # boxes or keypoints cut off a detector's regressors
        shape = _rows(rng)
        rank = len(shape)
    begin, end, strides = [0] * rank, list(shape), [1] * rank
    begin_mask = end_mask = shrink = 0
    ax = int(rng.integers(1 if rank > 1 else 0, rank))
    form = str(rng.choice(["range", "range", "stride", "shrink", "crop", "reverse"]))
    if form == "reverse" and shape[ax] > 1:
        # a sequence read backwards (a bidirectional layer's backward pass written out, as an
        # OCR model's converter does): stride -1, whole axis by masks; the builtin kernel
        # walks it element by element (XNNPACK refuses it), and no sampler drew it before
        strides[ax], begin_mask, end_mask = -1, 1 << ax, 1 << ax
        begin[ax], end[ax] = 0, 0
    elif form == "shrink" and shape[ax] > 0:
        i = int(rng.integers(0, shape[ax]))
        begin[ax], end[ax], shrink = i, i + 1, 1 << ax
    elif form == "stride" and shape[ax] > 1:
        strides[ax] = int(rng.choice([2, 2, 3, 4]))  # 3: an audio model's harmonic stacking
        # never past the axis: a begin of 3 on an axis of 3 cut nothing, and the record of
        # its empty output failed the records check at the end of a 3-minute learn
        begin[ax] = int(rng.integers(0, min(strides[ax], shape[ax])))
    elif form == "crop" and rank >= 3:
        for a in range(1, rank - 1):
            if shape[a] > 2:
                begin[a], end[a] = 1, shape[a] - 1
    elif shape[ax] > 1:
        n = max(1, int(shape[ax] * rng.choice([0.25, 0.5, 0.75])))
        begin[ax] = int(rng.integers(0, shape[ax] - n + 1))
        end[ax] = begin[ax] + n
    for a in range(rank):  # axes taken whole: masked, as converters write them
        if a != ax and begin[a] == 0 and end[a] == shape[a] and rng.random() < 0.5:
            begin_mask |= 1 << a
            end_mask |= 1 << a
    out = [
        shape[a] if strides[a] < 0 else len(range(begin[a], end[a], strides[a]))
        for a in range(rank)
        if not (shrink >> a) & 1
    ]
    b = GraphBuilder("strided_slice")
    y = b.op(
        "STRIDED_SLICE",
        b.input("x", shape),
        np.array(begin, np.int32),
        np.array(end, np.int32),
        np.array(strides, np.int32),
        begin_mask=begin_mask,
        end_mask=end_mask,
        shrink_axis_mask=shrink,
        shape=tuple(out),
    )
    return finish(b, y)


def _broadcast(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """A binary op whose second operand broadcasts and is computed at run time:
    squeeze-and-excitation's ``(1, 1, 1, C)`` gate, an attention map's ``(1, H, W, 1)``, a
    token gate's ``(1, S, 1)``, a per-channel ``(1, 1, C)`` scale of tokens; or a constant
    ``(1, 1, 1, C)`` (a folded normalization), or a detector's box decode over many short rows
    (:func:`_rows`) by a constant row or a scalar."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        form = str(rng.choice(["se", "se", "spatial", "tokens", "channels", "const", "rows",
                               "rows"]))  # fmt: skip
        shape: tuple[int, ...]
        other: tuple[int, ...]
        if form == "rows":  # a box decode: (1, N, 4) x a constant (1, 1, 4), or x a scalar
            shape = _rows(rng)
            other = (1,) * (len(shape) - 1) + (shape[-1],) if rng.random() < 0.7 else (1,)
            form = "const"
        elif form in ("se", "spatial", "const"):
            h, w, c = _plane(rng)
            shape = (1, h, w, c)
            other = (1, h, w, 1) if form == "spatial" else (1, 1, 1, c)
        else:
            s, c = int(rng.choice(_SEQ)), draw_channels(rng)
            while s * c > MAX_ELEMENTS:
                s //= 2
            shape, other = (1, s, c), ((1, s, 1) if form == "tokens" else (1, 1, c))
        b = GraphBuilder(f"{kind.lower()}_broadcast")
        x = b.input("x", shape)
        z = (
            b.const(rng.uniform(0.5, 1.5, other).astype(np.float32))
            if form == "const"
            else b.input("z", other)
        )
        return finish(b, b.op(kind, x, z, shape=shape))

    return build


def _average_pool(rng: Rng) -> nx.MultiDiGraph:
    """An AVERAGE_POOL_2D of any window: 2x2 to 7x7 (strided by its size or by 1-2), or the
    whole plane (a global pool kept as a pool, as Keras' exports write it), on square or
    non-square planes."""
    h, w, c = _plane(rng)
    if rng.random() < 0.3:
        kh, kw, sh, sw, pad = h, w, 1, 1, "VALID"
    else:
        k = int(rng.choice([2, 2, 3, 3, 4, 5, 7]))
        kh, kw = min(k, h), min(k, w)
        s = int(rng.choice([1, 2, k]))
        sh, sw = max(min(s, h), 1), max(min(s, w), 1)
        pad = "SAME" if rng.random() < 0.5 else "VALID"
    b = GraphBuilder("average_pool_2d")
    y = b.op(
        "AVERAGE_POOL_2D",
        b.input("x", (1, h, w, c)),
        padding=pad,
        stride_h=sh,
        stride_w=sw,
        filter_height=kh,
        filter_width=kw,
    )
    return finish(b, y)


def _post_shape(rng: Rng) -> tuple[int, ...]:
    """A post-processing tensor: small (50 %), many short rows (30 %, :func:`_rows`) or a
    feature map."""
    u = rng.random()
    return _small_shape(rng) if u < 0.5 else _rows(rng) if u < 0.8 else draw_shape(rng)


def _small_shape(rng: Rng) -> tuple[int, ...]:
    """A small tensor: a few boxes or scores, a pooled vector, a landmark set."""
    rank = int(rng.choice([1, 2, 2, 3, 4]))
    dims = [int(rng.choice([1, 1, 2, 3, 4, 5, 16, 21, 33, 64, 468])) for _ in range(rank)]
    return tuple(dims) if rank == 1 else (1, *dims[1:])


def _shape_op(rng: Rng) -> nx.MultiDiGraph:
    """SHAPE of an activation (a dynamic reshape's first step): no work at all."""
    shape = draw_shape(rng) if rng.random() < 0.6 else _small_shape(rng)
    b = GraphBuilder("shape")
    y = b.op("SHAPE", b.input("x", shape), out_type="INT32", shape=(len(shape),), dtype="int32")
    return finish(b, y)


def _select_v2(rng: Rng) -> nx.MultiDiGraph:
    """SELECT_V2 of a post-processing step (a mask picks scores or boxes), small or a feature
    map, the condition broadcast or not."""
    shape = _post_shape(rng)
    cond = shape if rng.random() < 0.6 else (*shape[:-1], 1)
    b = GraphBuilder("select_v2")
    c = b.input("c", cond, dtype="bool")
    x, other = b.input("x", shape), b.input("y", shape)
    y = b.op("SELECT_V2", c, x, other, shape=shape, dtype="float32")  # not the condition's bool
    return finish(b, y)


#: A detector's anchors and classes (SSD's 1917 x 91, BlazeFace's 896, ...): its scores'
#: max and arg-max over the classes (an SSD post-processing's ARG_MAX was priced at 0.6x).
_ANCHORS = (500, 896, 1917, 2034, 2304, 4096, 8732)
_CLASSES = (2, 3, 11, 20, 21, 80, 90, 91)


def _small_reduce(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """A reduction of a small tensor, of many short rows, or of an axis of a feature map (a
    score's max over the anchors, a spectrogram's sum over its few channels), or (a third of
    the maxima) over each anchor's classes."""

    def build(rng: Rng) -> nx.MultiDiGraph:
        shape = _post_shape(rng)
        axis = len(shape) - 1 if rng.random() < 0.7 else int(rng.integers(0, len(shape)))
        if len(shape) == 3 and shape[1] >= 256 and shape[-1] <= 16 and rng.random() < 0.5:
            axis = 1  # the best score over a detector's anchors: one long strided walk
            if rng.random() < 0.5:
                shape = (1, shape[1], 1)  # of one score per anchor (priced at 0.6-0.9x)
        if kind != "SUM" and rng.random() < 0.35:  # the best class of each anchor
            shape, axis = (1, int(rng.choice(_ANCHORS)), int(rng.choice(_CLASSES))), 2

        keep = bool(rng.random() < 0.5)
        out = tuple(1 if a == axis else d for a, d in enumerate(shape) if keep or a != axis)
        b = GraphBuilder(kind.lower())
        x = b.input("x", shape)
        if kind == "ARG_MAX":
            y = b.op(kind, x, np.array(axis, np.int32), output_type="INT32", shape=out,
                     dtype="int32")  # fmt: skip
        else:
            y = b.op(kind, x, np.array([axis], np.int32), keep_dims=keep, shape=out)
        return finish(b, y)

    return build


def _concat_rows(rng: Rng) -> nx.MultiDiGraph:
    """A detector's output assembled along the last axis of many short rows: boxes, keypoints
    and a score (``(1, N, 4) + (1, N, 12) + (1, N, 1)``), 2-4 narrow parts; or (30 %) 3-13
    single rows stacked (a recommender's features: 9 x (1, 1, 32) was priced at 0.3x)."""
    if rng.random() < 0.3:  # a recommender's pooled features, one row each
        dim, k = int(rng.choice([8, 16, 32, 64, 128])), int(rng.integers(3, 14))
        b = GraphBuilder("concatenation_rows")
        xs = [b.input(f"x{i}", (1, 1, dim)) for i in range(k)]
        return finish(b, b.op("CONCATENATION", *xs, axis=1, shape=(1, k, dim)))
    rows = _rows(rng)
    parts = [int(rng.choice(_NARROW)) for _ in range(int(rng.integers(2, 5)))]
    b = GraphBuilder("concatenation_rows")
    xs = [b.input(f"x{i}", (*rows[:-1], k)) for i, k in enumerate(parts)]
    y = b.op("CONCATENATION", *xs, axis=len(rows) - 1, shape=(*rows[:-1], sum(parts)))
    return finish(b, y)


#: Element-wise kinds drawn on a few elements (a box decode's arithmetic, a mask, a cast).
_SMALL_ELEMENTWISE = ("ADD", "MUL", "SUB", "DIV", "MAXIMUM", "LESS", "GREATER", "CAST")


def _small_elementwise(kind: str) -> Callable[[Rng], nx.MultiDiGraph]:
    """An element-wise op of post-processing: of a few elements (its latency is the invoke
    path of the kernel that takes it), or over many short rows (a threshold of every anchor's
    score, against a scalar 40 % of the time, 60 % for a comparison: the builtin kernels'
    broadcast path, a few ns a row)."""

    compare = kind in ("LESS", "GREATER")
    small, scalar = (0.3, 0.6) if compare else (0.5, 0.4)

    def build(rng: Rng) -> nx.MultiDiGraph:
        shape = _small_shape(rng) if rng.random() < small else _rows(rng)
        if compare and len(shape) == 3 and shape[1] >= 256 and rng.random() < 0.5:
            shape = (1, shape[1], 1)  # one score per anchor (a detector's threshold: 0.42x)
        other = (1,) if rng.random() < scalar else shape
        b = GraphBuilder(f"small_{kind.lower()}")
        x = b.input("x", shape)
        if kind == "CAST":
            y = b.op(kind, x, shape=shape, dtype="int32")
        elif kind in ("LESS", "GREATER"):
            y = b.op(kind, x, b.input("z", other), shape=shape, dtype="bool")
        else:
            y = b.op(kind, x, b.input("z", other), shape=shape)
        return finish(b, y)

    return build


#: The ``move`` prior: these samplers and their weights (``tacopt measure --prior move``).
MOVE_PRIOR: dict[str, float] = {
    "TRANSPOSE_HEADS_MOVE": 2.0,
    "TRANSPOSE_LAYOUT_MOVE": 2.5,
    "RESHAPE_MOVE": 2.0,
    "EXPAND_DIMS_MOVE": 1.5,
    "SQUEEZE_MOVE": 1.0,
    "PAD_MOVE": 2.0,
    "MIRROR_PAD_MOVE": 1.5,
    "DEPTH_TO_SPACE_MOVE": 1.0,
    "STRIDED_SLICE_MOVE": 2.5,
    "MUL_MOVE": 3.0,
    "ADD_MOVE": 1.0,
    "AVERAGE_POOL_2D_MOVE": 1.5,
    "CONCATENATION_ROWS": 1.5,
    "SHAPE_SMALL": 0.7,
    "SELECT_V2_SMALL": 0.8,
    "REDUCE_MAX_SMALL": 0.8,
    "SUM_SMALL": 0.8,
    "ARG_MAX_SMALL": 0.7,
    **{f"{k}_SMALL": 0.15 for k in _SMALL_ELEMENTWISE},
    # a threshold of every anchor's score against a scalar runs in the builtin kernels'
    # broadcast path, 2.4 ns an element here (a face detector's GREATER was priced at 0.2x
    # from 12 records)
    "GREATER_SMALL": 0.6,
    "LESS_SMALL": 0.3,
}

_MOVE_BUILDERS: dict[str, Callable[[Rng], nx.MultiDiGraph]] = {
    "TRANSPOSE_HEADS_MOVE": _transpose_heads,
    "TRANSPOSE_LAYOUT_MOVE": _transpose_layout,
    "RESHAPE_MOVE": _reshape_move,
    "EXPAND_DIMS_MOVE": _expand_dims,
    "SQUEEZE_MOVE": _squeeze,
    "PAD_MOVE": _pad_move("PAD"),
    "MIRROR_PAD_MOVE": _pad_move("MIRROR_PAD"),
    "DEPTH_TO_SPACE_MOVE": _depth_to_space,
    "STRIDED_SLICE_MOVE": _strided_slice,
    "MUL_MOVE": _broadcast("MUL"),
    "ADD_MOVE": _broadcast("ADD"),
    "AVERAGE_POOL_2D_MOVE": _average_pool,
    "CONCATENATION_ROWS": _concat_rows,
    "SHAPE_SMALL": _shape_op,
    "SELECT_V2_SMALL": _select_v2,
    "REDUCE_MAX_SMALL": _small_reduce("REDUCE_MAX"),
    "SUM_SMALL": _small_reduce("SUM"),
    "ARG_MAX_SMALL": _small_reduce("ARG_MAX"),
    **{f"{k}_SMALL": _small_elementwise(k) for k in _SMALL_ELEMENTWISE},
}
SAMPLERS.update({k: (_MOVE_BUILDERS[k], w) for k, w in MOVE_PRIOR.items()})

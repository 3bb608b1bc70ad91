"""Forms no prior drew before the fourth held-out set (issue 47, session 5): each drawn along
its axes, not copied from one model.

- a dilated convolution as the TF converter writes it: SPACE_TO_BATCH_ND (a block of 2-18,
  padded to a multiple), a VALID convolution over the resulting batch of block**2 small images
  (4-324 images of 1-12 pixels a side: the fourth set's 36-324 ran 1.5-3.7x slower than a
  model that never saw a batch priced them), BATCH_TO_SPACE_ND (its crops);
- SPLIT_V: unequal parts along any axis (a detector's box and class rows, ``(1, 64 + C, N)``);
- TOPK_V2: the k best of a row of 16-20,000 scores (k of 1-300);
- RESIZE_NEAREST_NEIGHBOR by an integer factor (2, sometimes 4) of a wide map (16-256
  channels) with neither ``align_corners`` nor ``half_pixel_centers`` (Keras' UpSampling2D, a
  feature pyramid's top-down path): the tail prior drew this form in under 5 % of its resizes.

>>> rng = np.random.default_rng(0)
>>> drawn = [SAMPLERS[name][0](rng) for name in FORMS_PRIOR]
>>> sorted(G.nodes[n]["op"].kind for G in drawn for n in G)[:3]
['BATCH_TO_SPACE_ND', 'CONV_2D', 'RESIZE_NEAREST_NEIGHBOR']
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.sampling.samplers import (
    MAX_MACS,
    SAMPLERS,
    Rng,
    activation,
    draw_shape,
    finish,
)
from tacopt.fusion.ir.builder import GraphBuilder

#: Blocks (dilation rates) of the dilated convolutions written out: DeepLab's 2, 4, 6, 12, 18.
_BLOCKS = (2, 2, 3, 4, 6, 6, 12, 18)
_WIDE = (16, 32, 64, 96, 128, 128, 192, 256)


def _i32(*v: int) -> np.ndarray:
    return np.array(v, np.int32)


def _s2b_plane(rng: Rng) -> tuple[int, int, int, int]:
    """A feature map ``(h, w, c)`` and a block at most its side + 2 blocks of padding."""
    h = int(rng.choice([7, 8, 10, 14, 14, 16, 20, 28, 32, 33, 65]))
    w = h if rng.random() < 0.85 else int(rng.choice([7, 14, 20, 28]))
    block = int(rng.choice(_BLOCKS))
    c = int(rng.choice(_WIDE))
    return h, w, c, block


def _space_to_batch(rng: Rng) -> nx.MultiDiGraph:
    """SPACE_TO_BATCH_ND with a dilated 3x3 convolution's SAME padding (``block`` a side, plus
    what rounds the side up to a multiple of the block), or none when the side divides."""
    h, w, c, block = _s2b_plane(rng)
    pad = block if rng.random() < 0.8 else 0
    eh, ew = -(h + 2 * pad) % block, -(w + 2 * pad) % block
    pads = _i32(pad, pad + eh, pad, pad + ew).reshape(2, 2)
    ph, pw = (h + 2 * pad + eh) // block, (w + 2 * pad + ew) // block
    b = GraphBuilder("space_to_batch_nd")
    y = b.op("SPACE_TO_BATCH_ND", b.input("x", (1, h, w, c)), _i32(block, block), pads,
             shape=(block * block, ph, pw, c))  # fmt: skip
    return finish(b, y)


def _batch_to_space(rng: Rng) -> nx.MultiDiGraph:
    """BATCH_TO_SPACE_ND of a VALID convolution's output back to the map, cropped."""
    h, w, c, block = _s2b_plane(rng)
    eh, ew = -h % block, -w % block
    ph, pw = (h + eh) // block, (w + ew) // block
    b = GraphBuilder("batch_to_space_nd")
    y = b.op("BATCH_TO_SPACE_ND", b.input("x", (block * block, ph, pw, c)), _i32(block, block),
             _i32(0, eh, 0, ew).reshape(2, 2), shape=(1, h, w, c))  # fmt: skip
    return finish(b, y)


def _conv_batched(rng: Rng) -> nx.MultiDiGraph:
    """A convolution over a batch of block**2 small images (between the two ops above): 3x3
    VALID mostly, or 1x1; 16-256 channels in and out."""
    while True:
        h, w, c, block = _s2b_plane(rng)
        k = 3 if rng.random() < 0.85 else 1
        side = max((h + 2 * block) // block, k)
        sw = max((w + 2 * block) // block, k)
        cout = int(rng.choice(_WIDE))
        n = block * block
        macs = n * (side - k + 1) * (sw - k + 1) * cout * k * k * c
        if macs <= MAX_MACS:
            break
    b = GraphBuilder("conv_batched")
    y = b.op("CONV_2D", b.input("x", (n, side, sw, c)), rng.normal(0, 0.1, (cout, k, k, c)),
             np.zeros(cout), padding="VALID", stride_h=1, stride_w=1,
             fused_activation_function=activation(rng))  # fmt: skip
    return finish(b, y)


def _split_v(rng: Rng) -> nx.MultiDiGraph:
    """SPLIT_V into 2-3 unequal parts along the last axis or another (a head's rows)."""
    shape = list(draw_shape(rng, int(rng.choice([2, 3, 3, 4]))))
    axis = len(shape) - 1 if rng.random() < 0.4 else int(rng.integers(1, len(shape)))
    k = int(rng.choice([2, 2, 3]))
    shape[axis] = max(shape[axis], 2 * k)
    cuts = np.sort(rng.choice(np.arange(1, shape[axis]), k - 1, replace=False))
    sizes = np.diff([0, *cuts.tolist(), shape[axis]]).astype(np.int32)
    outs = tuple(tuple(shape[:axis] + [int(s)] + shape[axis + 1 :]) for s in sizes)
    b = GraphBuilder("split_v")
    ys = b.op("SPLIT_V", b.input("x", tuple(shape)), sizes, np.array(axis, np.int32),
              num_splits=k, shape=outs)  # fmt: skip
    return b.build(outputs=list(ys))


def _topk(rng: Rng) -> nx.MultiDiGraph:
    """TOPK_V2 over the last axis of ``(rows, n)`` scores (an anchor list, a vocabulary)."""
    n = int(rng.choice([16, 100, 896, 1029, 2100, 2304, 8400, 20000]))
    rows = 1 if rng.random() < 0.8 else int(rng.choice([2, 4, 8]))
    k = min(int(rng.choice([1, 5, 10, 20, 100, 100, 300])), n)
    b = GraphBuilder("topk_v2")
    vals, idx = b.op("TOPK_V2", b.input("x", (rows, n)), np.array(k, np.int32),
                     shape=((rows, k), (rows, k)), dtype=["float32", "int32"])  # fmt: skip
    return b.build(outputs=[vals, idx])


def _resize_wide(rng: Rng) -> nx.MultiDiGraph:
    """RESIZE_NEAREST_NEIGHBOR of a wide map by 2 (or 4), default coordinates (85 %)."""
    while True:
        h = int(rng.choice([5, 7, 10, 13, 14, 16, 20, 26, 28, 32, 40, 52, 64, 128]))
        c = int(rng.choice(_WIDE))
        f = 2 if rng.random() < 0.85 else 4
        if (h * f) ** 2 * c <= 2_500_000:
            break
    half = bool(rng.random() < 0.15)
    b = GraphBuilder("resize_nearest_neighbor")
    y = b.op("RESIZE_NEAREST_NEIGHBOR", b.input("x", (1, h, h, c)), _i32(h * f, h * f),
             align_corners=False, half_pixel_centers=half, shape=(1, h * f, h * f, c))  # fmt: skip
    return finish(b, y)


#: The samplers and their weights; :data:`FORMS_PRIOR` is part of the ``regimes`` prior
#: (:data:`sweep.REGIMES_PRIOR`).
_FORMS: dict[str, tuple[Callable[[Rng], nx.MultiDiGraph], float]] = {
    "SPACE_TO_BATCH_ND": (_space_to_batch, 0.6),
    "BATCH_TO_SPACE_ND": (_batch_to_space, 0.6),
    "CONV_2D_BATCHED": (_conv_batched, 1.2),
    "SPLIT_V": (_split_v, 0.8),
    "TOPK_V2": (_topk, 0.6),
    "RESIZE_NEAREST_NEIGHBOR_WIDE": (_resize_wide, 1.0),
}
FORMS_PRIOR: dict[str, float] = {name: weight for name, (_, weight) in _FORMS.items()}
SAMPLERS.update(_FORMS)

"""The building blocks of the families' models (``families``, ``family_sets.third`` and
``.fourth``): random weights and convolutions, each drawing from the generator its set passes,
so every set's files are the same on every write; int32 constants."""

from __future__ import annotations

from typing import Any

import numpy as np

from tacopt.fusion.ir.builder import GraphBuilder


def weights(*shape: int, rng: np.random.Generator) -> np.ndarray:
    """Normal(0, 0.1) float32 weights of ``shape``."""
    return rng.normal(0, 0.1, shape).astype(np.float32)


def i32(*v: int) -> np.ndarray:
    """An int32 constant of the values ``v`` (shapes, axes, paddings, block sizes)."""
    return np.array(v, np.int32)


def conv(b: GraphBuilder, x: str, cin: int, cout: int, k: int | tuple[int, int] = 1, *,
         rng: np.random.Generator, **opts: Any) -> str:  # fmt: skip
    """A CONV_2D of ``x`` (``cin`` channels) to ``cout`` by a ``k`` kernel, zero bias."""
    kh, kw = (k, k) if isinstance(k, int) else k
    return b.op("CONV_2D", x, weights(cout, kh, kw, cin, rng=rng), np.zeros(cout, np.float32),
                **opts)  # fmt: skip


def depthwise(b: GraphBuilder, x: str, c: int, k: int | tuple[int, int] = 3, *,
              rng: np.random.Generator, **opts: Any) -> str:  # fmt: skip
    """A DEPTHWISE_CONV_2D of ``x`` (``c`` channels) by a ``k`` kernel, zero bias."""
    kh, kw = (k, k) if isinstance(k, int) else k
    return b.op("DEPTHWISE_CONV_2D", x, weights(1, kh, kw, c, rng=rng), np.zeros(c, np.float32),
                **opts)  # fmt: skip

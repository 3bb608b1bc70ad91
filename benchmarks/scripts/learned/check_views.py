"""Whether XNNPACK runs a view (RESHAPE, EXPAND_DIMS + SQUEEZE) between two ops it runs, or
keeps it in its partition for free; a TRANSPOSE in the same place for comparison.

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks.scripts.learned.check_views

Per plane (H, C): the latency of two 1x1 CONV_2Ds, what each middle op adds to it, and the
middle op's single-op latency (invoke overhead included). Printed on 2026-11-29 (2-core Zen 5,
load 4.6): two RESHAPEs added +0.5 / -0.2 / +0.5 us, EXPAND_DIMS + SQUEEZE +0.3 / -0.1 /
-0.7 us, against 2.0-3.6 us for a RESHAPE alone; a TRANSPOSE added 3.2 / 7.0 / 5.5 us, about
its own 3.4 / 6.3 / 3.5 us (:func:`~tacopt.cost_models.learned.measurement.singleop.
absorbed_reason`).
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.measurement.singleop import fill_constants
from tacopt.cost_models.learned.measurement.timing import Gate, MeasureConfig, time_model
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.writer import serialize_tflite

PLANES = ((28, 64), (56, 32), (14, 256))


def two_convs(h: int, c: int, middle: str | None) -> nx.MultiDiGraph:
    w = np.random.default_rng(0).normal(0, 0.1, (c, 1, 1, c)).astype(np.float32)
    b = GraphBuilder(f"views_{middle}")
    y = b.op("CONV_2D", b.input("x", (1, h, h, c)), w, np.zeros(c, np.float32))
    if middle == "reshape":
        y = b.op("RESHAPE", y, np.array([1, h * h, c], np.int32))
        y = b.op("RESHAPE", y, np.array([1, h, h, c], np.int32))
    elif middle == "expand":
        y = b.op("EXPAND_DIMS", y, np.array(0, np.int32), shape=(1, 1, h, h, c))
        y = b.op("SQUEEZE", y, squeeze_dims=[0], shape=(1, h, h, c))
    elif middle == "transpose":
        y = b.op("TRANSPOSE", y, np.array([0, 2, 1, 3], np.int32))
    return b.build(outputs=[b.op("CONV_2D", y, w, np.zeros(c, np.float32))])


def alone(h: int, c: int, kind: str) -> nx.MultiDiGraph:
    b = GraphBuilder(f"{kind.lower()}_alone")
    x = b.input("x", (1, h, h, c))
    if kind == "RESHAPE":
        return b.build(outputs=[b.op("RESHAPE", x, np.array([1, h * h, c], np.int32))])
    return b.build(outputs=[b.op("TRANSPOSE", x, np.array([0, 2, 1, 3], np.int32))])


def main() -> int:
    cfg = MeasureConfig(samples=12, rounds=3)
    gate = Gate(cfg)

    def latency_us(G: nx.MultiDiGraph) -> float:
        model = serialize_tflite(fill_constants(G, seed=0))
        return time_model(model, None, cfg, seed=0, samples=12, gate=gate).latency_us

    for h, c in PLANES:
        base = latency_us(two_convs(h, c, None))
        middles = ("reshape", "expand", "transpose")
        added = {m: latency_us(two_convs(h, c, m)) - base for m in middles}
        print(
            f"H {h} C {c}: two convs {base:.2f} us; + two RESHAPEs {added['reshape']:+.2f}, "
            f"+ EXPAND_DIMS/SQUEEZE {added['expand']:+.2f}, + TRANSPOSE {added['transpose']:+.2f}; "
            f"alone: RESHAPE {latency_us(alone(h, c, 'RESHAPE')):.2f}, "
            f"TRANSPOSE {latency_us(alone(h, c, 'TRANSPOSE')):.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

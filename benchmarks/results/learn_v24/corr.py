"""Do big chain models' whole timings move with the machine's memory? Eight of the learns' chain
models (rebuilt in `learn_v22/chains`), four speed references and two memory-streaming ADDs
(48 MB per invoke, past the 32 MB L3; 12 MB, inside it) timed in interleaved rounds of 4 samples
each, as a learn times them, for SECONDS; one JSON line per round (`corr_report.py` reads them).
Ran from /tmp/v24, 18:56-19:05 UTC, under the timing lock (reflowed since, same calls).

    python corr.py SECONDS
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tacopt.cost_models.learned.measurement.speed import REFERENCES, reference_models
from tacopt.cost_models.learned.measurement.timing import Gate, MeasureConfig, time_models
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.writer import serialize_tflite

CHAINS = ("netchain_3_39", "netchain_4_9", "netchain_4_5", "netchain_3_13", "netchain_4_2",
          "netchain_3_30", "netchain_3_25", "netchain_3_9")  # fmt: skip


def add_model(shape: tuple[int, ...]) -> bytes:
    """A float ADD of two inputs of ``shape``."""
    b = GraphBuilder("mem_add")
    x, z = b.input("x", shape), b.input("z", shape)
    return serialize_tflite(b.build(outputs=[b.op("ADD", x, z)]))


def main(seconds: float) -> None:
    models = {c: Path(f"/tmp/v22/chains/{c}.tflite").read_bytes() for c in CHAINS}
    refs = reference_models()
    for n in ("add", "add_l2", "conv", "dwconv"):
        assert n in REFERENCES
        models["ref_" + n] = refs[n]
    models["mem48"] = add_model((1, 256, 256, 64))
    models["mem12"] = add_model((1, 128, 128, 64))
    cfg = MeasureConfig(samples=4, rounds=4)
    gate = Gate(cfg)
    names = list(models)
    end = time.time() + seconds
    with open("corr.jsonl", "a") as f:
        while time.time() < end:
            timings = time_models([models[n] for n in names], cfg, gate=gate, samples=4)
            row: dict[str, float] = {"t": time.time()}
            for n, t in zip(names, timings):
                if not isinstance(t, Exception):
                    row[n] = t.cpu_us
            f.write(json.dumps(row) + "\n")
            f.flush()


if __name__ == "__main__":
    main(float(sys.argv[1]))

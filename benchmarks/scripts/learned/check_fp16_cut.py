"""Float16 weights: an op timed with its weights as a runtime input (before) or constant (now).

    flock /tmp/tacopt-timing.lock python -m tacopt.benchmarks check_fp16_cut MODEL_fp16.tflite

For each model (float16 weights behind DEQUANTIZE ops: ``python -m tacopt.benchmarks
zoo_variants``), every op that reads a DEQUANTIZE output is cut twice and timed (gated, interleaved,
as ``measure`` times ops): from the model **as stored**, where the dequantized weight is a runtime
input of the single-op model (what ``measure`` did before issue 22), and from the **priced graph**
(``singleop.priced_graph``: the DEQUANTIZE folded, the weight a constant, as the runtime runs it in
the model). Prints, per kind, the median and range of as-stored / constant, and per model the sums
of op latencies (net of the invoke overhead) against the whole model's measured latency.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

from tacopt.cost_models.learned.measurement.singleop import (
    cut_op,
    fill_constants,
    model_ops,
    priced_graph,
)
from tacopt.cost_models.learned.measurement.timing import (
    Gate,
    MeasureConfig,
    Timing,
    time_model,
    time_models,
)
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.writer import serialize_tflite

SKIP = {"DEQUANTIZE", "WHILE", "IF"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                         text=True, check=False).stdout.strip()  # fmt: skip
    print(f"{cpu}; load {os.getloadavg()}")
    cfg = MeasureConfig()
    gate = Gate(cfg)
    ratios: dict[str, list[float]] = defaultdict(list)
    print(f"{'model':44s} {'ops':>4s} {'fp16-fed':>8s} {'sum stored':>10s} {'sum const':>10s} "
          f"{'model':>8s}  (us; sums net of the invoke overhead)")  # fmt: skip
    for path in args.models:
        G = read_tflite(path)
        H, _, _ = priced_graph(G)
        dequantized = {op.outputs[0] for _, op in G.nodes(data="op") if op.kind == "DEQUANTIZE"}
        stored, const, fed = [], [], []
        for S, node, _ in model_ops(G):
            op = S.nodes[node]["op"]
            if op.kind in SKIP or S is not G:
                continue
            stored.append(serialize_tflite(fill_constants(cut_op(G, node), seed=args.seed)))
            fed.append((node, op.kind, any(t in dequantized for t in op.inputs if t)))
        for S, node, _ in model_ops(H):
            if S is H and S.nodes[node]["op"].kind not in SKIP:
                const.append(serialize_tflite(fill_constants(cut_op(H, node), seed=args.seed)))
        timed = time_models([*stored, *const], cfg, seed=args.seed, gate=gate)
        t_stored, t_const = timed[: len(stored)], timed[len(stored) :]
        overhead = gate.overhead_us()
        names_h = [n for S, n, _ in model_ops(H) if S is H and H.nodes[n]["op"].kind not in SKIP]
        by_name = dict(zip(names_h, t_const))
        for (node, kind, is_fed), t in zip(fed, t_stored):
            c = by_name.get(node)
            if is_fed and isinstance(t, Timing) and isinstance(c, Timing):
                ratios[kind].append(t.latency_us / c.latency_us)
        ok_s = [t.latency_us - overhead for t in t_stored if not isinstance(t, Exception)]
        ok_c = [t.latency_us - overhead for t in t_const if not isinstance(t, Exception)]
        whole = time_model(serialize_tflite(fill_constants(G, seed=args.seed)), None, cfg,
                           samples=cfg.model_samples, gate=gate).latency_us  # fmt: skip
        n_fed = sum(f for _, _, f in fed)
        print(f"{path.stem[:44]:44s} {len(fed):4d} {n_fed:8d} {sum(ok_s):10.1f} "
              f"{sum(ok_c):10.1f} {whole:8.1f}"
              + (f"  ({len(stored) - len(ok_s)} stored cuts failed)" if len(ok_s) < len(stored)
                 else ""))  # fmt: skip
    print("\nops reading float16 weights: latency cut as stored / cut with constant weights")
    for kind, rs in sorted(ratios.items()):
        print(f"  {kind:24s} {len(rs):4d} ops  median {statistics.median(rs):5.2f}x  "
              f"range {min(rs):.2f}-{max(rs):.2f}x")
    print(f"\nload {os.getloadavg()}; gate: {gate.overhead_us():.3f} us invoke overhead")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

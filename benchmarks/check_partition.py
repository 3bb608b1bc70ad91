"""Acceptance sweep: partition every zoo model, export it, and run both in ai-edge-litert.

For each model of ``../shared/zoo`` (or the files given), each device set (GPU,CPU /
NNAPI,CPU / GPU,NNAPI,CPU) and both granularities: rehydrate the weights (seed 0), partition,
check the plan (:func:`partitioner.plan.validate_plan`) and the graph
(:func:`fusion.ir.validate_graph`), export with the plan metadata, and compare the exported
model's outputs with the original's on the same random inputs.

Usage::

    python -m benchmarks.check_partition [MODEL.tflite ...] [--devices GPU,CPU] [--granularity op]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ZOO = Path(__file__).resolve().parents[2] / "shared" / "zoo"
DEVICE_SETS = ("GPU,CPU", "NNAPI,CPU", "GPU,NNAPI,CPU")
GRANULARITIES = ("subgraph", "op")


@dataclass(frozen=True, slots=True)
class Check:
    """One (model, devices, granularity) outcome: the plan and the worst output difference."""

    model: str
    devices: str
    granularity: str
    units: int
    status: str
    objective: float
    devices_used: dict[str, int]
    max_error: float  # worst |diff| / tolerance over the outputs; <= 1 passes
    seconds: float

    @property
    def ok(self) -> bool:
        return self.max_error <= 1.0


def run_litert(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of ``model`` run in ai-edge-litert, inputs and outputs in signature order."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_content=model, num_threads=1)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), inputs):
        interp.set_tensor(detail["index"], np.asarray(value, dtype=detail["dtype"]))
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def output_error(ref: np.ndarray, got: np.ndarray, scale: float | None) -> float:
    """Worst difference over the tolerance: 1e-3 of the output's range for floats (lowerings
    reorder sums), 2 steps + 2 % of the range for quantized outputs (float views re-round)."""
    ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
    spread = float(np.ptp(ref64)) if ref64.size else 0.0
    if scale is None:
        tol = 1e-3 * max(spread, float(np.abs(ref64).max(initial=0.0)), 1e-6)
    else:
        tol = 2.0 + 0.02 * spread
    return float(np.abs(ref64 - got64).max(initial=0.0)) / tol


def check_model(path: Path, devices: str, granularity: str, *, seed: int = 0) -> Check:
    """Partition, export and compare one model (see the module docstring)."""
    from fusion.executor import random_inputs
    from fusion.ir import validate_graph
    from fusion.reader import read_tflite
    from fusion.rehydrate import rehydrate
    from fusion.writer import serialize_tflite
    from partitioner.export import export_tflite
    from partitioner.pipeline import partition
    from partitioner.plan import validate_plan

    start = time.perf_counter()
    G = rehydrate(read_tflite(path), seed=seed)
    result = partition(G, devices, granularity=granularity, time_limit_s=20)
    validate_plan(result.problem, result.plan)
    validate_graph(result.graph)
    with tempfile.TemporaryDirectory() as tmp:
        exported = export_tflite(result, Path(tmp) / "partitioned.tflite").read_bytes()
    feeds = random_inputs(G, seed=seed)
    inputs = [feeds[t] for t in G.graph["inputs"]]
    ref = run_litert(serialize_tflite(G), inputs)
    got = run_litert(exported, inputs)
    tensors = G.graph["tensors"]
    errors = [
        output_error(r, g, tensors[t].quantization.scale[0] if tensors[t].is_quantized else None)
        for t, r, g in zip(G.graph["outputs"], ref, got)
    ]
    used: dict[str, int] = {}
    for _, data in result.graph.nodes(data=True):
        used[data["device"]] = used.get(data["device"], 0) + 1
    return Check(path.name, devices, granularity, len(result.partition.subgraphs),
                 result.plan.status, result.plan.objective, used, max(errors, default=0.0),
                 time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--devices", action="append", help="repeatable; default: all three sets")
    parser.add_argument("--granularity", action="append", choices=GRANULARITIES)
    args = parser.parse_args(argv)
    models = args.models or sorted(ZOO.glob("*.tflite"))
    failures = 0
    for path in models:
        for devices in args.devices or DEVICE_SETS:
            for granularity in args.granularity or GRANULARITIES:
                try:
                    c = check_model(path, devices, granularity)
                except Exception as exc:  # noqa: BLE001 - a sweep reports every failure
                    failures += 1
                    print(f"FAIL {path.name} {devices} {granularity}: "
                          f"{type(exc).__name__}: {exc}", flush=True)
                    continue
                failures += not c.ok
                print(f"{'ok  ' if c.ok else 'FAIL'} {c.model} {c.devices} {c.granularity} "
                      f"units={c.units} {c.status} objective={c.objective:.6g} "
                      f"ops={c.devices_used} err/tol={c.max_error:.3g} {c.seconds:.2f}s",
                      flush=True)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Acceptance sweep: partition every zoo model, export it, and run both in ai-edge-litert.

For each model of ``../shared/zoo`` (or the files given), each device set (GPU,CPU /
NNAPI,CPU / GPU,NNAPI,CPU) and both granularities: rehydrate the weights (seed 0), partition,
check the plan (:func:`tacopt.partitioner.plan.validate_plan`) and the graph
(:func:`tacopt.fusion.ir.validate_graph`), export with the plan metadata, and run it on random
inputs.

What the exported model is compared with (the device tags do not change how LiteRT runs it, so
what the partitioner can change is the *arithmetic*: lowerings, and int8 units run as FLOAT):

- the **reference** is the same plan with every unit on the CPU in the inference type the plan
  chose for it (:func:`reference_assignment`): the same QUANTIZE / DEQUANTIZE, no lowering;
- when the plan keeps every unit in its own type, the reference must give outputs
  **bit-identical** to the original model's (it is the model, ops possibly reordered), or,
  when the pipeline fused ops (a fused LSTM sums in another order than its loop), float
  outputs within 1e-5 of their range (quantized ones within one step);
- with no lowering in the plan, the exported model must be **bit-identical** to the reference;
- with lowerings, every lowered view is run on its own, fed the reference's values at its
  inputs, and must give the reference's values at its outputs within one quantization step plus
  half a step of each int8 tensor the rewrite added, in the output's scale
  (:func:`rounding_steps`: MEAN -> AVERAGE_POOL_2D rounds the mean in its input's scale before
  requantizing, TAC's rewrite), or 1e-3 of the range for floats (re-associated sums); float
  model outputs must also match end to end within 1e-3 of their range. Quantized model
  outputs are not compared end to end then: a coarse int8 softmax turns one rounding step of
  a logit into many steps of its output (resnet50 int8).

Running an int8 unit as FLOAT legitimately changes the numbers: with rehydrated random weights
the model's calibrated int8 ranges saturate (a transformer's layer-norm variance is clipped in
every element), and a float view does not clip in between. ``vs_original`` reports that
difference (worst |diff| over 2 steps + 2 % of the output range) without failing on it.

Usage::

    python -m tacopt.benchmarks check_partition [MODEL.tflite ...] [--devices GPU,CPU] \
        [--granularity op]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tacopt.fusion.ir import validate_graph
from tacopt.fusion.tflite.litert import random_inputs
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import rehydrate
from tacopt.fusion.tflite.writer import serialize_tflite
from tacopt.partitioner.apply import apply_plan, chosen_views
from tacopt.partitioner.export import export_tflite
from tacopt.partitioner.pipeline import partition
from tacopt.partitioner.plan import validate_plan

ZOO = Path(__file__).resolve().parents[4] / "shared" / "zoo"
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
    max_error: float  # worst |diff| / tolerance against the reference; <= 1 passes
    seconds: float
    float_units: int = 0  # quantized units the plan runs as FLOAT
    lowered_units: int = 0  # units whose chosen view holds a lowering
    vs_original: float = 0.0  # informational when float_units > 0

    @property
    def ok(self) -> bool:
        return self.max_error <= 1.0


def _interpreter(model: bytes, inputs: Sequence[np.ndarray], **kwargs: Any) -> Any:
    # Deferred: LiteRT (ai_edge_litert, ~0.3 s to import) only when a check runs a model.
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_content=model, num_threads=1, **kwargs)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), inputs):
        interp.set_tensor(detail["index"], np.asarray(value, dtype=detail["dtype"]))
    interp.invoke()
    return interp


def run_litert(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of ``model`` run in ai-edge-litert, inputs and outputs in signature order."""
    interp = _interpreter(model, inputs)
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def run_litert_all(model: bytes, inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor of ``model``'s main graph after a run, by name (for local checks)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "preserve_all_tensors is for debugging"
        interp = _interpreter(model, inputs, experimental_preserve_all_tensors=True)
    out = {}
    for d in interp.get_tensor_details():
        try:
            out[d["name"]] = interp.get_tensor(d["index"]).copy()
        except ValueError:  # tensors without data (unused optional inputs)
            continue
    return out


def output_error(
    ref: np.ndarray,
    got: np.ndarray,
    quantized: bool,
    *,
    steps: float = 1.0,
    range_share: float = 0.0,
) -> float:
    """Worst |diff| over the tolerance: ``steps`` + ``range_share`` of the range for quantized
    values, 1e-3 of the range (or of the largest magnitude) for floats."""
    ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
    if ref64.shape != got64.shape:
        return math.inf
    spread = float(np.ptp(ref64)) if ref64.size else 0.0
    if quantized:
        tol = steps + range_share * spread
    else:
        tol = 1e-3 * max(spread, float(np.abs(ref64).max(initial=0.0)), 1e-6)
    return float(np.abs(ref64 - got64).max(initial=0.0)) / tol


def exact_error(ref: Sequence[np.ndarray], got: Sequence[np.ndarray]) -> float:
    """0 when every output is bit-identical, else infinity."""
    same = len(ref) == len(got) and all(
        r.shape == g.shape and r.dtype == g.dtype and np.array_equal(r, g, equal_nan=True)
        for r, g in zip(ref, got)
    )
    return 0.0 if same else math.inf


def fused_error(original: np.ndarray, fused: np.ndarray) -> float:
    """Worst |diff| of a fused model's float output over 1e-5 of the original's range."""
    if original.shape != fused.shape:
        return math.inf
    a, b = original.astype(np.float64), fused.astype(np.float64)
    scale = 1e-5 * max(float(np.ptp(a)) if a.size else 0.0, float(np.max(np.abs(a), initial=0.0)))
    diff = float(np.max(np.abs(a - b), initial=0.0))
    return diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)


def reference_assignment(views: Sequence[Any]) -> dict[str, tuple[str, str]]:
    """Every chosen view's unit on the CPU in the view's inference type (no lowering)."""
    return {v.unit: ("CPU", v.inference_type) for v in views}


def local_error(view: Any, values: Mapping[str, np.ndarray]) -> float:
    """A lowered view run alone on the reference's values at its inputs, against the
    reference's values at its outputs (one step for quantized outputs)."""
    H = view.graph
    if any(t not in values for t in (*H.graph["inputs"], *H.graph["outputs"])):
        return math.inf
    got = run_litert(serialize_tflite(H), [values[t] for t in H.graph["inputs"]])
    tensors = H.graph["tensors"]
    return max(
        (
            output_error(values[t], g, True, steps=rounding_steps(H, t))
            if tensors[t].is_quantized
            else output_error(values[t], g, False)
            for t, g in zip(H.graph["outputs"], got)
        ),
        default=0.0,
    )


def rounding_steps(H: Any, out: str) -> float:
    """How far (in steps of ``out``) a lowered int8 view may stray: the one step any int8 op
    may differ by, plus half a step of every quantized tensor the rewrite added in between,
    in ``out``'s scale (MEAN -> AVERAGE_POOL_2D rounds the mean in its input's scale before
    requantizing: 0.5 * s_in / s_out more)."""
    tensors = H.graph["tensors"]
    ends = {*H.graph["inputs"], *H.graph["outputs"]}
    scale = tensors[out].quantization.scale[0]
    added = [tensors[t] for n in H for t in H.nodes[n]["op"].outputs if t not in ends]
    return 1.0 + sum(0.5 * t.quantization.scale[0] / scale for t in added if t.is_quantized)


def check_model(path: Path, devices: str, granularity: str, *, seed: int = 0) -> Check:
    """Partition, export and compare one model (see the module docstring)."""
    start = time.perf_counter()
    G = rehydrate(read_tflite(path), seed=seed)
    result = partition(G, devices, granularity=granularity, time_limit_s=20)
    validate_plan(result.problem, result.plan)
    validate_graph(result.graph)
    with tempfile.TemporaryDirectory() as tmp:
        exported = export_tflite(result, Path(tmp) / "partitioned.tflite").read_bytes()
    feeds = random_inputs(G, seed=seed)
    inputs = [feeds[t] for t in G.graph["inputs"]]
    chosen = chosen_views(result.partition, result.views, result.plan.assignment)
    own_type = {s.name: s.inference_type for s in result.partition.subgraphs}
    float_units = sum(v.inference_type != own_type[v.unit] for v in chosen)
    lowered = [v for v in chosen if v.lowerings]
    R = serialize_tflite(
        apply_plan(result.source, result.partition, result.views, reference_assignment(chosen))
    )
    ref, got, original = run_litert(R, inputs), run_litert(exported, inputs), None
    tensors = G.graph["tensors"]
    quantized = [tensors[t].is_quantized for t in G.graph["outputs"]]
    errors = []
    if float_units == 0:
        original = run_litert(serialize_tflite(G), inputs)
        if not result.fusions:
            errors.append(exact_error(original, ref))
        else:
            errors.extend(
                output_error(o, r, q, range_share=0.0) if q else fused_error(o, r)
                for o, r, q in zip(original, ref, quantized)
            )
    if not lowered:
        errors.append(exact_error(ref, got))
    else:
        errors.extend(output_error(r, g, q) for r, g, q in zip(ref, got, quantized) if not q)
        values = run_litert_all(R, inputs)
        errors.extend(local_error(v, values) for v in lowered)
    vs_original = 0.0
    if float_units:
        original = run_litert(serialize_tflite(G), inputs)
        vs_original = max(
            (
                output_error(o, g, q, steps=2.0, range_share=0.02)
                for o, g, q in zip(original, got, quantized)
            ),
            default=0.0,
        )
    used: dict[str, int] = {}
    for _, data in result.graph.nodes(data=True):
        used[data["device"]] = used.get(data["device"], 0) + 1
    return Check(
        path.name,
        devices,
        granularity,
        len(result.partition.subgraphs),
        result.plan.status,
        result.plan.objective,
        used,
        max(errors, default=0.0),
        time.perf_counter() - start,
        float_units,
        len(lowered),
        vs_original,
    )


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
                    print(
                        f"FAIL {path.name} {devices} {granularity}: {type(exc).__name__}: {exc}",
                        flush=True,
                    )
                    continue
                failures += not c.ok
                print(
                    f"{'ok  ' if c.ok else 'FAIL'} {c.model} {c.devices} {c.granularity} "
                    f"units={c.units} {c.status} objective={c.objective:.6g} "
                    f"ops={c.devices_used} float_units={c.float_units} "
                    f"lowered={c.lowered_units} err/tol={c.max_error:.3g} "
                    f"vs_original={c.vs_original:.3g} {c.seconds:.2f}s",
                    flush=True,
                )
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Check the numpy reference executor against the real TFLite interpreter on the whole zoo.

For every model: read it, rehydrate its dropped weights (seed 0), write it back, feed both the
reference executor (:func:`tacopt.fusion.executor.run_graph`) and ai-edge-litert the same random
inputs, and print

- ``out``: the largest error over the model outputs against the default interpreter (XNNPack
  delegate): for float outputs the absolute error and the error relative to the largest
  output magnitude, for quantized outputs the error in quantization steps;
- ``per-op``: every op of the main graph run alone on the interpreter's own intermediate tensors
  (``experimental_preserve_all_tensors``, builtin kernels): how many ops were checked, how many
  fall outside :func:`tacopt.fusion.executor.tolerance` (float) or one quantization step
  (quantized), how many are bit-exact, and the worst op;
- ``ms``: the median wall time of ``run_graph`` over ``--repeats`` runs.

Timings depend heavily on the BLAS thread pool: on a busy 2-core machine a multi-threaded
OpenBLAS spins and small GEMMs become 10-30x slower, so run with ``OPENBLAS_NUM_THREADS=1``.

Usage::

    python -m tacopt.benchmarks.check_executor [--zoo ../shared/zoo] [--repeats 3] [NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from pathlib import Path

import numpy as np

from tacopt.fusion.executor import random_inputs, run_graph, run_op, tolerance
from tacopt.fusion.ir import ops_of
from tacopt.fusion.reader import read_tflite
from tacopt.fusion.rehydrate import rehydrate
from tacopt.fusion.writer import serialize_tflite

DEFAULT_ZOO = Path(__file__).resolve().parents[2] / "shared" / "zoo"
#: The interpreter lets loop-carried tensors of these ops alias each other, so their preserved
#: inputs are not what the op read; their bodies are checked through the model outputs.
CONTROL_FLOW = frozenset({"WHILE", "IF", "CALL_ONCE"})


def _interpreter(data: bytes, feeds: dict[str, np.ndarray], preserve: bool):
    from ai_edge_litert.interpreter import Interpreter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        it = Interpreter(
            model_content=data, num_threads=1, experimental_preserve_all_tensors=preserve
        )
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], feeds[d["name"]])
    it.invoke()
    return it


def error(ours: np.ndarray, theirs: np.ndarray, quantized: bool) -> tuple[float, float]:
    """(absolute error, error relative to max |theirs|); quantized values count in steps."""
    if ours.shape != theirs.shape:
        return float("inf"), float("inf")
    if quantized or ours.dtype == np.bool_ or np.issubdtype(ours.dtype, np.integer):
        err = float(np.abs(ours.astype(np.int64) - theirs.astype(np.int64)).max(initial=0))
        return err, err
    err = float(np.abs(ours.astype(np.float64) - theirs).max(initial=0))
    return err, err / max(float(np.abs(theirs).max(initial=0)), 1e-30)


def check_ops(G, data: bytes, feeds: dict[str, np.ndarray]) -> tuple[int, int, int, str]:
    """Run each main-graph op on the interpreter's intermediates.

    Returns (ops checked, ops outside tolerance, ops whose outputs are bit-exact, worst op).
    """
    it = _interpreter(data, feeds, preserve=True)
    by_name: dict[str, int] = {}
    for d in it.get_tensor_details():
        by_name.setdefault(d["name"], d["index"])
    tensors = G.graph["tensors"]
    checked, off, exact, worst, worst_score = 0, 0, 0, "-", -1.0
    for name, op in ops_of(G):
        if op.kind in CONTROL_FLOW:
            continue
        # Variable inputs (LSTM states) hold the interpreter's state *after* the run: skip.
        wanted = [
            t
            for t in op.inputs
            if t is not None and not tensors[t].is_constant and not tensors[t].is_variable
        ]
        if not all(t in by_name for t in wanted + list(op.outputs)):
            continue
        try:
            feeds_op = {t: it.get_tensor(by_name[t]) for t in wanted}
            expected = {t: it.get_tensor(by_name[t]) for t in op.outputs}
        except ValueError:  # a tensor the interpreter never allocated (e.g. in a WHILE)
            continue
        ours = run_op(G, name, feeds_op)
        checked += 1
        exact += all(np.array_equal(mine, expected[t]) for t, mine in ours.items())
        for t, mine in ours.items():
            theirs = expected[t]
            quantized = tensors[t].is_quantized and tensors[t].dtype in ("int8", "uint8", "int16")
            err, _ = error(mine, theirs, quantized)
            if quantized:
                limit = 1.0
            else:
                rtol, atol = tolerance(op.kind)
                limit = atol + rtol * float(np.abs(theirs).max(initial=0))
            score = err / limit if limit else (0.0 if err == 0 else float("inf"))
            if score > 1:
                off += 1
            if score > worst_score:
                worst_score = score
                unit = "steps" if quantized else "abs"
                worst = f"{name} {err:.3g} {unit} ({score:.2g}x tol)"
    return checked, off, exact, worst


def check_model(path: Path, repeats: int) -> str:
    G = rehydrate(read_tflite(path), seed=0)
    data = serialize_tflite(G)
    feeds = random_inputs(G, seed=0)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        ours = run_graph(G, feeds)
        times.append(time.perf_counter() - t0)
    it = _interpreter(data, feeds, preserve=False)
    parts = []
    for d in it.get_output_details():
        theirs = it.get_tensor(d["index"])
        quantized = bool(d["quantization"][0])
        err, rel = error(ours[d["name"]], theirs, quantized)
        parts.append(f"{err:.0f} steps" if quantized else f"{err:.1e} abs {rel:.1e} rel")
    checked, off, exact, worst = check_ops(G, data, feeds)
    return (
        f"out {'; '.join(parts):24s} per-op {checked:4d} checked {exact:4d} exact {off:3d} off"
        f"  worst {worst:45s} ms {1000 * statistics.median(times):8.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only models whose file name contains one")
    parser.add_argument("--zoo", type=Path, default=DEFAULT_ZOO)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    paths = sorted(args.zoo.glob("*.tflite"))
    paths = [p for p in paths if not args.names or any(n in p.name for n in args.names)]
    for path in paths:
        try:
            line = check_model(path, args.repeats)
        except Exception as e:  # report and go on: this script surveys the whole zoo
            line = f"ERROR {type(e).__name__}: {e}"
        print(f"{path.stem:46s} {line}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Rebuild structure-only test models from Keras architectures with random weights.

Needs the optional ``[zoo]`` extra (``pip install -e '.[zoo]'``: tensorflow-cpu, tf-keras). Each
architecture is built with ``weights=None`` (random initialisation), converted to float32 and to
full-int8 (post-training quantization calibrated on random inputs), each conversion in its own
subprocess: TensorFlow's int8 calibration of WHILE-loop models can segfault, and a crash must cost
one model, not the run. Then every model is made structure-only with tacopt's own reader and
writer (:func:`tacopt.fusion.tflite.rehydrate.strip_weights`: weight buffers over 64 bytes that are
not INT32 / INT64 / BOOL keep only their size) and a MANIFEST.json row is written for it.

    python -m tacopt.benchmarks make_zoo --out /tmp/zoo                     # build, convert, strip
    python -m tacopt.benchmarks make_zoo --out /tmp/zoo --only mobilenet_v2
    python -m tacopt.benchmarks make_zoo --structure-only a.tflite b.tflite --out /tmp/zoo   # no TF
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tacopt.fusion.ir import all_graphs, ops_of
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.rehydrate import strip_weights
from tacopt.fusion.tflite.writer import write_tflite

#: name -> (builder expression run in the worker, input kind). Image models take 224x224x3.
ARCHITECTURES: dict[str, str] = {
    "mobilenet_v2": "keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3))",
    "mobilenet_v3_small": "keras.applications.MobileNetV3Small(weights=None, "
    "input_shape=(224, 224, 3))",
    "resnet50": "keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3))",
    "efficientnet_b0": "keras.applications.EfficientNetB0(weights=None, input_shape=(224, 224, 3))",
    "text_lstm": "text_model(keras.layers.LSTM(128))",
    "text_gru": "text_model(keras.layers.GRU(128))",
}

#: Run in a fresh interpreter per conversion: builds one model and writes one .tflite file.
_WORKER = r"""
import sys
import numpy as np
import tensorflow as tf
keras = tf.keras
name, expr, mode, out, seed = sys.argv[1:6]
tf.random.set_seed(int(seed)); np.random.seed(int(seed))

def text_model(rnn):
    inputs = keras.Input((64,), batch_size=1, dtype="int32")
    x = keras.layers.Embedding(10000, 128)(inputs)
    x = rnn(x)
    return keras.Model(inputs, keras.layers.Dense(4, activation="softmax")(x))

model = eval(expr)
converter = tf.lite.TFLiteConverter.from_keras_model(model)
if mode == "int8":
    shape = [1, *model.input_shape[1:]]
    text = model.inputs[0].dtype == "int32"
    def data():
        rng = np.random.default_rng(int(seed))
        for _ in range(8):
            if text:
                yield [rng.integers(0, 10000, shape).astype(np.int32)]
            else:
                yield [rng.uniform(-1, 1, shape).astype(np.float32)]
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = data
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if not text:
        converter.inference_input_type = converter.inference_output_type = tf.int8
open(out, "wb").write(converter.convert())
"""


def convert(name: str, mode: str, out_dir: Path, seed: int, timeout_s: float) -> Path | None:
    """Build and convert one architecture in a subprocess; None if it failed or crashed."""
    out = out_dir / f"keras__{name}_{'float32' if mode == 'float' else 'int8'}.full.tflite"
    cmd = [sys.executable, "-c", _WORKER, name, ARCHITECTURES[name], mode, str(out), str(seed)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        print(f"{out.name}: timed out after {timeout_s:.0f} s", file=sys.stderr)
        return None
    if proc.returncode != 0 or not out.is_file():
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"{out.name}: conversion failed (exit {proc.returncode}): {tail}", file=sys.stderr)
        return None
    return out


def structure_only(source: Path, target: Path) -> dict[str, Any]:
    """Write the structure-only copy of ``source`` to ``target``; return its MANIFEST row."""
    G = strip_weights(read_tflite(source))
    write_tflite(G, target)
    data = target.read_bytes()
    graphs = all_graphs(G)
    hist = Counter(op.kind for g in graphs for _, op in ops_of(g))
    fused = Counter(
        f"{op.kind}+{op.options['fused_activation_function']}"
        for g in graphs
        for _, op in ops_of(g)
        if op.options.get("fused_activation_function", "NONE") != "NONE"
    )
    tensors = G.graph["tensors"]

    def io(names: tuple[str, ...]) -> list[list[Any]]:
        return [[tensors[t].dtype.upper(), list(tensors[t].shape)] for t in names]

    return {
        "file": target.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "original_bytes": source.stat().st_size,
        "subgraphs": len(graphs),
        "ops": sum(g.number_of_nodes() for g in graphs),
        "tensors": sum(len(g.graph["tensors"]) for g in graphs),
        "op_histogram": [[k, n] for k, n in hist.most_common()],
        "fused_activations": [[k, n] for k, n in sorted(fused.items())],
        "inputs": io(G.graph["inputs"]),
        "outputs": io(G.graph["outputs"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--only", nargs="*", choices=sorted(ARCHITECTURES), help="architectures")
    parser.add_argument("--modes", nargs="*", default=["float", "int8"], choices=["float", "int8"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per conversion")
    parser.add_argument(
        "--structure-only",
        nargs="+",
        type=Path,
        metavar="MODEL",
        help="skip building: only make these existing .tflite files structure-only",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.structure_only:
        sources = [(p, args.out / p.name) for p in args.structure_only]
    else:
        sources = []
        for name in args.only or sorted(ARCHITECTURES):
            for mode in args.modes:
                full = convert(name, mode, args.out, args.seed, args.timeout)
                if full is not None:
                    sources.append((full, full.with_name(full.name.replace(".full", ""))))
    rows = []
    for source, target in sources:
        rows.append(structure_only(source, target))
        print(f"{target.name}: {rows[-1]['ops']} ops, {rows[-1]['bytes']:,} bytes")
    manifest = args.out / "MANIFEST.json"
    manifest.write_text(json.dumps(sorted(rows, key=lambda r: r["file"]), indent=1) + "\n")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())

"""Build the small LSTM test models of ``tests/fusion/models/`` (needs TensorFlow).

Every variant that :mod:`tacopt.fusion.rnn.lstm` and :mod:`tacopt.fusion.rnn` fuse, built with Keras
3 (WHILE loops) or tf-keras (``_tfkeras``: UNIDIRECTIONAL_SEQUENCE_LSTM), with random weights and
small sizes (8 steps, 6 features, 5 units), converted to float32 .tflite. The tests use the
structure-only copies (weights dropped; ``tacopt rehydrate`` fills them), so CI needs no
TensorFlow::

    pip install tensorflow-cpu tf-keras                       # in a separate venv is fine
    python tests/fusion/models/make_rnn_models.py --out /tmp/rnn_full
    python -m tacopt.benchmarks make_zoo --structure-only /tmp/rnn_full/*.tflite \
        --out tests/fusion/models

Each model is built and converted in its own process: a converter crash costs one model.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

T, F, H = 8, 6, 5  # steps, features, units

#: name -> (Keras flavour, builder body). The body sees ``keras``, ``L`` (layers), ``T, F, H``
#: and ends by setting ``model``.
MODELS: dict[str, tuple[str, str]] = {
    "k3_lstm_last": ("keras", "x = keras.Input((T, F), batch_size=1); y = L.LSTM(H)(x)"),
    "k3_lstm_seq": (
        "keras",
        "x = keras.Input((T, F), batch_size=1); y = L.LSTM(H, return_sequences=True)(x)",
    ),
    "k3_lstm_seq_batch2": (
        "keras",
        "x = keras.Input((T, F), batch_size=2); y = L.LSTM(H, return_sequences=True)(x)",
    ),
    "k3_lstm_backwards_seq": (
        "keras",
        "x = keras.Input((T, F), batch_size=1)\n"
        "y = L.LSTM(H, return_sequences=True, go_backwards=True)(x)",
    ),
    "k3_lstm_backwards_last": (
        "keras",
        "x = keras.Input((T, F), batch_size=1); y = L.LSTM(H, go_backwards=True)(x)",
    ),
    "k3_lstm_state_h": (
        "keras",
        "x = keras.Input((T, F), batch_size=1)\n"
        "s, h, c = L.LSTM(H, return_sequences=True, return_state=True)(x); y = [s, h]",
    ),
    "k3_lstm_state_hc": (
        "keras",
        "x = keras.Input((T, F), batch_size=1)\n"
        "s, h, c = L.LSTM(H, return_state=True)(x); y = [s, h, c]",
    ),
    "k3_lstm_initial_state": (
        "keras",
        "x = keras.Input((T, F), batch_size=1); h0 = keras.Input((H,), batch_size=1)\n"
        "c0 = keras.Input((H,), batch_size=1)\n"
        "y = L.LSTM(H, return_sequences=True)(x, initial_state=[h0, c0]); x = [x, h0, c0]",
    ),
    "k3_lstm_stateful": (
        "keras",
        "x = keras.Input((T, F), batch_size=1)\n"
        "y = L.LSTM(H, return_sequences=True, stateful=True)(x)",
    ),
    "k3_bilstm_concat_seq": (
        "keras",
        "x = keras.Input((T, F), batch_size=1)\n"
        "y = L.Bidirectional(L.LSTM(H, return_sequences=True))(x)",
    ),
    "k3_bilstm_concat_last": (
        "keras",
        "x = keras.Input((T, F), batch_size=1); y = L.Bidirectional(L.LSTM(H))(x)",
    ),
    "k3_bilstm_separate_seq": (
        "keras",
        "x = keras.Input((T, F), batch_size=1)\n"
        "y = L.Bidirectional(L.LSTM(H, return_sequences=True), merge_mode=None)(x)",
    ),
    "k3_bilstm_batch2": (
        "keras",
        "x = keras.Input((T, F), batch_size=2)\n"
        "y = L.Bidirectional(L.LSTM(H, return_sequences=True))(x)",
    ),
    "tfkeras_bilstm_concat_seq": (
        "tf_keras",
        "x = keras.Input((T, F), batch_size=1)\n"
        "y = L.Bidirectional(L.LSTM(H, return_sequences=True))(x)",
    ),
    "tfkeras_bilstm_concat_last": (
        "tf_keras",
        "x = keras.Input((T, F), batch_size=1); y = L.Bidirectional(L.LSTM(H))(x)",
    ),
    "tfkeras_bilstm_separate_seq": (
        "tf_keras",
        "x = keras.Input((T, F), batch_size=1)\n"
        "y = L.Bidirectional(L.LSTM(H, return_sequences=True), merge_mode=None)(x)",
    ),
    "tfkeras_bilstm_time_major": (
        "tf_keras",
        "x = keras.Input((F,), batch_size=T)\n"
        "z = L.Lambda(lambda v: tf.reshape(v, (T, 1, F)))(x)\n"
        "y = L.Bidirectional(L.LSTM(H, return_sequences=True, time_major=True))(z)",
    ),
}

_WORKER = r"""
import os, sys
flavour, body, out, seed = sys.argv[1:5]
T, F, H = (int(v) for v in sys.argv[5:8])
if flavour == "tf_keras":
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np
import tensorflow as tf
if flavour == "tf_keras":
    import tf_keras as keras
else:
    import keras
L = keras.layers
tf.random.set_seed(int(seed)); np.random.seed(int(seed))
exec(body)
model = keras.Model(x, y)
converter = tf.lite.TFLiteConverter.from_keras_model(model)
open(out, "wb").write(converter.convert())
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", choices=sorted(MODELS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    failed = 0
    for name in args.only or MODELS:
        flavour, body = MODELS[name]
        out = args.out / f"{name}_float32.tflite"
        cmd = [
            sys.executable,
            "-c",
            _WORKER,
            flavour,
            body,
            str(out),
            str(args.seed),
            str(T),
            str(F),
            str(H),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0 or not out.is_file():
            failed += 1
            tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{name}: failed: {tail}", file=sys.stderr)
        else:
            print(f"{name}: {out.stat().st_size:,} bytes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

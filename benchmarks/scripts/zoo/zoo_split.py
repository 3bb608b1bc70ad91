"""Split the shared zoo into a tuning half and a test half, once, before any tuning (issue 22).

Models of one architecture (the file name without its framework prefix and its
``_float32`` / ``_int8`` / ``_int8aeq`` / ``_dynamic`` suffix: ``keras__mobilenet_v2_int8`` and
``keras__mobilenet_v2_float32`` are ``mobilenet_v2``; ``torch__convnext_tiny_float32`` and the
keras ConvNeXts are ``convnext_tiny``) go to the same half, so no test model has a twin that a
choice was tuned on. Architectures are ordered by the SHA-256 of their name and alternate:
even positions tune, odd positions test. Nothing about the models' latencies or ops is read.

Run ``python -m tacopt.benchmarks zoo_split`` to (re)write ``benchmarks/zoo_split.json``
(committed: the split is fixed; the script shows how it was made and checks it is unchanged).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

ZOO = Path(__file__).resolve().parents[3].parent / "shared" / "zoo"
SPLIT = Path(__file__).resolve().parents[2] / "zoo_split.json"
SUFFIX = re.compile(r"_(float32|int8aeq|int8|dynamic)$")


def architecture(file: str) -> str:
    """The architecture of a zoo file name.

    >>> architecture("keras__mobilenet_v2_int8.tflite")
    'mobilenet_v2'
    >>> architecture("torch__convnext_tiny_float32.tflite")
    'convnext_tiny'
    >>> architecture("keras__text_lstm_dynamic.tflite")
    'text_lstm'
    """
    stem = file.removesuffix(".tflite").split("__", 1)[-1]
    return SUFFIX.sub("", stem)


def split(files: list[str]) -> dict[str, list[str]]:
    """``{"tune": [...], "test": [...]}``: architectures by hash of their name, alternating.

    >>> split(["a__x_int8.tflite", "a__x_float32.tflite", "a__y_float32.tflite"])["tune"]
    ['a__x_float32.tflite', 'a__x_int8.tflite']
    """
    archs = sorted(
        {architecture(f) for f in files}, key=lambda a: hashlib.sha256(a.encode()).hexdigest()
    )
    half = {a: ("tune" if i % 2 == 0 else "test") for i, a in enumerate(archs)}
    out: dict[str, list[str]] = {"tune": [], "test": []}
    for f in sorted(files):
        out[half[architecture(f)]].append(f)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zoo", type=Path, default=ZOO, help="the zoo folder (MANIFEST.json)")
    args = p.parse_args(argv)
    manifest = json.loads((args.zoo / "MANIFEST.json").read_text())
    files = [e["file"] for e in manifest]
    doc = {
        "rule": "architecture by sha256 of its name, alternating; even tune, odd test",
        **split(files),
    }
    text = json.dumps(doc, indent=1) + "\n"
    if SPLIT.exists() and SPLIT.read_text() != text:
        print(f"{SPLIT} differs from the split of {args.zoo}: not rewritten")
        return 1
    SPLIT.write_text(text)
    ops = {e["file"]: e["ops"] for e in manifest}
    for half in ("tune", "test"):
        print(f"{half}: {len(doc[half])} models, {sum(ops[f] for f in doc[half])} ops")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

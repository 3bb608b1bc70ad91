"""A test set that is not the zoo: models of other families, and the learned model on each family.

The shared zoo (Keras and PyTorch classifiers, text RNNs and transformers) is where the learned
model was tuned. Issue 47's held-out models (MediaPipe's landmark and segmentation networks, a face
detector, an audio transcriber) put ops elsewhere: data movement around attention and layout
changes, pads before convolutions, decoders, detection post-processing. This script writes
float models of five such families with the project's own builder and writer (tensorflow is not
installable here, so not the real converter), three sizes each, as real .tflite files that LiteRT
runs:

- ``attention``: a mobile vision transformer block (MobileViT-like): a convolution, the plane
  reshaped to tokens, Q/K/V projections, heads split by RESHAPE + TRANSPOSE, BATCH_MATMULs, a
  scaled SOFTMAX, heads merged, the tokens folded back to a plane;
- ``audio``: a pitch transcriber's front (basic-pitch-like): frames (1, T, F) expanded to a plane,
  padded in time, 2-D convolutions, harmonic stacking by strided slices, squares, a log, a channel
  reduction and a squeeze;
- ``segmentation``: a portrait segmenter (selfie-segmentation-like): a strided stem,
  squeeze-and-excitation (MEAN, 1x1 convolutions, a broadcast MUL of a runtime gate), an average
  pool, a bilinear upsampling with a skip ADD, a mirror pad before a VALID convolution, PReLU,
  DEPTH_TO_SPACE and a transposed convolution (in one model MediaPipe's custom
  ``Convolution2DTransposeBias``, priced by its rule), a sigmoid mask;
- ``detection``: a face detector's head and post-processing (BlazeFace-like): convolutions, a
  channel pad on the shortcut, regressors reshaped to anchors, boxes and keypoints cut by
  STRIDED_SLICE, anchor decoding by broadcast MUL / ADD, scores through a sigmoid, REDUCE_MAX,
  a threshold and SELECT_V2, a SHAPE, a concatenation;
- ``text``: a small text encoder: an embedding GATHER, a layer norm written out (MEAN, SUB, MUL,
  RSQRT), an MLP, a depthwise 1-D convolution over tokens (EXPAND_DIMS, DEPTHWISE_CONV_2D,
  SQUEEZE), a TRANSPOSE, a pooled SOFTMAX head.

No learn draws from these models (the sweep's priors are generic design rules), so each family is
held out whole: the figure per family is what a user's new model of that family gets.

    python -m tacopt.benchmarks.scripts.learned.families write DIR
    flock /tmp/tacopt-timing.lock tacopt measure DIR/*.tflite --out families.jsonl
    python -m tacopt.benchmarks.scripts.learned.families report MODEL.json.gz [...] \\
        --records families.jsonl [--per-kind]
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.model_file import read_model_doc
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.writer import write_tflite

_RNG = np.random.default_rng(47)


def _w(*shape: int) -> np.ndarray:
    return _RNG.normal(0, 0.1, shape).astype(np.float32)


def _conv(b: GraphBuilder, x: str, cin: int, cout: int, k: int = 1, **opts: Any) -> str:
    return b.op("CONV_2D", x, _w(cout, k, k, cin), np.zeros(cout, np.float32), **opts)


def _dw(b: GraphBuilder, x: str, c: int, k: int = 3, **opts: Any) -> str:
    return b.op("DEPTHWISE_CONV_2D", x, _w(1, k, k, c), np.zeros(c, np.float32), **opts)


def attention(h: int, c: int, heads: int) -> nx.MultiDiGraph:
    s, d = h * h, c // heads
    b = GraphBuilder(f"attention_{h}_{c}_{heads}")
    x = _conv(b, b.input("x", (1, h, h, c)), c, c, 3, fused_activation_function="RELU")
    t = b.op("RESHAPE", x, np.array([1, s, c], np.int32))

    def proj(name_perm: list[int]) -> str:
        p = b.op("FULLY_CONNECTED", t, _w(c, c), np.zeros(c, np.float32), keep_num_dims=True)
        p4 = b.op("RESHAPE", p, np.array([1, s, heads, d], np.int32))
        return b.op("TRANSPOSE", p4, np.array(name_perm, np.int32))

    q, k, v = proj([0, 2, 1, 3]), proj([0, 2, 3, 1]), proj([0, 2, 1, 3])
    a = b.op("BATCH_MATMUL", q, k)
    a = b.op("SOFTMAX", b.op("MUL", a, np.array([d**-0.5], np.float32)))
    o = b.op("TRANSPOSE", b.op("BATCH_MATMUL", a, v), np.array([0, 2, 1, 3], np.int32))
    o = b.op("RESHAPE", o, np.array([1, s, c], np.int32))
    o = b.op("ADD", b.op("FULLY_CONNECTED", o, _w(c, c), np.zeros(c, np.float32),
                         keep_num_dims=True), t)  # fmt: skip
    y = _conv(b, b.op("RESHAPE", o, np.array([1, h, h, c], np.int32)), c, c)
    return b.build(outputs=[y])


def audio(frames: int, bins: int, c: int) -> nx.MultiDiGraph:
    b = GraphBuilder(f"audio_{frames}_{bins}_{c}")
    x = b.op("EXPAND_DIMS", b.input("x", (1, frames, bins)), np.array(-1, np.int32),
             shape=(1, frames, bins, 1))  # fmt: skip
    x = b.op("PAD", x, np.array([[0, 0], [2, 2], [0, 0], [0, 0]], np.int32))
    x = _conv(b, x, 1, c, 5, padding="VALID", fused_activation_function="RELU")
    x = b.op("MUL", x, x)  # power
    x = b.op("LOG", b.op("ADD", x, np.array([1e-6], np.float32)))
    w = x_bins = bins - 4
    stacked = []
    for h in range(3):  # harmonic stacking: every third bin from an offset
        n = len(range(h, x_bins, 3))
        stacked.append(b.op(
            "STRIDED_SLICE", x, np.array([0, 0, h, 0], np.int32),
            np.array([1, frames, x_bins, c], np.int32), np.array([1, 1, 3, 1], np.int32),
            shape=(1, frames, n, c),
        ))  # fmt: skip
        w = min(w, n)
    stacked = [
        s if b.tensor(s).shape[2] == w else b.op(
            "SLICE", s, np.array([0, 0, 0, 0], np.int32), np.array([1, frames, w, c], np.int32),
            shape=(1, frames, w, c))
        for s in stacked
    ]  # fmt: skip
    x = b.op("CONCATENATION", *stacked, axis=3)
    x = _conv(b, x, 3 * c, c, 3, padding="SAME", fused_activation_function="RELU")
    x = b.op("SUM", x, np.array([3], np.int32), keep_dims=True)
    x = b.op("SQUEEZE", b.op("LOGISTIC", x), squeeze_dims=[3], shape=(1, frames, w))
    return b.build(outputs=[x])


def segmentation(h: int, c: int, *, mediapipe: bool = False) -> nx.MultiDiGraph:
    """``mediapipe``: the upsampling is MediaPipe's custom ``Convolution2DTransposeBias`` (its
    custom options: padding SAME, strides 2, 2), as its selfie segmenter writes it."""
    b = GraphBuilder(f"segmentation_{h}_{c}" + ("_mp" if mediapipe else ""))
    x = _conv(b, b.input("x", (1, h, h, 3)), 3, c, 3, stride_h=2, stride_w=2)
    x = b.op("HARD_SWISH", x)
    skip = _conv(b, _dw(b, x, c), c, c, fused_activation_function="RELU")
    m = b.op("MEAN", skip, np.array([1, 2], np.int32), keep_dims=True)
    g = _conv(b, _conv(b, m, c, c // 4, fused_activation_function="RELU"), c // 4, c)
    x = b.op("MUL", skip, b.op("LOGISTIC", g))  # squeeze-and-excitation's runtime gate
    x = b.op("AVERAGE_POOL_2D", x, padding="VALID", stride_h=2, stride_w=2, filter_height=2,
             filter_width=2)  # fmt: skip
    x = _conv(b, x, c, c, fused_activation_function="RELU")
    half = h // 2
    x = b.op("RESIZE_BILINEAR", x, np.array([half, half], np.int32), half_pixel_centers=True,
             shape=(1, half, half, c))  # fmt: skip
    x = b.op("ADD", x, skip)
    x = b.op("MIRROR_PAD", x, np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32),
             mode="REFLECT")  # fmt: skip
    x = _conv(b, x, c, 4 * c // 2, 3, padding="VALID")
    x = b.op("PRELU", x, np.full((1, 1, 2 * c), 0.1, np.float32))
    x = b.op("DEPTH_TO_SPACE", x, block_size=2, shape=(1, h, h, c // 2))
    out = (1, 2 * h, 2 * h, 8)
    if mediapipe:
        x = b.op("CUSTOM:Convolution2DTransposeBias", x, _w(8, 2, 2, c // 2),
                 np.zeros(8, np.float32), shape=out,
                 custom_options=struct.pack("<3i", 1, 2, 2))  # fmt: skip
    else:
        x = b.op("TRANSPOSE_CONV", np.array(out, np.int32), _w(8, 2, 2, c // 2), x,
                 np.zeros(8, np.float32), padding="SAME", stride_h=2, stride_w=2, shape=out,
                 dtype="float32")  # fmt: skip
    y = b.op("LOGISTIC", _conv(b, x, 8, 1))
    return b.build(outputs=[y])


def detection(h: int, c: int, anchors: int) -> nx.MultiDiGraph:
    b = GraphBuilder(f"detection_{h}_{c}_{anchors}")
    x = _conv(b, b.input("x", (1, h, h, 3)), 3, c, 5, stride_h=2, stride_w=2,
              fused_activation_function="RELU")  # fmt: skip
    y = _conv(b, _dw(b, x, c), c, 2 * c)
    x = b.op("PAD", x, np.array([[0, 0], [0, 0], [0, 0], [0, c]], np.int32))  # BlazeFace shortcut
    x = b.op("RELU", b.op("ADD", x, y))
    g = h // 2
    n = g * g * anchors
    reg = b.op("RESHAPE", _conv(b, x, 2 * c, anchors * 16), np.array([1, n, 16], np.int32))
    cls = b.op("RESHAPE", _conv(b, x, 2 * c, anchors), np.array([1, n, 1], np.int32))

    def cut(lo: int, hi: int) -> str:
        return b.op("STRIDED_SLICE", reg, np.array([0, 0, lo], np.int32),
                    np.array([1, n, hi], np.int32), np.array([1, 1, 1], np.int32),
                    shape=(1, n, hi - lo))  # fmt: skip

    boxes = b.op("ADD", b.op("MUL", cut(0, 4), np.full((1, 1, 4), 1 / 128, np.float32)),
                 _RNG.uniform(0, 1, (1, n, 4)).astype(np.float32))  # fmt: skip
    keypoints = b.op("MUL", cut(4, 16), np.full((1, 1, 12), 1 / 128, np.float32))
    scores = b.op("LOGISTIC", cls)
    best = b.op("REDUCE_MAX", scores, np.array([1], np.int32), keep_dims=True)
    mask = b.op("GREATER", scores, np.array([0.5], np.float32))
    kept = b.op("SELECT_V2", mask, scores, b.op("MUL", scores, np.zeros(1, np.float32)),
                shape=(1, n, 1), dtype="float32")  # fmt: skip
    size = b.op("SHAPE", boxes, out_type="INT32", shape=(3,), dtype="int32")
    dets = b.op("CONCATENATION", boxes, keypoints, kept, axis=2)
    return b.build(outputs=[dets, best, size])


def text(seq: int, dim: int, vocab: int) -> nx.MultiDiGraph:
    b = GraphBuilder(f"text_{seq}_{dim}_{vocab}")
    x = b.op("GATHER", _w(vocab, dim), b.input("ids", (1, seq), dtype="int32"), axis=0)
    mu = b.op("MEAN", x, np.array([2], np.int32), keep_dims=True)
    cen = b.op("SUB", x, mu)
    var = b.op("MEAN", b.op("MUL", cen, cen), np.array([2], np.int32), keep_dims=True)
    x = b.op("MUL", cen, b.op("RSQRT", b.op("ADD", var, np.array([1e-5], np.float32))))
    x = b.op("ADD", b.op("MUL", x, np.ones(dim, np.float32)), np.zeros(dim, np.float32))
    hid = b.op("FULLY_CONNECTED", x, _w(4 * dim, dim), np.zeros(4 * dim, np.float32),
               keep_num_dims=True, fused_activation_function="RELU")  # fmt: skip
    x = b.op("ADD", x, b.op("FULLY_CONNECTED", hid, _w(dim, 4 * dim), np.zeros(dim, np.float32),
                            keep_num_dims=True))  # fmt: skip
    e = b.op("EXPAND_DIMS", x, np.array(1, np.int32), shape=(1, 1, seq, dim))
    e = _dw(b, e, dim, 1, padding="SAME")
    e = b.op("DEPTHWISE_CONV_2D", e, _w(1, 1, 3, dim), np.zeros(dim, np.float32), padding="SAME")
    x = b.op("SQUEEZE", e, squeeze_dims=[1], shape=(1, seq, dim))
    t = b.op("TRANSPOSE", x, np.array([0, 2, 1], np.int32))
    pooled = b.op("MEAN", t, np.array([2], np.int32))
    y = b.op("SOFTMAX", b.op("FULLY_CONNECTED", pooled, _w(4, dim), np.zeros(4, np.float32)))
    return b.build(outputs=[y])


#: Family -> its models (three sizes each).
FAMILIES: dict[str, tuple[Callable[[], nx.MultiDiGraph], ...]] = {
    "attention": (lambda: attention(8, 64, 4), lambda: attention(16, 96, 4),
                  lambda: attention(14, 144, 8)),  # fmt: skip
    "audio": (lambda: audio(64, 88, 16), lambda: audio(128, 176, 16), lambda: audio(96, 264, 8)),
    "segmentation": (lambda: segmentation(64, 16), lambda: segmentation(128, 16),
                     lambda: segmentation(96, 24, mediapipe=True)),  # fmt: skip
    "detection": (lambda: detection(64, 24, 2), lambda: detection(128, 32, 2),
                  lambda: detection(96, 48, 6)),  # fmt: skip
    "text": (lambda: text(32, 64, 1000), lambda: text(128, 128, 5000),
             lambda: text(64, 256, 8000)),  # fmt: skip
}


def family_of(model: str) -> str:
    """The family of a model written by :func:`write_models` (``family__name``)."""
    return model.split("__", 1)[0]


def write_models(
    folder: Path, families: Mapping[str, Sequence[Callable[[], nx.MultiDiGraph]]] = FAMILIES
) -> list[Path]:
    """Write every family's models to ``folder`` as ``FAMILY__NAME.tflite``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for fam, builders in families.items():
        for build in builders:
            G = build()
            paths.append(write_tflite(G, folder / f"{fam}__{G.graph['name']}.tflite"))
    return paths


def family_records(
    records: Sequence[Mapping[str, Any]], family: str
) -> list[Mapping[str, Any]]:
    """The records of one family: its model records and the op / skip / folded records of the
    configurations its models hold (an op measured once for several families belongs to each)."""
    models = [r for r in records if r.get("type") == "model" and family_of(r["model"]) == family]
    keys = {k for m in models for k, _ in (*m["ops"], *m.get("folded", []))}
    ops = [r for r in records if r.get("type") in ("op", "skip", "folded") and r["key"] in keys]
    device = [r for r in records if r.get("type") == "device"]
    return [*device, *ops, *models]


def report(models: Sequence[Path], records_path: Path, *, per_kind: bool) -> None:
    records = read_records(records_path)
    families = sorted({family_of(r["model"]) for r in records if r.get("type") == "model"})
    for path in models:
        model = LearnedCostModel(read_model_doc(path), source=str(path))
        print(f"{path} on {records_path}:")
        print(f"  {'family':<13} {'ops':>4} {'±10 %':>7} {'net':>7} {'MAPE':>6} "
              f"{'models':>6} {'median':>7} {'worst':>7} {'skips':>6}")  # fmt: skip
        rows = []
        for fam in [*families, "all"]:
            recs = records if fam == "all" else family_records(records, fam)
            acc = model_accuracy(model, recs)
            errs = [abs(m["error"]) * 100 for m in acc["per_model"]]
            worst = max(errs) if errs else float("nan")
            print(
                f"  {fam:<13} {acc['ops']:>4} {acc['within_10pct'] * 100:>6.1f}% "
                f"{acc['within_10pct_net'] * 100:>6.1f}% {acc['mape']:>5.1f}% "
                f"{acc['models']:>6} {acc['model_error_median']:>6.1f}% {worst:>6.1f}% "
                f"{acc['skip_share'] * 100:>5.1f}%"
            )
            if fam != "all":
                rows.append(acc["within_10pct"])
            if per_kind and fam == "all":
                kinds = sorted(acc["per_kind"].items(), key=lambda kv: kv[1]["within_10pct"])
                for kind, v in kinds:
                    if v["within_10pct"] < 0.9:
                        print(f"    {kind:<32} n={v['n']:<4} {v['within_10pct'] * 100:5.1f}% "
                              f"MAPE {v['mape']:5.1f}%")  # fmt: skip
        print(f"  median of the families' ±10 % shares: {statistics.median(rows) * 100:.1f}%")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="families", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the families' models")
    w.add_argument("folder", type=Path)
    r = sub.add_parser("report", help="learned models on the families' records")
    r.add_argument("models", type=Path, nargs="+")
    r.add_argument("--records", type=Path, required=True)
    r.add_argument("--per-kind", action="store_true")
    args = parser.parse_args(argv)
    if args.cmd == "write":
        for p in write_models(args.folder):
            print(p)
        return 0
    report(args.models, args.records, per_kind=args.per_kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Issue 22's acceptance: learned models (from `tacopt learn`, or adapted with `--from`) on zoo
models no choice was tuned on.

    python -m tacopt.benchmarks bench_learn --model M.json [M2.json ...] \\
        --test zoo_test_a.jsonl [zoo_test_b.jsonl ...] [--half test|tune] [--per-kind]

Every model file is evaluated, as it is (no refit), on every records file (one independent
measurement of the zoo's ``--half`` each: ``tacopt measure`` of the models listed in
``benchmarks/zoo_split.json``, or of their float16 / sparse variants (``zoo_variants``: a
variant belongs to its model's half); records of other models are refused, so the tuning half
cannot leak into a test figure). Each records file is put in the model's units by its own reference
timings, per kernel family (cost_models/learned/measurement/speed.py). Printed per (model,
records): ops within ±10 %, MAPE, Spearman, median whole-model error, skipped op records, the
models' and records' device fingerprints (when they carry one) and their speed against the
model's anchor; then the median and range (spread) over the records files of each model.
``--per-kind``: the figures per (kind, inference type), kinds with >= 10 ops.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from tacopt.benchmarks.scripts.zoo.zoo_variants import VARIANT_SUFFIXES
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.fingerprint import describe
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.speed import family_indices, run_speed
from tacopt.cost_models.model_file import read_model_doc

SPLIT = Path(__file__).resolve().parents[2] / "zoo_split.json"
FIGURES = ("within_10pct", "mape", "spearman", "model_error_median", "skip_share")


def fingerprint_of(doc_or_records: Any) -> str:
    """A one-line description of the device a model or records file was measured on."""
    fp = None
    if isinstance(doc_or_records, dict):
        fp = doc_or_records.get("fingerprint")
    else:
        fp = next((r for r in doc_or_records if r.get("type") == "device"), None)
    if not fp:
        return "no fingerprint"
    return describe(fp.get("fingerprint", fp) if "fingerprint" in fp else fp)


def half_models(recs: list[dict[str, Any]]) -> set[str]:
    """The models of a records file (its ``model`` records)."""
    return {r["model"] for r in recs if r.get("type") == "model"}


def variant_of(name: str) -> str:
    """The zoo model a float16 / sparse variant was made from (``zoo_variants``), else ``name``.

    >>> variant_of("keras__xception_float32_fp16"), variant_of("keras__xception_int8")
    ('keras__xception_float32', 'keras__xception_int8')
    """
    stem, _, suffix = name.rpartition("_")
    return stem if stem and suffix in VARIANT_SUFFIXES else name


def foreign_ops(recs: list[dict[str, Any]]) -> bool:
    """Whether some op record is no op of the file's models (an op shared by two models is
    recorded once, under the first that measured it, so its ``model`` may be another one)."""
    keys = {k for r in recs if r.get("type") == "model" for k, _ in r.get("ops", [])}
    keys |= {k for r in recs if r.get("type") == "model" for k, _ in r.get("variants", [])}
    return any(r["key"] not in keys for r in recs if r.get("type") in ("op", "skip"))


def line(res: dict[str, Any]) -> str:
    return (
        f"within ±10 % {res['within_10pct'] * 100:5.1f} %  MAPE {res['mape']:6.1f} %  "
        f"Spearman {res['spearman']:.3f}  whole-model error {res['model_error_median']:5.1f} % "
        f"(signed {res['model_bias_median']:+5.1f} %, {res['models']} models)  "
        f"skips {res['skip_share'] * 100:.1f} % ({res['ops']} ops)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, nargs="+", required=True, help="learned model files")
    ap.add_argument("--test", type=Path, nargs="+", required=True, help="records files")
    ap.add_argument("--half", choices=("test", "tune"), default="test", help="zoo half")
    ap.add_argument("--per-kind", action="store_true", help="figures per (kind, type)")
    args = ap.parse_args(argv)
    half = {Path(f).stem for f in json.loads(SPLIT.read_text())[args.half]}
    print(f"load average: {os.getloadavg()}")
    tests = {}
    for path in args.test:
        recs = read_records(path)
        names = half_models(recs)
        outside = sorted(n for n in names if variant_of(n) not in half)
        if not outside and foreign_ops(recs):
            outside = ["(op records of no model in the file)"]
        if outside:
            print(f"{path}: models outside the {args.half} half: {', '.join(outside[:3])}")
            return 2
        tests[path] = recs
        print(f"records {path.name}: {len(names)} models, {fingerprint_of(recs)}")
    for mpath in args.model:
        doc = read_model_doc(mpath)
        model = LearnedCostModel(doc, source=str(mpath))
        learn = doc.get("learn", {})
        print(
            f"\nmodel {mpath.name}: {fingerprint_of(doc)}; trained on "
            f"{doc['trained_on']['ops']} ops"
            + (f", adapted on {doc['adapted']['ops']}" if doc.get("adapted") else "")
            + (f", learn {learn.get('measured_s', 0) / 60:.1f} min measuring" if learn else "")
        )
        results = []
        for path, recs in tests.items():
            res = model_accuracy(model, recs)
            results.append(res)
            idx = family_indices(run_speed(recs), model.anchor_speed)
            speeds = " ".join(f"{k} {v:.2f}" for k, v in idx.items())
            print(f"  {path.name:32s} {line(res)}\n    speed vs anchor: {speeds}")
            if args.per_kind:
                for k, v in res["per_kind"].items():
                    if v["n"] >= 10:
                        print(
                            f"      {k:36s} {v['n']:5d} {v['within_10pct'] * 100:6.1f} % "
                            f"MAPE {v['mape']:6.1f} %"
                        )
        if len(results) > 1:
            for f in FIGURES:
                scale = 100 if f in ("within_10pct", "skip_share") else 1
                v = [r[f] * scale for r in results]
                print(
                    f"    {f:20s} median {statistics.median(v):7.2f}  spread {min(v):7.2f} .. "
                    f"{max(v):7.2f} over {len(v)} records files"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

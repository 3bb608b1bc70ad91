"""Whole-model latency predicted / measured, per model of a records file, for learned models
side by side, and the median |error| of each (``bench_learn``'s whole-model error).

Run: ``python whole.py MODEL.json.gz [MODEL.json.gz ...] RECORDS.jsonl``.
"""

import json
import statistics
import sys

from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import records_by_key
from tacopt.cost_models.learned.measurement.speed import normalize_records
from tacopt.cost_models.model_file import read_model_doc

paths = [a for a in sys.argv[1:] if not a.endswith(".jsonl")]
with open(next(a for a in sys.argv[1:] if a.endswith(".jsonl"))) as f:
    records = [json.loads(line) for line in f]
rows: dict[str, list[float]] = {}
for path in paths:
    model = LearnedCostModel(read_model_doc(path))
    norm = normalize_records(records, model.anchor_speed)
    by_key = records_by_key(norm)
    for r, raw in zip(norm, records):
        if r.get("type") == "model" and r.get("latency_us"):
            ratio = model.predict_model(r, by_key) / r["latency_us"]
            rows.setdefault(r["model"], [raw["latency_us"]]).append(ratio)
print("model".ljust(40), "measured us", *[p.split("/")[-1][:12].rjust(12) for p in paths])
for name, v in sorted(rows.items(), key=lambda kv: kv[1][1]):
    print(name[:40].ljust(40), f"{v[0]:11.0f}", *[f"{x:12.3f}" for x in v[1:]])
errors = [
    statistics.median(abs(v[i] - 1) for v in rows.values()) * 100 for i in range(1, 1 + len(paths))
]
print("median |error| %".ljust(52), *[f"{e:12.2f}" for e in errors])

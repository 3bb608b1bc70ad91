"""The ops a learned model misses by more than 10 % on a records file (or all, ``--all``), one
line each: predicted / measured, measured us, the prediction's source, group, model, shapes.

Run: ``python misses.py MODEL.json.gz RECORDS.jsonl [GROUP-SUBSTRING] [--all]``.
"""

import json
import sys

from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.speed import normalize_records
from tacopt.cost_models.model_file import read_model_doc

args = [a for a in sys.argv[1:] if a != "--all"]
model = LearnedCostModel(read_model_doc(args[0]))
with open(args[1]) as f:
    records = [json.loads(line) for line in f]
wanted = args[2] if len(args) > 2 else ""
for r, raw in zip(normalize_records(records, model.anchor_speed), records):
    group = f"{r.get('kind')}|{r.get('inference_type')}"
    if r.get("type") != "op" or wanted not in group:
        continue
    p = model.predict(r, key=r["key"])
    ratio = model.as_measured(r, p.latency_us) / raw["latency_us"]
    if "--all" in sys.argv or abs(ratio - 1) > 0.1:
        shapes = [(d[0], d[1][:5], "c" if d[2] else "") for d in r["inputs"] if d]
        outs = [d[0] for d in r["outputs"] if d]
        print(
            f"{ratio:5.2f} {raw['latency_us']:9.2f} {p.source[:6]:6s} {group:28s} "
            f"{r['model'][:28]:28s} {shapes} -> {outs} {r.get('options', {})}"
        )

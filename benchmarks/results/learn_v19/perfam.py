"""Ops within ±10 % per kernel family, for each model on one records file.

Run: ``python perfam.py RECORDS.jsonl MODEL.json.gz...``.
"""

import json
import sys
from collections import defaultdict

from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.speed import family, normalize_records
from tacopt.cost_models.model_file import read_model_doc

with open(sys.argv[1]) as f:
    ops = [r for r in (json.loads(line) for line in f) if r.get("type") == "op"]
res: dict[str, dict[str, list[int]]] = {}
for path in sys.argv[2:]:
    m = LearnedCostModel(read_model_doc(path))
    h: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for n, r in zip(normalize_records(ops, m.anchor_speed), ops, strict=True):
        fam = family(r["kind"], r.get("inference_type"))
        h[fam][0] += 1
        h[fam][1] += abs(m.predict_as_measured(n, key=n["key"]) / r["latency_us"] - 1) <= 0.1
    res[path.split("/")[-1]] = h
fams = sorted({fam for h in res.values() for fam in h})
print("family".ljust(14), *[k[:14].rjust(14) for k in res])
for fam in fams:
    print(fam.ljust(14), *[f"{res[k][fam][1]:4d}/{res[k][fam][0]:<4d}".rjust(14) for k in res])

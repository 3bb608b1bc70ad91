"""Adapt BASE on RECORDS with the tacopt on the import path and print the share of ops within
±10 % on each TEST file (how ``ba.sh`` compared f702414 with a031dbe on the tuning halves).

Run: ``python ba.py BASE.json.gz RECORDS.jsonl TEST.jsonl...``.
"""

import sys

from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.measurement.speed import normalize_records
from tacopt.cost_models.learned.sampling.adapt import adapt
from tacopt.cost_models.model_file import read_model_doc

doc = adapt(read_model_doc(sys.argv[1]), quiet_records(read_records(sys.argv[2])))
model = LearnedCostModel(doc)
shares = []
for path in sys.argv[3:]:
    ops = [r for r in read_records(path) if r.get("type") == "op"]
    pairs = zip(normalize_records(ops, model.anchor_speed), ops, strict=True)
    hits = sum(
        abs(model.predict_as_measured(n, key=n["key"]) / r["latency_us"] - 1) <= 0.1
        for n, r in pairs
    )
    shares.append(f"{100 * hits / len(ops):.1f}")
own = doc["adapted"].get("own_families")
print(sys.argv[2].split("/")[-1], " ".join(shares), "own", own, flush=True)

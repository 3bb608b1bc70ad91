"""Ops within ±10 % per (kind, inference type) of one model on one records file, the groups
with the most misses first: ``python perkind.py RECORDS.jsonl MODEL.json.gz``."""

import math
import sys
from collections import defaultdict

from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.speed import family, normalize_records
from tacopt.cost_models.model_file import read_model_doc

ops = [r for r in read_records(sys.argv[1]) if r.get("type") == "op"]
model = LearnedCostModel(read_model_doc(sys.argv[2]))
groups: dict[str, list[float]] = defaultdict(list)  # predicted / measured, per op
for norm, r in zip(normalize_records(ops, model.anchor_speed), ops, strict=True):
    ratio = model.predict_as_measured(norm, key=norm["key"]) / r["latency_us"]
    groups[f"{r['kind']}|{r.get('inference_type')}"].append(ratio)
hits = {g: sum(abs(v - 1) <= 0.1 for v in vs) for g, vs in groups.items()}
total = sum(len(vs) for vs in groups.values())
misses = total - sum(hits.values())
print(f"total {total} hits {100 * (total - misses) / total:.1f}%")
for g, vs in sorted(groups.items(), key=lambda kv: hits[kv[0]] - len(kv[1])):
    n, k, med = len(vs), hits[g], sorted(abs(math.log(v)) for v in vs)[len(vs) // 2]
    share = 100 * (n - k) / max(misses, 1)
    print(f"{g:34s} {family(*g.split('|')):12s} {k:4d}/{n:<4d} miss {n - k:4d} ({share:4.1f} %)"
          f" median |log ratio| {med:.2f}")  # fmt: skip

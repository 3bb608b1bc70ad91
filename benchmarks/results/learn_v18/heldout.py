"""Per-kind accuracy on a learn's own held-out configurations: fit on 4 in 5 of its records (by
key hash, as ``fit`` chooses its sources) and print, per (kind, inference type), the share of
the rest within ±10 %; with ``KIND|TYPE`` substrings, one line per held-out op of those groups.

Run: ``python heldout.py LEARN.records.jsonl [GROUP,GROUP,...]``.
"""

import json
import sys
from collections import defaultdict

from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.fitting.sources import held_out
from tacopt.cost_models.learned.measurement.speed import normalize_records

with open(sys.argv[1]) as f:
    records = [json.loads(line) for line in f]
wanted = sys.argv[2].split(",") if len(sys.argv) > 2 else []
ops = [r for r in records if r.get("type") == "op" and r.get("quiet", True)]
train = [r for r in records if not (r.get("type") == "op" and held_out(r))]
test = [r for r in ops if held_out(r)]
model = LearnedCostModel(fit(train))
hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
for r, raw in zip(normalize_records(test, model.anchor_speed), test):
    p = model.predict(r)
    ratio = model.as_measured(r, p.latency_us) / raw["latency_us"]
    group = f"{r['kind']}|{r['inference_type'][:5]}"
    hits[group][0] += 1
    hits[group][1] += abs(ratio - 1) <= 0.1
    if any(w in group for w in wanted):
        shapes = [d[0] for d in r["inputs"] if d]
        print(f"{group} {ratio:.2f} {raw['latency_us']:.1f} {shapes} -> {r['outputs'][0][0]} "
              f"{r.get('options', {})} {p.source}")  # fmt: skip
n, h = sum(v[0] for v in hits.values()), sum(v[1] for v in hits.values())
print(f"all {n} ops, {100 * h / n:.1f} % within ±10 %")
for group, (n, h) in sorted(hits.items(), key=lambda kv: kv[1][1] / kv[1][0]):
    if n >= 5:
        print(f"{group:34s} {n:4d} {100 * h / n:5.1f} %")

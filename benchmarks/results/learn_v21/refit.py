"""python refit.py [--seed N] RECORDS OUT TEST...: fit() on RECORDS at the code on the path
(LightGBM's seed N instead of 0: the noise of a refit), write OUT, print the share of each TEST's
ops within ±10 %."""

import gzip
import json
import sys
import time

from tacopt.cost_models.learned.fitting import fit as fitting
from tacopt.cost_models.learned.fitting import kind_models, trees
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.speed import normalize_records

args = sys.argv[1:]
if args[0] == "--seed":
    seed, args = int(args[1]), args[2:]
    trees.LIGHTGBM_PARAMS["seed"] = seed
    kind_models.KIND_PARAMS["lightgbm"]["seed"] = seed
    for name, (learner, params) in list(fitting.LEARNERS.items()):
        fitting.LEARNERS[name] = (learner, {**params, "seed": seed})
start = time.time()
doc = fitting.fit(read_records(args[0]))
print(args[0], "fit s %.0f" % (time.time() - start), flush=True)
with gzip.open(args[1], "wt") as f:
    json.dump(doc, f)
m = LearnedCostModel(doc)
for path in args[2:]:
    ops = [r for r in read_records(path) if r.get("type") == "op"]
    hits = sum(
        abs(m.predict_as_measured(n, key=n["key"]) / r["latency_us"] - 1) <= 0.1
        for n, r in zip(normalize_records(ops, m.anchor_speed), ops)
    )
    print("  ", path, "%.1f" % (100 * hits / len(ops)), flush=True)

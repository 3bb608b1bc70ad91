"""python misses.py RECORDS MODEL KIND,KIND...: each op of those kinds, its predicted / measured
ratio, source and shapes (the misses marked)."""

import json
import sys

from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.speed import normalize_records
from tacopt.cost_models.model_file import read_model_doc

ops = [json.loads(line) for line in open(sys.argv[1])]
ops = [r for r in ops if r.get("type") == "op"]
m = LearnedCostModel(read_model_doc(sys.argv[2]))
kinds = sys.argv[3].split(",")
for n, r in zip(normalize_records(ops, m.anchor_speed), ops):
    g = r["kind"] + "|" + r["inference_type"][:5]
    if r["kind"] not in kinds:
        continue
    p = m.predict_as_measured(n, key=n["key"])
    ratio = p / r["latency_us"]
    miss = "MISS" if abs(ratio - 1) > 0.1 else "    "
    source = m.predict(n, key=n["key"]).source
    print(
        f"{g:18s} {miss} {ratio:5.2f} {r['latency_us']:8.1f} {source:12s}",
        [i[0] for i in r["inputs"]],
        r["outputs"][0][0],
        {k: v for k, v in r["options"].items() if k != "fused_activation_function" or v != "NONE"},
        r["model"][:22],
    )

"""python evalm.py MODEL TEST...: share of TEST ops within ±10 % (as bench_learn counts them)."""

import sys

from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.speed import normalize_records
from tacopt.cost_models.model_file import read_model_doc

m = LearnedCostModel(read_model_doc(sys.argv[1]))
for t in sys.argv[2:]:
    ops = [r for r in read_records(t) if r.get("type") == "op"]
    hits = sum(
        abs(m.predict_as_measured(n, key=n["key"]) / r["latency_us"] - 1) <= 0.1
        for n, r in zip(normalize_records(ops, m.anchor_speed), ops)
    )
    print(sys.argv[1], t, "%.1f" % (100 * hits / len(ops)), flush=True)

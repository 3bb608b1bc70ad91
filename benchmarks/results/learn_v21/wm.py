"""python wm.py MODEL[,MODEL...] RECORDS: each learned model's in-model scale, and its predicted /
measured whole-model latency over the records' models (sorted; the median |error| and ratio)."""

import statistics
import sys

from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.speed import normalize_records
from tacopt.cost_models.model_file import read_model_doc

recs = read_records(sys.argv[2])
for path in sys.argv[1].split(","):
    m = LearnedCostModel(read_model_doc(path))
    ops = [r for r in recs if r.get("type") in ("op", "skip")]
    by_key = {n["key"]: n for n in normalize_records(ops, m.anchor_speed)}
    ratios = sorted(
        m.predict_model(r, by_key) / r["latency_us"] for r in recs if r.get("type") == "model"
    )
    error, middle = statistics.median(abs(x - 1) for x in ratios), statistics.median(ratios)
    print(f"{path} scale {m.scale:.4f} per_op {m.per_op_us:.3f}", end=" ")
    print(f"median |err| {100 * error:.2f} % median ratio {middle:.3f}")
    print("  ", " ".join(f"{x:.3f}" for x in ratios))

"""Adaptation as ``tacopt learn --from`` builds it, on recorded adaptation records: the corrected
base with its residual trees (``corr+trees``) and with a model of the device's own where it wins
(``full``, what ``tacopt learn --from`` writes), scored on one zoo half of a device's records.

Run: ``python adapt_variants.py BASE.json.gz ADAPT_RECORDS.jsonl HALF RECORDS.jsonl...`` (HALF:
``tune`` or ``test``, as in ``benchmarks/zoo_split.json``). Run at the commit before and after a
change to compare them.
"""

import gzip
import json
import sys
from pathlib import Path

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.sampling.adapt import adapt

SPLIT = Path(__file__).resolve().parents[2] / "zoo_split.json"

with gzip.open(sys.argv[1], "rt") as f:
    base = json.load(f)
recs = quiet_records(read_records(sys.argv[2]))
half = set(json.loads(SPLIT.read_text())[sys.argv[3]])


def in_half(r: dict) -> bool:
    """Device records and the records of the half's models."""
    kept = ("op", "model", "skip", "folded")
    return r.get("type") not in kept or f"{r.get('model')}.tflite" in half


tests = {p: [r for r in read_records(p) if in_half(r)] for p in sys.argv[4:]}
for name, own in (("corr+trees", False), ("full", True)):
    model = LearnedCostModel(adapt(base, recs, own=own))
    for path, t in tests.items():
        a = model_accuracy(model, t)
        print(
            f"{name:10s} {Path(path).name:24s} within ±10 % {100 * a['within_10pct']:5.1f} %  "
            f"MAPE {a['mape']:5.1f} %  whole-model {a['model_error_median']:5.1f} %  "
            f"({a['ops']} ops, {a['models']} models)"
        )

"""Adapt BASE on RECORDS with the tacopt on the import path (in one process: it ran beside a
timing run) and print the share of ops within ±10 % on each TEST file and the own model's
weights (``ba20.sh``: learn_v19's ``ba.py`` at b88c674).

Run: ``python ba20.py BASE.json.gz RECORDS.jsonl TEST.jsonl...``.
"""

import sys

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.sampling.adapt import adapt
from tacopt.cost_models.model_file import read_model_doc

doc = adapt(read_model_doc(sys.argv[1]), quiet_records(read_records(sys.argv[2])), workers=1)
model = LearnedCostModel(doc)
shares = [
    f"{100 * model_accuracy(model, read_records(p))['within_10pct']:.1f}" for p in sys.argv[3:]
]
own = doc["adapted"].get("own_weights")
print(sys.argv[2].split("/")[-1], " ".join(shares), "own", own, flush=True)

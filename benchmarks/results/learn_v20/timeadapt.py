"""Adapt BASE on RECORDS at the code on the import path, timing the fit, and print the share of
ops within ±10 % on each TEST file: ``python timeadapt.py BASE RECORDS OUT|- TEST...``."""

import sys
import time
from pathlib import Path

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.sampling.adapt import adapt
from tacopt.cost_models.model_file import model_bytes, read_model_doc

base, records = read_model_doc(sys.argv[1]), quiet_records(read_records(sys.argv[2]))
t0 = time.time()
doc = adapt(base, records)
weights = doc["adapted"].get("own_weights")
print(sys.argv[2], f"adapted in {time.time() - t0:.0f} s", weights, flush=True)
if sys.argv[3] != "-":
    Path(sys.argv[3]).write_bytes(model_bytes(doc, sys.argv[3]))
model = LearnedCostModel(doc)
for path in sys.argv[4:]:
    print("  ", path, f"{100 * model_accuracy(model, read_records(path))['within_10pct']:.1f}")

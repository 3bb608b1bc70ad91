"""python profadapt.py SORT: profile adapt() of adapt_bi_m3's records on base_z4i in one process."""

import cProfile
import pstats
import sys
import time

from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.sampling.adapt import adapt
from tacopt.cost_models.model_file import read_model_doc

base = read_model_doc("base_z4i.json.gz")
recs = quiet_records(read_records("adapt_bi_m3.records.jsonl"))
pr = cProfile.Profile()
t = time.time()
pr.enable()
d = adapt(base, recs, workers=1)
pr.disable()
print("adapt", time.time() - t)
pstats.Stats(pr).sort_stats(sys.argv[1]).print_stats(45)

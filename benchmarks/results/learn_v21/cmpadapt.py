"""python cmpadapt.py RECORDS OUT: adapt base_z4i.json.gz on RECORDS at the code on the path,
time it, write the model (sorted keys) to compare two versions byte for byte."""

import gzip
import json
import sys
import time

from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.sampling.adapt import adapt
from tacopt.cost_models.model_file import read_model_doc

base = read_model_doc("base_z4i.json.gz")
recs = quiet_records(read_records(sys.argv[1]))
t = time.time()
d = adapt(base, recs)
print(sys.argv[1], "adapt s %.1f" % (time.time() - t), flush=True)
with gzip.open(sys.argv[2], "wt") as f:
    json.dump(d, f, sort_keys=True)

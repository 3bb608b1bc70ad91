"""Adapt a base model on recorded adaptation records, as ``tacopt learn --from`` does after
measuring (the records' op records with a quiet sample).

Run: ``python readapt.py BASE.json.gz RECORDS.jsonl OUT.json.gz`` (records: ``learn_v13``
``adapt_builtin`` / ``adapt_xnn2``, unzipped).
"""

import gzip
import json
import sys

from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.sampling.adapt import adapt

with gzip.open(sys.argv[1], "rt") as f:
    base = json.load(f)
doc = adapt(base, quiet_records(read_records(sys.argv[2])))
with gzip.open(sys.argv[3], "wt") as f:
    f.write(json.dumps(doc))

"""How the records of a run agree with two earlier learns of the same configurations, quiet and
not quiet apart (the table "x0-x5" in docs/cost-models.md).

    python compare_quiet.py ../learn_v12/learn13.records.jsonl.gz \
        ../learn_v12/learn14.records.jsonl.gz x0.records.jsonl.gz ...

Each op's latency is divided by the geometric mean of the two references', then by the median
of those ratios over the run; "agree" is the share within ±10 %.
"""

import gzip
import json
import sys

import numpy as np


def load(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return {r["key"]: r for r in map(json.loads, f) if r.get("type") == "op"}


a, b = load(sys.argv[1]), load(sys.argv[2])
for path in sys.argv[3:]:
    x = load(path)
    keys = [k for k in x if k in a and k in b]
    q = {k: x[k]["latency_us"] / np.sqrt(a[k]["latency_us"] * b[k]["latency_us"]) for k in keys}
    med = np.median(list(q.values()))
    quiet = np.array([q[k] / med for k in keys if x[k]["quiet"]])
    loud = np.array([q[k] / med for k in keys if not x[k]["quiet"]])
    line = f"{path}: {len(x)} ops, {len(keys)} in all three; quiet: {len(quiet)} agree "
    line += f"{np.mean(abs(quiet - 1) <= 0.1):.3f}"
    if len(loud):
        line += f"; not quiet: {len(loud)} agree {np.mean(abs(loud - 1) <= 0.1):.3f}"
        line += f", slower {np.mean(loud > 1.1):.3f}"
    print(line)

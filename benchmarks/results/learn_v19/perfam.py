"""Ops within ±10 % per kernel family, for each model on one records file (``model_accuracy``'s
figures per kind, summed per family).

Run: ``python perfam.py RECORDS.jsonl MODEL.json.gz...``.
"""

import sys
from collections import defaultdict

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.speed import family
from tacopt.cost_models.model_file import read_model_doc

records = read_records(sys.argv[1])
res: dict[str, dict[str, list[int]]] = {}
for path in sys.argv[2:]:
    per_kind = model_accuracy(LearnedCostModel(read_model_doc(path)), records)["per_kind"]
    h: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for group, acc in per_kind.items():
        fam = family(*group.split("|", 1))
        h[fam][0] += int(acc["n"])
        h[fam][1] += round(acc["n"] * acc["within_10pct"])
    res[path.split("/")[-1]] = h
fams = sorted({fam for h in res.values() for fam in h})
print("family".ljust(14), *[k[:14].rjust(14) for k in res])
for fam in fams:
    print(fam.ljust(14), *[f"{res[k][fam][1]:4d}/{res[k][fam][0]:<4d}".rjust(14) for k in res])

"""The device's own model and the corrected base blended in log space at weights 0-1, per kernel
family, against the adapted model of the code on the import path (``cur``):
``python blend.py BASE ADAPT_RECORDS TEST...`` (as run at bb1caa9, imports updated)."""

import math
import sys
from collections import defaultdict

from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.measurement.speed import family, normalize_records
from tacopt.cost_models.learned.sampling import adapt as A
from tacopt.cost_models.model_file import read_model_doc

base = read_model_doc(sys.argv[1])
recs = quiet_records(read_records(sys.argv[2]))
ops = [r for r in recs if r.get("type") == "op" and r.get("speed")]
cur = LearnedCostModel(A.adapt(base, recs))
corr = LearnedCostModel(A.adapt(base, recs, own=False))
own = LearnedCostModel(fit(ops, device="CPU"))
W = [0, 0.25, 0.5, 0.75, 1.0]


def within(p: float, m: float) -> int:
    return int(abs(p / m - 1) <= 0.1)


for t in sys.argv[3:]:
    test = [r for r in read_records(t) if r.get("type") == "op"]
    fams: dict[str, list[int]] = defaultdict(lambda: [0] * (len(W) + 2))
    sides = zip(
        test,
        normalize_records(test, corr.anchor_speed),
        normalize_records(test, own.anchor_speed),
        normalize_records(test, cur.anchor_speed),
        strict=True,
    )
    for raw, nb, no, nc in sides:
        m = raw["latency_us"]
        pb = corr.predict_as_measured(nb, key=nb["key"])
        po = own.predict_as_measured(no, key=no["key"])
        f = fams[family(raw["kind"], raw.get("inference_type"))]
        f[0] += 1
        for i, w in enumerate(W):
            f[i + 1] += within(
                math.exp(w * math.log(max(po, 1e-3)) + (1 - w) * math.log(max(pb, 1e-3))), m
            )
        f[-1] += within(cur.predict_as_measured(nc, key=nc["key"]), m)
    tot = [sum(v[i] for v in fams.values()) for i in range(len(W) + 2)]
    shares = " ".join(f"{w}:{100 * h / tot[0]:.1f}" for w, h in zip(W, tot[1:], strict=False))
    print(sys.argv[2].split("/")[-1], t.split("/")[-1], "w(own)=" + shares,
          f"cur:{100 * tot[-1] / tot[0]:.1f}", flush=True)  # fmt: skip
    for k, v in sorted(fams.items()):
        print("   ", k.ljust(12), v[0], " ".join(str(x) for x in v[1:]))

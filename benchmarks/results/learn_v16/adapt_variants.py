"""Adaptation on recorded 3-minute records, judged on zoo records (the tuning half).

Run: ``python adapt_variants.py BASE.json.gz VARIANT ADAPT.records.jsonl ... TUNE.jsonl ...``
(record files named ``*adapt*`` are adaptation records, the others the zoo's). ``VARIANT``:
``default`` (the code as it is) or ``kinds`` (every GEMM kind corrected on its own, as before
9fe38f8). Prints, per adaptation records file, ops within ±10 % / median whole-model error on
each zoo file and the families the device's own model prices.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import tacopt.cost_models.learned.sampling.adapt as ad
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.model_file import read_model_doc


def main(argv: Sequence[str]) -> int:
    base_path, variant, *files = argv
    adapts = [f for f in files if "adapt" in f]
    tests = [read_records(f) for f in files if "adapt" not in f]
    if variant == "kinds":
        ad.FAMILY_ONLY = frozenset()
    base: Mapping[str, Any] = read_model_doc(base_path)
    for a in adapts:
        doc = ad.adapt(base, quiet_records(read_records(a)))
        model = LearnedCostModel(doc)
        res = [model_accuracy(model, t) for t in tests]
        figures = " ".join(
            f"{r['within_10pct'] * 100:.1f}/{r['model_error_median']:.1f}" for r in res
        )
        print(variant, a.split("/")[-1], figures, "own", doc["adapted"].get("own_families"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The in-model spill alone, on learns that came before it: each learn's whole-model terms
refitted on its own records (its ops' predictions as they were), with one scale (no device
caches, so no spill can be fitted) and with the spill, then the median whole-model error
on the tuning half (``model_accuracy``, as ``bench_learn`` reports it).

    python spill_variants.py TUNE_E.jsonl,TUNE_F.jsonl MODEL:RECORDS [MODEL:RECORDS ...]
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.fitting.whole_model import whole_model_terms
from tacopt.cost_models.learned.measurement.fingerprint import records_fingerprint
from tacopt.cost_models.learned.measurement.records import fingerprint_caches, read_records
from tacopt.cost_models.model_file import read_model_doc


def refitted(
    doc: Mapping[str, Any], records: Sequence[Mapping[str, Any]], caches: list[int] | None
) -> LearnedCostModel:
    """The model of ``doc`` with the device caches ``caches`` (None: no spill can be fitted)
    and its whole-model terms fitted again on ``records``."""
    new = {**doc, "cache_bytes": caches}
    terms = whole_model_terms(records, LearnedCostModel(new))
    new["in_model_scale"], new["in_model_spill"], new["per_op_us"], new["while_trip_us"] = terms
    return LearnedCostModel(new)


def main(argv: Sequence[str]) -> None:
    tunes = [read_records(p) for p in argv[0].split(",")]
    errors: dict[str, list[float]] = {"one scale": [], "spill": []}
    for pair in argv[1:]:
        model_path, records_path = pair.split(":")
        doc = read_model_doc(model_path)
        records = read_records(records_path)
        line = [model_path.rsplit("/", 1)[-1]]
        caches = fingerprint_caches(records_fingerprint(records))
        for name, with_caches in (("one scale", None), ("spill", caches)):
            m = refitted(doc, records, with_caches)
            errs = [model_accuracy(m, t)["model_error_median"] for t in tunes]
            errors[name] += errs
            line.append(f"{name}: scale {m.scale:.4f} spill {m.spill:.4f} "
                        f"error {' / '.join(f'{e:.1f}' for e in errs)} %")  # fmt: skip
        print(" | ".join(line), flush=True)
    for name, errs in errors.items():
        print(f"{name:10s} mean {statistics.mean(errs):.2f} %  worst {max(errs):.2f} %")


if __name__ == "__main__":
    main(sys.argv[1:])

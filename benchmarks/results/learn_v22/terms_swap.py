"""A learn's op model with another learn's whole-model terms, on the tuning half: whether a
learn's whole-model error comes from its ops or from the in-model scale its chains fitted.

    python terms_swap.py LEARN.json.gz OTHER.json.gz TUNE_E.jsonl TUNE_F.jsonl
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.model_file import read_model_doc

TERMS = ("in_model_scale", "in_model_spill", "cache_bytes", "per_op_us", "while_trip_us")


def main(argv: Sequence[str]) -> None:
    doc, other = read_model_doc(argv[0]), read_model_doc(argv[1])
    tunes = [read_records(p) for p in argv[2:]]
    swapped = {**doc, **{k: other.get(k) for k in TERMS}}
    for name, d in ((f"{argv[0]} as fitted", doc), (f"with {argv[1]}'s terms", swapped)):
        m = LearnedCostModel(d)
        errors = [model_accuracy(m, t)["model_error_median"] for t in tunes]
        print(f"{name}: scale {m.scale} spill {m.spill}; median whole-model error "
              f"{' / '.join(f'{e:.2f}' for e in errors)} %")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])

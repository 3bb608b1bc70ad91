"""Other fits of the whole-model terms, on each learn's own records (its ops' predictions as they
were), scored by the median whole-model error (and the signed one) on the tuning half:

- ``as fitted``: the learn's file;
- ``free``: scale, spill and per-op cost refitted as `whole_model_terms` fits them (soft_l1);
- ``free linear``: the same with plain least squares on the log ratios;
- ``per_op P``: the per-op cost held at P us (``overhead``: the learn's invoke overhead), scale
  and spill refitted. An unrolled GRU of 1,085 tiny ops runs at 0.73 us an op where its ops'
  net latencies sum to 0.23 us an op: does a per-op dispatch cost the fit misses carry over?

    python per_op_variants.py TUNE_E.jsonl,TUNE_F.jsonl MODEL:RECORDS [MODEL:RECORDS ...]
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from tacopt.cost_models.learned.fitting import whole_model
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.model_file import read_model_doc

#: (name, per-op cost held, loss); a loss of None keeps the file's terms.
VARIANTS: tuple[tuple[str, float | str | None, str | None], ...] = (
    ("as fitted", None, None),
    ("free", None, "soft_l1"),
    ("free linear", None, "linear"),
    ("per_op 0.1", 0.1, "soft_l1"),
    ("per_op 0.2", 0.2, "soft_l1"),
    ("per_op 0.3", 0.3, "soft_l1"),
    ("per_op 0.45", 0.45, "soft_l1"),
    ("per_op=overhead", "overhead", "soft_l1"),
)


def model_rows(
    records: Sequence[Mapping[str, Any]], model: LearnedCostModel
) -> tuple[np.ndarray, ...]:
    """(measured, op sum, ops, spill level) of the loop-free models, as `whole_model_terms`
    fits them (`whole_model.model_rows`), as arrays."""
    rows, _ = whole_model.model_rows(records, model)
    return tuple(np.array(c, dtype=float) for c in zip(*rows))


def terms(
    rows: tuple[np.ndarray, ...], per_op: float | None, loss: str
) -> tuple[float, float, float]:
    """(scale, spill, per_op) fitted on ``rows``, ``per_op`` held when given."""
    y, a, n, s = rows
    if per_op is None:
        fit = least_squares(
            lambda p: np.log(((p[0] + p[2] * s) * a + p[1] * n) / y),
            x0=[1.0, 0.0, 0.0], bounds=([0.25, 0, 0], [4, 100, 4]), loss=loss, f_scale=0.05,
        )  # fmt: skip
        return float(fit.x[0]), float(fit.x[2]), float(fit.x[1])
    held = per_op
    fit = least_squares(
        lambda p: np.log(((p[0] + p[1] * s) * a + held * n) / y),
        x0=[1.0, 0.0], bounds=([0.25, 0], [4, 4]), loss=loss, f_scale=0.05,
    )  # fmt: skip
    return float(fit.x[0]), float(fit.x[1]), held


def main(argv: Sequence[str]) -> None:
    tunes = [read_records(p) for p in argv[0].split(",")]
    errors: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
    for pair in argv[1:]:
        model_path, records_path = pair.split(":")
        doc = read_model_doc(model_path)
        base = LearnedCostModel(doc)
        rows = model_rows(read_records(records_path), base)
        lines = [model_path.rsplit("/", 1)[-1]]
        for name, held, loss in VARIANTS:
            m = base
            if loss is not None:
                per_op = base.overhead_us if held == "overhead" else held
                assert per_op is None or isinstance(per_op, float)
                scale, spill, po = terms(rows, per_op, loss)
                m = LearnedCostModel({**doc, "in_model_scale": round(scale, 4),
                                      "in_model_spill": round(spill, 4),
                                      "per_op_us": round(po, 4)})  # fmt: skip
            res = [model_accuracy(m, t) for t in tunes]
            errs = [x["model_error_median"] for x in res]
            errors[name] += errs
            signed = "/".join(f"{x['model_bias_median']:+.1f}" for x in res)
            unsigned = "/".join(f"{e:.1f}" for e in errs)
            lines.append(f"{name}: {m.scale:.3f} + {m.spill:.3f} s, per op {m.per_op_us:.3f} "
                         f"-> {unsigned} % (signed {signed})")  # fmt: skip
        print("\n  ".join(lines), flush=True)
    for name, errs in errors.items():
        print(f"{name:16s} mean {statistics.mean(errs):.2f} %  worst {max(errs):.2f} %")


if __name__ == "__main__":
    main(sys.argv[1:])

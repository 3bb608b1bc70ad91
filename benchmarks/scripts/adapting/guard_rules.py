"""The guard's choice rules side by side, on one adaptation's records (issue 47, item 5).

    python -m tacopt.benchmarks.scripts.adapting.guard_rules --base BASE.json.gz \\
        --records A.records.jsonl --test families.jsonl [--test more.jsonl]

Adapts ``--base`` on every quiet op record of ``--records`` once
(:func:`~tacopt.cost_models.learned.sampling.adapt.adapt`, whose folds of the device's own
model judge every op: ``fold_hits``), then prices the ``--test`` records (models no adaptation
saw) with the base, the adaptation unguarded, and the adaptation under each rule of choice:
per kernel family only; per family, then each kind whose own probes show its way beats its
family's (the rule of :func:`~tacopt.cost_models.learned.sampling.guard.choose`); the same with
a margin of max(2, sqrt(probes)). One line per model and rule: ops within ±10 %, whole-model
median error (signed), kinds choosing apart from their family, and per family of
:mod:`~tacopt.benchmarks.scripts.learned.families` ops / whole-model.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tacopt.benchmarks.scripts.learned.families import family_of, family_records
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.measurement.speed import FAMILIES, family
from tacopt.cost_models.learned.sampling.adapt import adapt
from tacopt.cost_models.learned.sampling.guard import MIN_PROBES, choose
from tacopt.cost_models.model_file import read_model_doc

Hits = Mapping[str, Mapping[str, int]]


def _with_margin(fam: Hits, kind: Hits, margin: Callable[[int], int]) -> dict[str, str]:
    """:func:`choose`, a kind taking its own way only by ``margin(probes)`` hits or more."""
    plain = choose(fam, {})
    out = dict(plain)
    for group, own in choose(fam, kind).items():
        if group in FAMILIES:
            continue
        h, of_family = kind[group], plain[family(*group.split("|", 1))]
        if h["probes"] >= MIN_PROBES and h[own] - h[of_family] >= margin(h["probes"]):
            out[group] = own
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--records", type=Path, required=True, help="records of the target device")
    ap.add_argument("--test", type=Path, action="append", required=True, help="held-out records")
    args = ap.parse_args(argv)
    base = read_model_doc(args.base)
    records = quiet_records(read_records(args.records))
    doc = adapt(base, records)
    hits = doc["adapted"].pop("fold_hits", None)
    if hits is None:
        print("too few records for the own model's folds: no fold hits to choose on")
        return 1
    fam = {k: v for k, v in hits.items() if "|" not in k}
    kind = {k: v for k, v in hits.items() if "|" in k}
    rules: dict[str, dict[str, str] | None] = {
        "unguarded": None,
        "per family": choose(fam, {}),
        "per family, then kinds": choose(fam, kind),
        "kinds by max(2, sqrt n)": _with_margin(
            fam, kind, lambda n: max(2, math.ceil(math.sqrt(n)))
        ),
    }
    ops = sum(1 for r in records if r.get("type") == "op")
    for test_path in args.test:
        test = read_records(test_path)
        fams = sorted({family_of(r["model"]) for r in test if r.get("type") == "model"})
        print(f"{args.base.name} adapted on {args.records.name} ({ops} ops), on {test_path.name}:")
        models: dict[str, tuple[dict[str, Any], int]] = {"base": (dict(base), 0)}
        for name, chosen in rules.items():
            adapted = (
                doc
                if chosen is None
                else {**doc, "adapted": {**doc["adapted"], "family_choice": chosen}}
            )
            kinds = sum(1 for k in chosen or {} if k not in FAMILIES)
            models[name] = (adapted, kinds)
        for name, (d, kinds) in models.items():
            model = LearnedCostModel(d)
            acc = model_accuracy(model, test)
            per = []
            for f in fams:
                a = model_accuracy(model, family_records(test, f))
                per.append(f"{f} {a['within_10pct'] * 100:.1f}/{a['model_error_median']:.1f}")
            print(
                f"  {name:<24} ops {acc['within_10pct'] * 100:5.1f} %  whole "
                f"{acc['model_error_median']:5.1f} % ({acc['model_bias_median']:+.1f}) "
                f"kinds {kinds:3d} | " + "  ".join(per)
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

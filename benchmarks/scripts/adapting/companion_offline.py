"""A kernel-set companion offline: the prior it gives and the adaptation it starts, against the
base and the adaptation without it, on held-out models (issue 47 item 5).

    python -m tacopt.benchmarks.scripts.adapting.companion_offline --base MODEL.json.gz \\
        --set builtin/1 --test families_builtin_pos.jsonl.gz heldout_builtin.jsonl.gz \\
        [--records A.records.jsonl] [--save PREFIX]

``--base``: a learned model file holding the companion ``--set``
(``tacopt companion``). On each ``--test`` records file (measured on that kernel set) it prints
ops within ±10 % and the whole-model median (worst) error of the base, not adapted, and of the
prior (the base times the companion, no probes), and per family of
:mod:`~tacopt.benchmarks.scripts.learned.families` the ops within ±10 % / whole-model median.
With ``--records`` (a live adaptation's records, ``tacopt learn --from``), it also adapts the
base on them as ``tacopt learn --from`` does (:func:`~tacopt.cost_models.learned.sampling.
guard.guarded_adapt`, every quiet record), once from the base and once from the prior, and
prints both; and per family whether each is worse on whole models than the base not adapted.
``--save PREFIX``: the two adapted models as ``PREFIX.base.json.gz``, ``PREFIX.prior.json.gz``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tacopt.benchmarks.scripts.learned.families import family_of, family_records
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.sampling.adapt import prior_doc
from tacopt.cost_models.learned.sampling.guard import choice_lines, guarded_adapt
from tacopt.cost_models.model_file import model_bytes, read_model_doc
from tacopt.io import atomic_write


def scores(doc: Mapping[str, Any], test: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"all": (ops within ±10 %, whole-model median, worst), FAMILY: (...)}`` (%) of the
    model ``doc`` on records ``test``."""
    model = LearnedCostModel(doc)
    families = sorted({family_of(r["model"]) for r in test if r.get("type") == "model"})
    out = {}
    for fam in ["all", *families]:
        acc = model_accuracy(model, test if fam == "all" else family_records(test, fam))
        errs = [abs(m["error"]) * 100 for m in acc["per_model"]]
        out[fam] = (100 * acc["within_10pct"], acc["model_error_median"],
                    max(errs) if errs else float("nan"))  # fmt: skip
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="a model holding the companion")
    ap.add_argument("--set", required=True, help="the companion's kernel set (builtin/1, ...)")
    ap.add_argument("--test", type=Path, nargs="+", required=True, help="held-out records")
    ap.add_argument("--records", type=Path, help="an adaptation's records (learn --from)")
    ap.add_argument("--save", help="write PREFIX.base.json.gz and PREFIX.prior.json.gz")
    args = ap.parse_args(argv)
    base_doc = read_model_doc(args.base)
    if args.set not in (base_doc.get("companions") or {}):
        print(f"companion_offline: '{args.base}' holds no companion {args.set}", file=sys.stderr)
        return 2
    models: dict[str, dict[str, Any]] = {
        "base, not adapted": prior_doc(base_doc, None),
        "prior (base x companion)": prior_doc(base_doc, args.set),
    }
    if args.records is not None:
        recs = quiet_records(read_records(args.records))
        ops = sum(1 for r in recs if r.get("type") == "op")
        print(f"adapting {args.base.name} on {ops} ops of {args.records.name}, twice")
        models["adapted from the base"] = guarded_adapt(base_doc, recs)
        models["adapted from the prior"] = guarded_adapt(base_doc, recs, companion=args.set)
        for name, suffix in (("adapted from the base", "base"),
                             ("adapted from the prior", "prior")):  # fmt: skip
            print(f"{name}: per kernel family, as judged on the ops the fit did not see:")
            print("\n".join(choice_lines(models[name]["adapted"])))
            if args.save:
                path = Path(f"{args.save}.{suffix}.json.gz")
                atomic_write(path, model_bytes(models[name], path))
    for path in args.test:
        test = read_records(path)
        print(f"{path}: ops within ±10 % / whole-model median (worst), %")
        base = None
        for name, doc in models.items():
            s = scores(doc, test)
            base = base or s
            ops, median, worst = s["all"]
            print(f"  {name:<26} {ops:5.1f} / {median:5.1f} ({worst:5.1f})")
            fams = [f for f in s if f != "all"]
            print("    " + ", ".join(f"{f} {s[f][0]:.0f} / {s[f][1]:.1f}" for f in fams))
            worse = [f for f in fams if s[f][1] > base[f][1]]
            if name != "base, not adapted":
                print(f"    worse than the base on whole models: {', '.join(worse) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

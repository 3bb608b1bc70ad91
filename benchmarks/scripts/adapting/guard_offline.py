"""An adaptation against its base on held-out models, with and without the guard (issue 47).

    python -m tacopt.benchmarks.scripts.adapting.guard_offline --base BASE.json.gz \\
        --records TARGET.records.jsonl --minutes 3 --test families.jsonl
    python -m tacopt.benchmarks.scripts.adapting.guard_offline --base BASE.json.gz \\
        --records A.records.jsonl --all --test families.jsonl --save A   # a learn's records

Adapts ``--base`` to the device of ``--records`` offline, on a deterministic random subset of
its op records (by key hash) worth ``--minutes`` of measuring at the sweep's duty cycle
(:func:`~tacopt.benchmarks.scripts.adapting.bench_adapt.first_minutes`), or ``--ops N`` of
them (a 15-minute learn on the 2-core Zen 5 measured ~780 ops a minute, so a 3-minute
adaptation, 2.1 minutes of measuring, ~1,650). It adapts twice:
unguarded (:func:`~tacopt.cost_models.learned.sampling.adapt.adapt`) and guarded
(:func:`~tacopt.cost_models.learned.sampling.guard.guarded_adapt`). It then prints, on the
``--test`` records (models no adaptation saw): ops within ±10 %, MAPE, and the median
whole-model error of the base, the unguarded and the guarded model, per family of
:mod:`~tacopt.benchmarks.scripts.learned.families` when the records hold its models, and the
guard's choice per kernel family and kind. ``--all``: every quiet record, chain models timed
whole included, as ``tacopt learn --from`` fits them (the records of a live adaptation);
``--chains K``: beside the subset, the first ``K`` network chain models (``netchain_*``) timed
whole and their ops, for the guard's whole-model check; ``--save PREFIX``: the two adapted
models as ``PREFIX.unguarded.json.gz`` and ``PREFIX.guarded.json.gz``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tacopt.benchmarks.scripts.adapting.bench_adapt import first_minutes
from tacopt.benchmarks.scripts.learned.families import family_of, family_records
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import quiet_records, read_records
from tacopt.cost_models.learned.sampling.adapt import adapt
from tacopt.cost_models.learned.sampling.guard import choice_lines, guarded_adapt
from tacopt.cost_models.model_file import model_bytes, read_model_doc
from tacopt.io import atomic_write


def _shuffled(records: Sequence[Mapping[str, Any]]) -> list[dict]:
    def h(r: Mapping[str, Any]) -> str:
        return hashlib.sha1(str(r.get("key")).encode()).hexdigest()

    return sorted((dict(r) for r in records if r.get("type") == "op"), key=h)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--records", type=Path, required=True, help="records of the target device")
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--duty", type=float, default=0.45, help="measured time / wall time")
    ap.add_argument("--ops", type=int, help="keep this many op records instead of --minutes")
    ap.add_argument("--all", action="store_true", help="every quiet record (as learn)")
    ap.add_argument("--chains", type=int, default=0, help="also K network chains and their ops")
    ap.add_argument("--test", type=Path, required=True, help="held-out records")
    ap.add_argument("--save", help="write PREFIX.unguarded.json.gz and PREFIX.guarded.json.gz")
    args = ap.parse_args(argv)
    base_doc = read_model_doc(args.base)
    every = read_records(args.records)
    shuffled = _shuffled(quiet_records(every))
    ops: list[dict[str, Any]]
    chains: list[dict[str, Any]] = []
    if args.all:
        ops, kept = [dict(r) for r in quiet_records(every) if r.get("type") == "op"], "--all"
        chains = [dict(r) for r in quiet_records(every) if r.get("type") == "model"]
    elif args.ops:
        ops, kept = shuffled[: args.ops], f"--ops {args.ops}"
    else:
        ops = first_minutes(shuffled, args.minutes, args.duty)
        kept = f"{args.minutes:g} min at duty {args.duty:g}"
    if args.chains:
        quiet = quiet_records(every)
        chains = [dict(r) for r in quiet if r.get("type") == "model"
                  and str(r.get("model")).startswith("netchain_")][: args.chains]  # fmt: skip
        labels = {c["model"] for c in chains}
        have = {(r["key"], r.get("model")) for r in ops}
        ops += [dict(r) for r in quiet if r.get("type") == "op" and r.get("model") in labels
                and (r["key"], r.get("model")) not in have]  # fmt: skip
    devices = [r for r in every if r.get("type") == "device"]
    recs = [*devices, *ops, *chains]
    print(f"adapting {args.base.name} on {len(ops)} ops of {args.records.name} ({kept}), "
          f"{len(chains)} chain models timed whole")  # fmt: skip
    test = read_records(args.test)
    guarded = guarded_adapt(base_doc, recs)
    models = {
        "base": base_doc,
        "adapted, unguarded": adapt(base_doc, recs),
        "adapted, guarded": guarded,
    }
    if args.save:
        for name in ("unguarded", "guarded"):
            path = Path(f"{args.save}.{name}.json.gz")
            atomic_write(path, model_bytes(models[f"adapted, {name}"], path))
    families = sorted({family_of(r["model"]) for r in test if r.get("type") == "model"})
    for name, doc in models.items():
        model = LearnedCostModel(doc)
        acc = model_accuracy(model, test)
        print(
            f"  {name:<20} within ±10 % {acc['within_10pct'] * 100:5.1f} %  MAPE "
            f"{acc['mape']:5.1f} %  whole-model median {acc['model_error_median']:5.1f} % "
            f"({acc['models']} models, {acc['ops']} ops)"
        )
        for fam in families if len(families) > 1 else ():
            a = model_accuracy(model, family_records(test, fam))
            print(f"    {fam:<18} within ±10 % {a['within_10pct'] * 100:5.1f} %  whole-model "
                  f"median {a['model_error_median']:5.1f} %")  # fmt: skip
    print("guard's choice per kernel family and kind (probes within ±10 %):")
    print("\n".join(choice_lines(guarded["adapted"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

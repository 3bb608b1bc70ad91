"""An adaptation that never replaces its base where it cannot show it helps (issue 47).

Adapted from the shipped model to LiteRT's builtin kernels in 3 minutes, the model put 22.2 % of
held-out ops within ±10 % where the base, not adapted, put 34.0 %: corrections and trees fitted
on a few hundred ops moved kinds they had barely seen (PRELU, CONCATENATION, RESIZE_BILINEAR).
:func:`guarded_adapt` judges every measured op by a fit that did not see it: the folds of
:func:`~tacopt.cost_models.learned.sampling.adapt.adapt`'s choice of the device's own model
(each op held out once, every side fitted on the other four fifths), or, with too few ops for
them (or no own model), a fit of three quarters judged on the quarter held out (probes, by
configuration key). It prices the held-out ops per kernel family and per kind three ways:

- ``adapted``: the adaptation as fitted (corrections, residual trees, the device's own model
  at its family's weight);
- ``corrected``: the base re-anchored and corrected per kind and family, no trees, no own model;
- ``base``: the base re-anchored by the device's reference timings, the device's invoke overhead.

Each family keeps the way that put the most of its probes within ±10 %; on a tie, or with
fewer than :data:`MIN_PROBES` probes, the simpler one (the base first). A family no probe
reached keeps the base. Then each kind (``KIND|TYPE``, its kernel kind) with
:data:`MIN_PROBES` probes of its own takes its own best way where that puts more of its probes
within ±10 % than its family's way (a tie keeps the family's: on 8-20 probes a tie is noise):
the issue's PRELU, CONCATENATION and RESIZE_BILINEAR went wrong inside families whose other
kinds the adaptation priced well. The choice and its counts are written into the
model (``adapted.family_choice``, families and kinds; ``adapted.guard``,
``adapted.kind_guard``) and ``tacopt learn`` prints them. The model itself is fitted on every
record, as without the guard, and prices each family and kind the way chosen. Fitted on three
quarters only, the Zen 4 model adapted to a 2-core Zen 5 on 1,650 ops put 46.6 % of the
families' ops within ±10 % against 51.9 % unguarded (every family chose the adaptation;
``benchmarks/scripts/adapting/guard_offline.py``). Judging on the folds the adaptation fits
anyway spares that fit (not timed apart; the live 4-minute builtin adaptations fitted in 99 s
on 4,424 ops with it, in 101 s on 4,491 and 87 s on 7,208 without, under other loads) and
judges five times as many ops. The adaptation's count is a little favoured there: the own
model's weight is chosen on the same folds.

**Whole models** (:func:`whole_model_check`). Ops are not what a user sees: a family can win on
ops and lose whole models (LiteRT's builtin kernels ran the audio family's LOG 3x slower alone,
on random inputs, than inside the model; the text family's models came out 2.1 % off from the
shipped base and 4.8 % adapted). The adaptation's probe phase also times a few network chain
models whole (``tacopt learn --from``); each is priced from its ops' held-out predictions (the
folds'), as chosen and as the base. Where the choice prices them worse (median error) than the
base, the kernel families priced otherwise are put back to the base one at a time, the one
with the most of the chains' time first, each kept where it lowers that error, until it is no
worse than the base's (else the base everywhere). Fewer than :data:`MIN_CHAINS` chains, or no
folds: no check, and the model file says so (``adapted.whole_guard``).
"""

from __future__ import annotations

import copy
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from tacopt.cost_models.learned.fitting.features import as_kernel_kind
from tacopt.cost_models.learned.fitting.model import CHOICES, LearnedCostModel
from tacopt.cost_models.learned.fitting.sources import fold
from tacopt.cost_models.learned.measurement.records import records_by_key
from tacopt.cost_models.learned.measurement.speed import FAMILIES, family, normalize_records
from tacopt.cost_models.learned.sampling.adapt import OWN_WEIGHTS, adapt

#: One in this many measured configurations is a probe (held out of the fit).
GUARD_FOLDS = 4
#: Probes a family needs before anything but the base may price it.
MIN_PROBES = 8
#: Chain models measured whole that the whole-model check needs (:func:`whole_model_check`).
MIN_CHAINS = 4


def guarded_adapt(
    base_doc: Mapping[str, Any], records: Sequence[Mapping[str, Any]], **kwargs: Any
) -> dict[str, Any]:
    """:func:`~tacopt.cost_models.learned.sampling.adapt.adapt` on the records, each kernel
    family and kind then priced the way (:data:`CHOICES`) that did best on the ops a fit did
    not see (see the module docstring). ``kwargs`` go to ``adapt``.

    Raises
    ------
    ValueError
        As ``adapt``: no op record carrying ``speed``.
    """
    # the model itself is fitted on every record, and prices as chosen
    doc = adapt(base_doc, records, **kwargs)
    judged = doc["adapted"].pop("fold_hits", None)
    predictions = doc["adapted"].pop("fold_predictions", None)
    if judged is not None:  # the own model's folds judged every op
        counts = {k: v for k, v in judged.items() if "|" not in k}
        kind_counts = {k: v for k, v in judged.items() if "|" in k}
    else:  # a fit of three quarters (corrections and residual trees), judged on the rest
        is_probe = [r.get("type") == "op" and fold(r, folds=GUARD_FOLDS) == 0 for r in records]
        kept = [r for r, p in zip(records, is_probe, strict=True) if not p]
        probes = [r for r, p in zip(records, is_probe, strict=True) if p and r.get("speed")]
        fitted = adapt(base_doc, kept or records, **{**kwargs, "own": False})
        counts, kind_counts = probe_hits(LearnedCostModel(fitted), probes)
    choice = choose(counts, kind_counts)
    whole: dict[str, Any] = {"chains": 0}
    if predictions is not None:
        choice, whole = whole_model_check(doc, records, predictions, choice)
    doc["adapted"].update(
        {
            "family_choice": choice,
            "guard": {fam: counts[fam] for fam in sorted(counts)},
            "kind_guard": {g: kind_counts[g] for g in sorted(kind_counts)},
            "whole_guard": whole,
        }
    )
    return doc


def whole_model_check(
    doc: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    predictions: Mapping[str, Sequence[float]],
    choice: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, Any]]:
    """``choice`` (:func:`choose`) made no worse than the base on the chain models of
    ``records`` measured whole (see the module docstring), and what was found:
    ``{"chains", "base_pct", "chosen_pct", "to_base"}`` (median whole-model errors, %; the
    families put back to the base, ``"*"`` for all). ``predictions``: per op record key, the
    held-out net latencies of each way (``adapt``'s ``fold_predictions``); ``doc``: the
    adapted model."""
    model = LearnedCostModel(doc)
    norm = normalize_records(records, model.anchor_speed)
    by_key = records_by_key(norm)
    chains = [r for r in norm if r.get("type") == "model" and r.get("latency_us")]
    if len(chains) < MIN_CHAINS:
        return dict(choice), {"chains": len(chains)}
    # each op of the chains: its kernel family and kind, as the model prices it
    groups: dict[str, tuple[str, str]] = {}
    for r in norm:
        if r.get("type") == "op" and str(r["key"]) in predictions:
            kernel = as_kernel_kind(r, **model.kernel_kind_flags) if model.kernel_kinds else r
            kind, itype = kernel["kind"], kernel.get("inference_type")
            groups[str(r["key"])] = (family(kind, itype), f"{kind}|{itype}")

    def priced(ways: Mapping[str, str]) -> list[float]:
        """Each chain's predicted latency, its ops at their held-out prices."""
        table = {}
        for key, (fam, group) in groups.items():
            way = ways.get(group, ways.get(fam, "base"))
            i = CHOICES.index(way) if way != "adapted" else 2 + OWN_WEIGHTS.index(
                model.own_weights.get(fam, 0.0)
            )
            table[key] = model.overhead_us + predictions[key][i]
        pricing = copy.copy(model)
        pricing.adapt_table = table
        return [pricing.predict_model(r, by_key) for r in chains]

    def error(ways: Mapping[str, str]) -> float:
        return statistics.median(
            abs(p / r["latency_us"] - 1) for p, r in zip(priced(ways), chains, strict=True)
        )

    base = dict.fromkeys(FAMILIES, "base")
    base_err, now, chosen = error(base), error(choice), dict(choice)
    report: dict[str, Any] = {"chains": len(chains), "base_pct": round(100 * base_err, 2)}
    back: list[str] = []
    if now > base_err:
        # the families priced otherwise than the base, the most of the chains' time first
        time_of = dict.fromkeys(FAMILIES, 0.0)
        for r in chains:
            for key, count in r.get("ops", []):
                if key in groups:
                    time_of[groups[key][0]] += count * predictions[key][0]
        others = {family(*g.split("|", 1)) if "|" in g else g
                  for g, way in chosen.items() if way != "base"}  # fmt: skip
        for fam in sorted(others, key=lambda f: (-time_of[f], f)):
            trial = {g: way for g, way in chosen.items()
                     if (family(*g.split("|", 1)) if "|" in g else g) != fam}  # fmt: skip
            trial[fam] = "base"
            err = error(trial)
            if err < now:
                chosen, now = trial, err
                back.append(fam)
            if now <= base_err:
                break
        if now > base_err:
            chosen, now, back = base, base_err, ["*"]
    report.update({"chosen_pct": round(100 * now, 2), "to_base": back})
    return chosen, report


def choose(
    counts: Mapping[str, Mapping[str, int]], kind_counts: Mapping[str, Mapping[str, int]]
) -> dict[str, str]:
    """Per kernel family, the way of :data:`CHOICES` that put the most of its probes within
    ±10 % (a tie, or fewer than :data:`MIN_PROBES` probes: the simpler way), then per kind
    (``KIND|TYPE``) with :data:`MIN_PROBES` probes its own best way, where that puts more of
    them within ±10 % than its family's way.

    >>> fam = {"elementwise": {"probes": 40, "base": 10, "corrected": 20, "adapted": 30}}
    >>> kind = {"PRELU|FLOAT": {"probes": 9, "base": 6, "corrected": 6, "adapted": 1},
    ...         "ADD|FLOAT": {"probes": 20, "base": 5, "corrected": 9, "adapted": 18},
    ...         "MUL|FLOAT": {"probes": 9, "base": 4, "corrected": 1, "adapted": 4}}
    >>> chosen = choose(fam, kind)
    >>> chosen["PRELU|FLOAT"], "ADD|FLOAT" in chosen, "MUL|FLOAT" in chosen
    ('base', False, False)
    """

    def best(hits: Mapping[str, int] | None) -> str:
        if hits is None or hits["probes"] < MIN_PROBES:
            return "base"
        return max(CHOICES, key=lambda c: (hits[c], -CHOICES.index(c)))

    choice = {fam: best(counts.get(fam)) for fam in sorted(FAMILIES)}
    for group, hits in sorted(kind_counts.items()):
        own, of_family = best(hits), choice[family(*group.split("|", 1))]
        if hits["probes"] >= MIN_PROBES and hits[own] > hits[of_family]:
            choice[group] = own
    return choice


def probe_hits(
    model: LearnedCostModel, probes: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """Per kernel family, and per kind (``KIND|TYPE``, the kernel kind the model prices): its
    probes and how many of them each way of pricing (:data:`CHOICES`) puts within ±10 %,
    judged as measured (never from the exact table)."""
    ways = {c: model.choosing(dict.fromkeys(FAMILIES, c)) for c in CHOICES}
    by_family: dict[str, dict[str, int]] = {}
    by_kind: dict[str, dict[str, int]] = {}
    for raw, r in zip(probes, normalize_records(probes, model.anchor_speed), strict=True):
        kernel = as_kernel_kind(r, **model.kernel_kind_flags) if model.kernel_kinds else r
        fam = family(kernel["kind"], kernel.get("inference_type"))
        group = f"{kernel['kind']}|{kernel.get('inference_type')}"
        hits = {c: int(abs(m.predict_as_measured(r) - raw["latency_us"])
                       <= 0.1 * raw["latency_us"]) for c, m in ways.items()}  # fmt: skip
        for out, name in ((by_family, fam), (by_kind, group)):
            h = out.setdefault(name, {"probes": 0, **dict.fromkeys(CHOICES, 0)})
            h["probes"] += 1
            for c in CHOICES:
                h[c] += hits[c]
    return by_family, by_kind


def choice_lines(adapted: Mapping[str, Any]) -> list[str]:
    """The per-family choice of a guarded adaptation, one line per family that had probes, then
    one per kind that chose otherwise than its family.

    >>> hits = {"probes": 20, "base": 9, "corrected": 14, "adapted": 12}
    >>> for line in choice_lines({"family_choice": {"elementwise": "corrected",
    ...                                             "PRELU|FLOAT": "base"},
    ...                           "guard": {"elementwise": hits},
    ...                           "kind_guard": {"PRELU|FLOAT": {"probes": 9, "base": 7,
    ...                                                          "corrected": 3, "adapted": 1}}}):
    ...     print(line)
      elementwise: corrected (probes 20 within ±10 %: base 9, corrected 14, adapted 12)
      PRELU|FLOAT: base (probes 9 within ±10 %: base 7, corrected 3, adapted 1)
    """
    lines = []
    choice = adapted.get("family_choice", {})
    whole = adapted.get("whole_guard") or {}
    if whole.get("chains", 0) >= MIN_CHAINS:
        back = ", ".join(whole["to_base"]) or "none"
        lines.append(
            f"  whole models ({whole['chains']} chains timed whole): median error as chosen "
            f"{whole['chosen_pct']:.1f} %, base {whole['base_pct']:.1f} %; put back to the "
            f"base: {back}"
        )
    for guard in ("guard", "kind_guard"):
        for name, hits in sorted(adapted.get(guard, {}).items()):
            if guard == "kind_guard" and name not in choice:
                continue  # priced as its family
            counts = ", ".join(f"{c} {hits[c]}" for c in CHOICES)
            lines.append(
                f"  {name}: {adapted['family_choice'].get(name, 'base')} (probes "
                f"{hits['probes']} within ±10 %: {counts})"
            )
    return lines

"""An adaptation that never replaces its base where it cannot show it helps (issue 47).

Adapted from the shipped model to LiteRT's builtin kernels in 3 minutes, the model put 22.2 % of
held-out ops within ±10 % where the base, not adapted, put 34.0 %: corrections and trees fitted
on a few hundred ops moved kinds they had barely seen (PRELU, CONCATENATION, RESIZE_BILINEAR).
:func:`guarded_adapt` holds a quarter of the measured ops out (probes, by configuration key),
adapts on the rest (:func:`~tacopt.cost_models.learned.sampling.adapt.adapt`), and prices the
probes per kernel family three ways:

- ``adapted``: the adaptation as fitted (corrections, residual trees, the device's own model);
- ``corrected``: the base re-anchored and corrected per kind and family, no trees, no own model;
- ``base``: the base re-anchored by the device's reference timings, the device's invoke overhead.

Each family keeps the way that put the most of its probes within ±10 %; on a tie, or with
fewer than :data:`MIN_PROBES` probes, the simpler one (the base first). A family no probe
reached keeps the base. The choice and its counts are written into the model
(``adapted.family_choice``, ``adapted.guard``) and ``tacopt learn`` prints them. The choice is
made on a fit of the other three quarters (corrections and residual trees); the model is then
fitted on every record, as without the guard, and prices each family the way chosen. Fitted
on three quarters only, the Zen 4 model adapted to a 2-core Zen 5 on 1,650 ops put 46.6 % of
the families' ops within ±10 % against 51.9 % unguarded (every family chose the adaptation;
``benchmarks/scripts/learned/guard_offline.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tacopt.cost_models.learned.fitting.features import as_kernel_kind
from tacopt.cost_models.learned.fitting.model import CHOICES, LearnedCostModel
from tacopt.cost_models.learned.fitting.sources import fold
from tacopt.cost_models.learned.measurement.speed import FAMILIES, family, normalize_records
from tacopt.cost_models.learned.sampling.adapt import adapt

#: One in this many measured configurations is a probe (held out of the fit).
GUARD_FOLDS = 4
#: Probes a family needs before anything but the base may price it.
MIN_PROBES = 8


def guarded_adapt(
    base_doc: Mapping[str, Any], records: Sequence[Mapping[str, Any]], **kwargs: Any
) -> dict[str, Any]:
    """:func:`~tacopt.cost_models.learned.sampling.adapt.adapt` on three quarters of the op
    records, each kernel family then priced the way (:data:`CHOICES`) that did best on the
    quarter held out (see the module docstring). ``kwargs`` go to ``adapt``.

    Raises
    ------
    ValueError
        As ``adapt``: no op record carrying ``speed``.
    """
    is_probe = [r.get("type") == "op" and fold(r, folds=GUARD_FOLDS) == 0 for r in records]
    kept = [r for r, p in zip(records, is_probe, strict=True) if not p]
    probes = [r for r, p in zip(records, is_probe, strict=True) if p and r.get("speed")]
    # the judged fit: corrections and residual trees (the device's own model, when the final
    # fit has one, is chosen per family by its own folds)
    judged = adapt(base_doc, kept or records, **{**kwargs, "own": False})
    counts = probe_hits(LearnedCostModel(judged), probes)
    choice = {}
    for fam in sorted(FAMILIES):
        hits = counts.get(fam)
        if hits is None or hits["probes"] < MIN_PROBES:
            choice[fam] = "base"
            continue
        choice[fam] = max(CHOICES, key=lambda c: (hits[c], -CHOICES.index(c)))
    # the model itself is fitted on every record, the probes too, and prices as chosen
    doc = adapt(base_doc, records, **kwargs)
    doc["adapted"].update(
        {"family_choice": choice, "guard": {fam: counts[fam] for fam in sorted(counts)}}
    )
    return doc


def probe_hits(
    model: LearnedCostModel, probes: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Per kernel family: its probes and how many of them each way of pricing
    (:data:`CHOICES`) puts within ±10 %, judged as measured (never from the exact table)."""
    ways = {c: model.choosing(dict.fromkeys(FAMILIES, c)) for c in CHOICES}
    out: dict[str, dict[str, int]] = {}
    for raw, r in zip(probes, normalize_records(probes, model.anchor_speed), strict=True):
        fam = _family(r, model)
        h = out.setdefault(fam, {"probes": 0, **dict.fromkeys(CHOICES, 0)})
        h["probes"] += 1
        for c, m in ways.items():
            p = m.predict_as_measured(r)
            h[c] += int(abs(p - raw["latency_us"]) <= 0.1 * raw["latency_us"])
    return out


def _family(r: Mapping[str, Any], model: LearnedCostModel) -> str:
    if model.kernel_kinds:
        r = as_kernel_kind(r, **model.kernel_kind_flags)
    return family(r["kind"], r.get("inference_type"))


def choice_lines(adapted: Mapping[str, Any]) -> list[str]:
    """The per-family choice of a guarded adaptation, one line per family that had probes.

    >>> choice_lines({"family_choice": {"elementwise": "corrected"},
    ...               "guard": {"elementwise": {"probes": 20, "base": 9, "corrected": 14,
    ...                                         "adapted": 12}}})
    ['  elementwise: corrected (probes 20 within ±10 %: base 9, corrected 14, adapted 12)']
    """
    lines = []
    for fam, hits in sorted(adapted.get("guard", {}).items()):
        counts = ", ".join(f"{c} {hits[c]}" for c in CHOICES)
        lines.append(
            f"  {fam}: {adapted['family_choice'].get(fam, 'base')} (probes {hits['probes']} "
            f"within ±10 %: {counts})"
        )
    return lines

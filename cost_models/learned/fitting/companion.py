"""Kernel-set companions: how another kernel set (LiteRT's builtin kernels, 2 threads) prices an
op against the kernel set a learned model was fitted on (issue 47 item 5).

A model fitted on XNNPACK with 1 thread knows little of LiteRT's builtin kernels: re-anchored
and corrected per kind from 3 minutes of probes, the shipped model put 4-33 % of each kind's
probes within ±10 % (CONV_2D 10.5 %), so an adaptation learnt the builtin kernels nearly afresh
from ~4,000 ops. A **companion** carries the structure of the other kernel set instead: the log
ratio of an op's net latency on that set to its net latency on the model's own set, as a
function of the op's features, learned once on a machine where both were measured (the same
configurations, :func:`fit_companion`). ``tacopt learn --from BASE --resolver builtin`` then
starts from base x companion, the prior for the target kernels, and its probes correct that.

The ratio is taken after each side is re-anchored by its own reference timings
(:func:`~tacopt.cost_models.learned.measurement.speed.normalize_records`: a kernel set's
references are timed with that set), so it is what re-anchoring leaves: the op's shape against
its family's reference, which is what may carry from one CPU to another.

Stored as JSON in the model file's ``companions`` section, by :func:`companion_name`
(``"builtin/1"``, ``"xnnpack/2"``), never pickle::

    {"version": 1, "resolver": "builtin", "threads": 1, "base": {"resolver", "threads"},
     "fingerprint": {...}, "pairs": N, "anchor_speed": {...}, "features": [...],
     "kernel_kinds": {FLAG: true, ...}, "kinds": [...],
     "ratios": {"*": r, "family:F": r, "KIND|TYPE": r}, "trees": {"FAMILY": [tree, ...]}}

``ratios``: per kind (its kernel kind, :func:`~.features.as_kernel_kind`), shrunk towards its
family's, itself towards the global median (``SHRINK`` pseudo-records each); ``trees``: boosted
trees per kernel family on what the ratios leave, from the tree features (:data:`~.features.
FEATURES`), one flag per kind of ``kinds`` and the log net latency on the base set (in the
units of ``anchor_speed``; at prediction, the base model's, converted): 1,922 configurations of
the builtin kernels against XNNPACK, five folds, 35.4 % of the held-out ratios within ±10 %
without it, 43.0 % with it (the ratios alone: 12.9 %).

>>> name = companion_name("builtin", 1)
>>> name, parse_companion_name(name)
('builtin/1', ('builtin', 1))
"""

from __future__ import annotations

import inspect
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tacopt.cost_models.learned.fitting.features import as_kernel_kind, feature_names, op_vector
from tacopt.cost_models.learned.fitting.schema import COMPANION_VERSION
from tacopt.cost_models.learned.fitting.trees import (
    LIGHTGBM_PARAMS,
    fit_lightgbm,
    predict_stacked,
    stack_trees,
)
from tacopt.cost_models.learned.fitting.whole_model import net_latency
from tacopt.cost_models.learned.measurement.records import quiet_records
from tacopt.cost_models.learned.measurement.speed import (
    family,
    family_indices,
    normalize_records,
    reference_family,
    run_speed,
)
from tacopt.cost_models.protocol import CostModelError

#: Pseudo-records pulling a kind's ratio towards its family's, and a family's towards the
#: global one.
SHRINK = 3.0
#: Log ratios are kept within ±CLIP (20x either way).
CLIP = 3.0
#: Paired configurations a kind needs for a tree input of its own, and a kernel family for
#: trees of its own.
MIN_KIND_PAIRS, MIN_FAMILY_PAIRS = 20, 40
#: LightGBM's trees on the ratios' residual, sized to stay under a megabyte in a gzipped model
#: file. Builtin kernels against XNNPACK (11,132 configurations of two 15-minute learns on a
#: 2-core Zen 5), judged on the real ops of the first five and the held-out six families
#: (each measured on both sets): ratios within ±10 % 50 / 43 % with 15 leaves x 300 rounds at
#: 0.05 (266 kB), 58 / 52 % with 31 x 300 at 0.1 (593 kB), 61 / 53 % with 31 x 600 at 0.05
#: (1.2 MB).
COMPANION_TREE_PARAMS: dict[str, Any] = {**LIGHTGBM_PARAMS, "num_boost_round": 300}


#: How :func:`~.features.as_kernel_kind` may name an op's kernel (its keyword flags): a companion
#: keeps those it was fitted with (``kernel_kinds``), and a flag added since stays off for it.
KERNEL_KIND_FLAGS = tuple(
    name
    for name, p in inspect.signature(as_kernel_kind).parameters.items()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
)


def companion_name(resolver: str, threads: int) -> str:
    """The name of the kernel set ``resolver`` on ``threads`` threads in ``companions``."""
    return f"{resolver}/{int(threads)}"


def parse_companion_name(name: str) -> tuple[str, int]:
    """``(resolver, threads)`` of a companion's name (:func:`companion_name`).

    Raises
    ------
    ValueError
        When ``name`` is not ``RESOLVER/THREADS``.
    """
    resolver, sep, threads = name.rpartition("/")
    if not sep or not resolver or not threads.isdigit() or int(threads) < 1:
        raise ValueError(f"companion name '{name}' is not RESOLVER/THREADS")
    return resolver, int(threads)


def kernel_set(fingerprint: Mapping[str, Any] | None) -> str:
    """The kernel set a fingerprint was measured on (:func:`companion_name`; a file without
    one: XNNPACK, 1 thread)."""
    fp = fingerprint or {}
    return companion_name(str(fp.get("resolver") or "xnnpack"), int(fp.get("threads") or 1))


def pick_companion(base_doc: Mapping[str, Any], resolver: str, threads: int) -> str | None:
    """The companion of model ``base_doc`` for adapting it to ``resolver`` on ``threads``
    threads: its name when the file holds one and that is not the model's own kernel set.

    >>> doc = {"fingerprint": {"resolver": "xnnpack", "threads": 1},
    ...        "companions": {"builtin/1": {}}}
    >>> pick_companion(doc, "builtin", 1), pick_companion(doc, "xnnpack", 2)
    ('builtin/1', None)
    """
    name = companion_name(resolver, threads)
    if name == kernel_set(base_doc.get("fingerprint")) or name not in (
        base_doc.get("companions") or {}
    ):
        return None
    return name


def starting_line(base: object, base_doc: Mapping[str, Any], target: str) -> str:
    """What an adaptation of model ``base_doc`` (file ``base``) to kernel set ``target``
    starts from: the base, or the base times its companion for ``target``.

    >>> starting_line("m.json", {"companions": {}}, "builtin/1")
    'starting from m.json, which holds no companion for builtin/1 (`tacopt companion` adds one)'
    """
    if target == kernel_set(base_doc.get("fingerprint")):
        return f"starting from {base} (the kernel set it was fitted on, {target})"
    comp = (base_doc.get("companions") or {}).get(target)
    if comp is None:
        return (f"starting from {base}, which holds no companion for {target} (`tacopt "
                "companion` adds one)")  # fmt: skip
    fp = comp.get("fingerprint") or {}
    return (f"starting from {base} x its companion for {target} (fitted on "
            f"{fp.get('cpu', 'a machine')}, family {fp.get('family', '?')}, {comp.get('pairs')} "
            "configurations measured on both kernel sets)")  # fmt: skip


def _pairs(
    base: Sequence[Mapping[str, Any]], other: Sequence[Mapping[str, Any]]
) -> tuple[list[tuple[dict[str, Any], float, float]], dict[str, float]]:
    """Each configuration measured quiet on both kernel sets, as its kernel kind (the other
    set's record), the log ratio of its net latencies and the log of its net latency on the
    base set, each side re-anchored by its own references to one anchor (the base set's run
    speed, returned second)."""
    base_ops = [r for r in quiet_records(base) if r.get("type") == "op" and r.get("speed")]
    other_ops = [r for r in quiet_records(other) if r.get("type") == "op" and r.get("speed")]
    anchor = run_speed(base_ops)
    on_base = {str(r["key"]): r for r in normalize_records(base_ops, anchor)}
    out = []
    for r in normalize_records(other_ops, anchor):
        b = on_base.get(str(r["key"]))
        if b is None:
            continue
        ratio = math.log(net_latency(r) / net_latency(b))
        log_net = math.log(net_latency(b))
        out.append((dict(as_kernel_kind(r)), max(-CLIP, min(CLIP, ratio)), log_net))
    out.sort(key=lambda p: str(p[0]["key"]))
    return out, anchor


def _group(r: Mapping[str, Any]) -> str:
    return f"{r['kind']}|{r.get('inference_type')}"


def _ratios(pairs: Sequence[tuple[Mapping[str, Any], float, float]]) -> dict[str, float]:
    """``{"*", "family:F", "KIND|TYPE"}``: the global median log ratio, each family's mean
    shrunk towards it, each kind's mean shrunk towards its family's."""
    by_family: dict[str, list[float]] = defaultdict(list)
    by_group: dict[str, list[float]] = defaultdict(list)
    for r, v, _ in pairs:
        by_family[family(r["kind"], r.get("inference_type"))].append(v)
        by_group[_group(r)].append(v)
    out = {"*": round(statistics.median(v for _, v, _ in pairs), 6)}
    for fam, vs in sorted(by_family.items()):
        out[f"family:{fam}"] = round((sum(vs) + SHRINK * out["*"]) / (len(vs) + SHRINK), 6)
    for g, vs in sorted(by_group.items()):
        parent = out[f"family:{family(*g.split('|', 1))}"]
        out[g] = round((sum(vs) + SHRINK * parent) / (len(vs) + SHRINK), 6)
    return out


def ratio_of(ratios: Mapping[str, float], kind: str, inference_type: str | None) -> float:
    """The log ratio of a kind: its own, else its family's, else the global one.

    >>> ratio_of({"*": 0.5, "family:movement": 1.0}, "PAD", "FLOAT")
    1.0
    """
    for name in (f"{kind}|{inference_type}", f"family:{family(kind, inference_type)}", "*"):
        if name in ratios:
            return float(ratios[name])
    return 0.0


def _round(values: Sequence[float]) -> list[float]:
    return [float(f"{v:.7g}") for v in values]


def fit_companion(
    base: Sequence[Mapping[str, Any]],
    other: Sequence[Mapping[str, Any]],
    *,
    params: Mapping[str, Any] = COMPANION_TREE_PARAMS,
) -> dict[str, Any]:
    """The companion of the kernel set of records ``other`` to that of records ``base`` (both
    ``tacopt measure`` / ``tacopt learn`` records of one machine, each with its ``device``
    record), fitted on the configurations both measured quiet; JSON-ready (see the module
    docstring).

    Raises
    ------
    ValueError
        When the two share fewer than ``MIN_FAMILY_PAIRS`` configurations, or lack a device
        record, or are of the same kernel set.
    """
    sets = []
    for recs, what in ((base, "base"), (other, "other")):
        devices = [r for r in recs if r.get("type") == "device"]
        if not devices:
            raise ValueError(f"the {what} records hold no device record (its kernel set)")
        sets.append(devices[0].get("fingerprint") or {})
    if kernel_set(sets[0]) == kernel_set(sets[1]):
        raise ValueError(f"both records are of kernel set {kernel_set(sets[0])}")
    pairs, anchor = _pairs(base, other)
    if len(pairs) < MIN_FAMILY_PAIRS:
        raise ValueError(
            f"the two records share {len(pairs)} quiet configurations; a companion needs "
            f"{MIN_FAMILY_PAIRS}"
        )
    ratios = _ratios(pairs)
    counts: dict[str, int] = defaultdict(int)
    for r, _, _ in pairs:
        counts[r["kind"]] += 1
    kinds = sorted(k for k, n in counts.items() if n >= MIN_KIND_PAIRS)
    X = np.array([[*op_vector(r, kinds), log_net] for r, _, log_net in pairs])
    y = np.array([v for _, v, _ in pairs])
    init = np.array([ratio_of(ratios, r["kind"], r.get("inference_type")) for r, _, _ in pairs])
    fams = np.array([family(r["kind"], r.get("inference_type")) for r, _, _ in pairs])
    trees = {}
    for fam in sorted(set(fams.tolist())):
        rows = fams == fam
        if int(rows.sum()) >= MIN_FAMILY_PAIRS:
            fitted = fit_lightgbm(X[rows], y[rows], init[rows], params)
            trees[str(fam)] = [
                {**t, "threshold": _round(t["threshold"]), "value": _round(t["value"])}
                for t in fitted
            ]
    resolver, threads = parse_companion_name(kernel_set(sets[1]))
    base_resolver, base_threads = parse_companion_name(kernel_set(sets[0]))
    return {
        "version": COMPANION_VERSION,
        "resolver": resolver,
        "threads": threads,
        "base": {"resolver": base_resolver, "threads": base_threads},
        "fingerprint": dict(sets[1]),
        "pairs": len(pairs),
        "anchor_speed": anchor,
        "features": list(feature_names()),
        "kernel_kinds": dict.fromkeys(KERNEL_KIND_FLAGS, True),
        "kinds": kinds,
        "ratios": ratios,
        "trees": trees,
    }


class Companion:
    """A companion (:func:`fit_companion`'s dict) ready to price (:meth:`log_ratio`) for a
    model anchored on ``anchor`` (its ``anchor_speed``)."""

    def __init__(
        self, doc: Mapping[str, Any], anchor: Mapping[str, float], *, source: str = "<dict>"
    ) -> None:
        self.name = companion_name(str(doc["resolver"]), int(doc["threads"]))
        if list(doc.get("features", [])) != list(feature_names()):
            raise CostModelError(
                f"learned model '{source}': companion {self.name} was fitted on other tree "
                "features; fit it again (`tacopt companion`)"
            )
        self.kinds = [str(k) for k in doc.get("kinds", [])]
        self.ratios = {str(k): float(v) for k, v in doc.get("ratios", {}).items()}
        self.trees = {str(f): stack_trees(t) for f, t in (doc.get("trees") or {}).items() if t}
        #: per reference family, how much a net latency in the model's units grows in the
        #: companion's (its trees read the base set's log net latency in those)
        self.units = family_indices(doc.get("anchor_speed") or {}, anchor)
        named = doc.get("kernel_kinds") or {}
        self.kernel_kind_flags = {k: bool(named.get(k, False)) for k in KERNEL_KIND_FLAGS}

    def log_ratio(
        self, features: Mapping[str, Any], base_net_us: float, *, memo: dict[str, Any] | None = None
    ) -> float:
        """The log of an op's net latency on this kernel set over ``base_net_us``, its net
        latency on the model's own (in the model's units; the op by its kernel kind), within
        ±:data:`CLIP`. ``memo``: ratios kept across calls by record ``key`` (an adaptation
        prices each record many times)."""
        itype = features.get("inference_type")
        name = f"companion:{features.get('key')}|{itype}|{base_net_us:.6g}"
        if memo is not None and features.get("key") is not None:
            if name not in memo:
                memo[name] = self.log_ratio(features, base_net_us)
            return float(memo[name])
        r = as_kernel_kind(features, **self.kernel_kind_flags)
        kind = r["kind"]
        value = ratio_of(self.ratios, kind, itype)
        trees = self.trees.get(family(kind, itype))
        if trees is not None:
            net = base_net_us * self.units[reference_family(kind, itype)]
            row = [*op_vector(r, self.kinds), math.log(max(net, 1e-6))]
            value += float(predict_stacked(trees, np.asarray([row]))[0])
        return max(-CLIP, min(CLIP, value))


def chosen_companion(doc: Mapping[str, Any], source: str = "<dict>") -> Companion | None:
    """The companion an adapted model's prior multiplies its base by (``adapted.companion``,
    one of the file's ``companions``), or None.

    Raises
    ------
    CostModelError
        When ``adapted.companion`` names none of the file's companions.
    """
    name = (doc.get("adapted") or {}).get("companion")
    if name is None:
        return None
    known = doc.get("companions") or {}
    if name not in known:
        listed = ", ".join(sorted(known)) or "none"
        raise CostModelError(
            f"learned model '{source}': adapted.companion '{name}' is not one of its "
            f"companions ({listed})"
        )
    return Companion(known[name], doc.get("anchor_speed") or {}, source=source)


__all__ = [
    "COMPANION_VERSION",
    "Companion",
    "chosen_companion",
    "companion_name",
    "fit_companion",
    "kernel_set",
    "parse_companion_name",
    "pick_companion",
    "ratio_of",
    "starting_line",
]

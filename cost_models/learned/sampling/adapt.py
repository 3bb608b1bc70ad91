"""Adapt a learned model to another device with few samples (issue 22, ``tacopt learn --from``).

A model fitted on one device predicts another in two steps:

1. **Re-anchor per kernel family** (:mod:`~tacopt.cost_models.learned.measurement.speed`): every
   record carries the reference timings of its machine; each op is put in the base model's units by
   the reference of its family (float GEMM, int8 GEMM, depthwise, elementwise, data movement).
   To another kernel set (LiteRT's builtin kernels, more threads), when the base's file holds
   a companion for it (:mod:`~tacopt.cost_models.learned.fitting.companion`), the base's net
   latency is first multiplied by the companion's ratio for the op: the prior the steps below
   correct (``adapted.companion``; the guard's ``base`` stays the base as shipped).
2. **Correct per family and per kind** (:func:`adapt`): a few hundred ops measured on the new
   device give, for each (kind, inference type), the log ratio of the measured net latency to the
   base model's, shrunk towards its family's ratio, itself shrunk towards the global one
   (``SHRINK`` pseudo-records at each level), so a kind with three samples moves little and an
   unsampled kind follows its family. The GEMM families are corrected as a family only
   (:data:`FAMILY_ONLY`). The measured configurations are looked up exactly.
3. **Residual trees** (:func:`_residual_trees`): boosted trees on what the corrections leave,
   from the op's features and its corrected net latency (version 6 bases), one set per kernel
   family.
4. **Or learn afresh** (:func:`_own_model`): with enough records, a model fitted on the new
   device's records alone, blended per kernel family with the corrected base at the weight
   that did best on held-out records: a device whose kernels differ in kind (LiteRT's builtin
   kernels against XNNPACK) is learnt better afresh than corrected.

Where to measure, in two steps (``tacopt learn --from``'s two phases, issue 47):

1. **Probes** (:func:`uncertain_weights`): every sampler of every prior (generic, ``net-rnn``,
   ``move``, ``tail``), each weighted by its prior weight x how unsure the base model is about
   that kind (its training fit's residual, ``rmse_log``). Nothing about the new device is needed
   to choose them, so the measurement can be planned before it starts and resumed.
2. **Where the device differs** (:func:`differing_weights`): the same weights x how far the
   base, re-anchored, is from what the probes measured of each sampler's ops (the root mean
   square of the log ratio, a sampler the probes missed counted as unknown, 1.0). LiteRT's
   builtin LOG ran 10x slower than the base's XNNPACK one (the family's reference moved 1.1x):
   such kinds get the budget, kinds the re-anchored base already prices get little.

Without the ``tail`` prior (before issue 47's adaptation work), an adaptation never measured a
PRELU, RESIZE_BILINEAR, TRANSPOSE_CONV or LOG; their family's corrections and residual trees,
fitted on other kinds, moved them (PRELU 7.6x too slow, on LiteRT's builtin kernels).

>>> round(_shrunk([0.5, 0.7], parent=0.0, k=2.0), 4)
0.3
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any

import numpy as np

from tacopt.cost_models.learned.fitting.features import as_kernel_kind, op_vector
from tacopt.cost_models.learned.fitting.fit import fit, fit_sources
from tacopt.cost_models.learned.fitting.model import LearnedCostModel, blend_net
from tacopt.cost_models.learned.fitting.sources import fold
from tacopt.cost_models.learned.fitting.trees import fit_lightgbm
from tacopt.cost_models.learned.fitting.whole_model import net_latency
from tacopt.cost_models.learned.measurement.fingerprint import records_fingerprint
from tacopt.cost_models.learned.measurement.records import fingerprint_caches
from tacopt.cost_models.learned.measurement.speed import (
    FAMILIES,
    family,
    normalize_records,
    run_speed,
)
from tacopt.cost_models.learned.sampling.samplers import BASE_SAMPLERS, SAMPLERS
from tacopt.cost_models.learned.sampling.samplers_move import MOVE_PRIOR
from tacopt.cost_models.learned.sampling.samplers_net import NET_RNN_PRIOR
from tacopt.cost_models.learned.sampling.samplers_tail import TAIL_PRIOR

#: Pseudo-records pulling a group's correction towards its parent's (family, then global).
SHRINK = 3.0
#: Corrections are kept within e^-CLIP .. e^CLIP (a ratio of 20 either way).
CLIP = 3.0
#: Kernel families corrected as one (their kinds get the family's correction): XNNPACK runs a
#: CONV_2D, a FULLY_CONNECTED and a BATCH_MATMUL with the same GEMM micro-kernels, and how much
#: faster a GEMM runs on another CPU depends on its shape, not on the op's kind (Zen 3 -> Zen 4,
#: VNNI: large int8 GEMMs 0.21-0.23x, batch-1 ones 0.3-0.6x). Corrected per kind, the int8
#: FULLY_CONNECTEDs took the ratio of the batch-1 ones the adaptation sampled, and ConvNeXt's
#: (196-3136 rows) came out 1.4x too slow; the family's residual trees see the GEMM's shape
#: across its kinds. Shipped model adapted to the Zen 4 (four 3-minute runs, tuning half): ops
#: within ±10 % 75.9 / 72.6 / 75.0 / 75.9 -> 77.5 / 77.8 / 76.7 / 77.8 %, whole-model error
#: 8.1 / 12.4 / 8.2 / 8.5 -> 5.0 / 5.6 / 5.9 / 7.0 %; to 2 threads 49.4 -> 51.5 % (9.6 -> 11.7 %),
#: to the builtin kernels 40.8 -> 41.3 % (9.0 -> 8.5 %) (docs/cost-models.md).
FAMILY_ONLY = frozenset({"gemm_float", "gemm_int8"})
#: Records a kernel family needs for residual trees of its own (:func:`_residual_trees`).
MIN_FAMILY_TREE_OPS = 40
#: Records from which a model of the new device's own is tried against the corrected base, and
#: held-out records a kernel family needs for the choice (:func:`_own_model`).
MIN_OWN, MIN_HELD = 200, 8
#: Folds of the choice between the own model and the corrected base (:func:`_own_model`): each
#: record is held out once, so a family is judged on all its records, not on 1 in 5. With one
#: fold (~90 held-out elementwise ops, the two sides a few hits apart) two 3-minute runs of the
#: builtin kernels chose differently for the elementwise family, and the tuning half followed:
#: 60.5 % (own model) against 53.6 % (corrected base). Five folds: 61.2 / 60.6 %, at 5 x the
#: fits (about 1 minute more on 1,300 records; docs/cost-models.md).
OWN_FOLDS = 5
#: Records from which the folds of :func:`_own_model` run in parallel processes.
PARALLEL_OPS = 600
#: Weights of the own model's log net latency against the corrected base's, one chosen per
#: kernel family (:func:`_own_model`). Between the two the errors partly cancel: on the builtin
#: kernels' tuning half, the blend of the three 3-minute runs' own models and corrected bases at
#: the best weight per family, chosen on the tuning half itself, put 2-3 points more ops within
#: ±10 % than the better side of each family. Chosen over the folds, as here: 0.4 points on
#: average over eleven recorded runs of five device pairs (-0.8 to +3.3; docs/cost-models.md).
OWN_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: LightGBM's residual trees on top of the corrected base: slow-learning, 600 rounds, with the
#: corrected net latency as an input (a device whose kernels gain with size, such as 2 threads,
#: differs from the base by a slope, not a constant): on the zoo's tuning half, adapted to the
#: builtin kernels, ops within ±10 % 29.7 -> 31.5 % and whole-model error 19.8 -> 16.7 %; to 2
#: threads 34.3 -> 34.4 % and 18.0 -> 17.7 % (docs/cost-models.md). A Huber loss gave more ops
#: within ±10 % but worse whole models. Leaves of 2 records and up to 31 leaves a tree, not 5 and
#: 15 (more regularized was worse: 20 records a leaf lost 6-8 points): over seven recorded
#: 3-minute runs of four device pairs, tuning halves, +0.6 points on average (Zen 3 -> Zen 4
#: +2.0 / -1.2 / +2.0, 1 -> 2 threads +1.8, builtin kernels +0.4 / -0.2, the Zen 3's -0.5).
ADAPT_TREE_PARAMS: dict[str, Any] = {
    "objective": "regression",
    "learning_rate": 0.05,
    "num_leaves": 31,
    "min_data_in_leaf": 2,
    "lambda_l2": 1.0,
    "feature_fraction": 0.9,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "max_bin": 255,
    "num_boost_round": 600,
    "seed": 0,
}


def prior_doc(base_doc: Mapping[str, Any], companion: str | None) -> dict[str, Any]:
    """The base model (not adapted) times its kernel-set companion ``companion`` (None: the
    base): the prior an adaptation to that kernel set starts from."""
    doc = {k: v for k, v in base_doc.items() if k != "adapted"}
    return doc if companion is None else {**doc, "adapted": {"companion": companion}}


def _shrunk(values: Sequence[float], *, parent: float, k: float) -> float:
    """Mean of ``values`` with ``k`` pseudo-values at ``parent``."""
    return (sum(values) + k * parent) / (len(values) + k)


def corrections(
    base: Any, records: Sequence[Mapping[str, Any]], *, shrink: float = SHRINK
) -> dict[str, float]:
    """Log corrections of the base model's net latency: ``"*"``, one per kernel family
    (``"family:NAME"``) and one per ``KIND|TYPE`` group, each shrunk towards its parent (a kind of
    a :data:`FAMILY_ONLY` family takes its family's).

    ``records`` must already be in the base model's units (:func:`normalize_records`).

    >>> class Base:
    ...     overhead_us = 0.0
    ...     def predict_net(self, r, key=None):
    ...         return 10.0
    >>> recs = [{"type": "op", "kind": "ADD", "inference_type": "FLOAT", "latency_us": 20.0,
    ...          "overhead_us": 0.0, "key": str(i)} for i in range(6)]
    >>> c = corrections(Base(), recs)
    >>> round(math.exp(c["ADD|FLOAT"]), 3), round(math.exp(c["family:elementwise"]), 3)
    (2.0, 2.0)
    """
    by_group: dict[str, list[float]] = defaultdict(list)
    by_family: dict[str, list[float]] = defaultdict(list)
    every: list[float] = []
    for r in records:
        if r.get("type") != "op":
            continue
        pred = base.predict_net(r, key=None)  # the base's own guess, never its table
        v = max(-CLIP, min(CLIP, math.log(net_latency(r) / pred)))
        by_group[f"{r['kind']}|{r.get('inference_type')}"].append(v)
        by_family[family(r["kind"], r.get("inference_type"))].append(v)
        every.append(v)
    if not every:
        return {}
    out = {"*": round(statistics.median(every), 6)}
    for fam, vs in sorted(by_family.items()):
        out[f"family:{fam}"] = round(_shrunk(vs, parent=out["*"], k=shrink), 6)
    for g, vs in sorted(by_group.items()):
        kind, itype = g.split("|", 1)
        fam = family(kind, itype)
        parent = out[f"family:{fam}"]
        out[g] = parent if fam in FAMILY_ONLY else round(_shrunk(vs, parent=parent, k=shrink), 6)
    return out


def adapt(
    base_doc: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    *,
    device: str | None = None,
    trees: bool = True,
    own: bool = True,
    workers: int | None = None,
    base_memo: dict[str, Any] | None = None,
    companion: str | None = None,
) -> dict[str, Any]:
    """The base model (a learned model's JSON doc) adapted to the device of ``records``
    (op records measured there, carrying ``speed``): anchored on the base's units, its
    ``speed`` that of the new device (so each family is re-anchored), its predictions corrected
    per family and per kind (``adapted.corrections``), the new configurations looked up
    exactly (``adapted.table``), the invoke overhead the new device's. ``workers``: processes
    for the choice of the device's own model (:func:`_own_model`). ``base_memo``: the base's
    predictions by record key, shared by the folds (filled as they are made). ``companion``:
    the name of one of the base's kernel-set companions
    (:mod:`~tacopt.cost_models.learned.fitting.companion`): the adaptation starts from the base
    times it (the prior for that kernel set) and corrects that; the ``base`` way of pricing
    (:mod:`~.guard`) stays the base as shipped.

    Raises
    ------
    ValueError
        When ``records`` hold no op record carrying ``speed``.
    """
    base_doc = {k: v for k, v in base_doc.items() if k != "adapted"}
    ops = [r for r in records if r.get("type") == "op" and r.get("speed")]
    if not ops:
        raise ValueError("adapt: no op records with the machine's speed to adapt on")
    anchor = dict(base_doc.get("anchor_speed") or {})
    speed = run_speed(ops)
    base = LearnedCostModel(prior_doc(base_doc, companion))
    # each record's base prediction is made once: the corrections, the residual trees and every
    # fold of the own model's choice price the same records with the same base
    memo: dict[str, Any] = {} if base_memo is None else base_memo
    base.base_memo = memo
    norm: list[Mapping[str, Any]] = list(normalize_records(ops, anchor))
    if base.kernel_kinds:  # the groups its predictions are corrected by
        norm = [
            as_kernel_kind(r, **base.kernel_kind_flags)
            for r in norm
        ]
    table: dict[str, list[float]] = defaultdict(list)
    for r in norm:
        table[r["key"]].append(r["latency_us"])
    corr = corrections(base, norm)

    doc = dict(base_doc)
    doc["speed"] = speed
    doc["fingerprint"] = records_fingerprint(records)  # the device adapted to
    # the in-model spill (the base's) ramps over the caches of the device adapted to, if known
    doc["cache_bytes"] = fingerprint_caches(doc["fingerprint"]) or base_doc.get("cache_bytes")
    if device is not None:
        doc["device"] = device
    doc["adapted"] = {
        "corrections": corr,
        "table": {k: round(statistics.median(v), 4) for k, v in sorted(table.items())},
        "overhead_us": round(statistics.median(r.get("overhead_us", 0.0) for r in norm), 4),
        "ops": len(norm),
        "base_device": base_doc.get("device"),
        "base_fingerprint": base_doc.get("fingerprint"),
        "base_anchor_speed": anchor,
        **({"companion": companion} if companion is not None else {}),
    }
    if trees and len(norm) >= 20:
        doc["adapted"].update(_residual_trees(doc, norm, memo))
    if own and trees and len(norm) >= MIN_OWN:
        doc["adapted"].update(_own_model(base_doc, doc, ops, workers=workers, memo=memo))
    return doc


def _own_model(
    base_doc: Mapping[str, Any],
    adapted: Mapping[str, Any],
    ops: Sequence[Mapping[str, Any]],
    *,
    workers: int | None = None,
    memo: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``{"own": DOC, "own_weights": {...}, "own_families": [...], "fold_hits": {...},
    "fold_predictions": {...}}``: a
    model fitted on the new device's records alone, and per kernel family the weight
    (:data:`OWN_WEIGHTS`) of its log net latency against the corrected base's that put the most
    held-out ops within ±10 % (each of :data:`OWN_FOLDS` folds by key hash held out once, each
    side fitted on the others; at least ``MIN_HELD`` held-out ops; a tie goes to the lighter
    weight); only ``fold_hits`` when weight 0 wins everywhere. A device whose kernels differ in
    kind, not in speed (LiteRT's builtin kernels against XNNPACK), is learnt better afresh than
    corrected. ``fold_hits``: per kernel family and per kind (``KIND|TYPE``), its held-out ops
    and how many of them the base, the corrected base and the adaptation (at its family's
    weight) put within ±10 %, for the guard
    (:func:`~tacopt.cost_models.learned.sampling.guard.guarded_adapt`): every record judged by
    a fit that did not see it, with no fit of its own. ``fold_predictions``: per op record key,
    the net latency (the base's units) its fold priced it at, the base's, the corrected base's,
    then at each weight (:data:`OWN_WEIGHTS`), for the guard's whole-model check (not written
    to the model file).

    The folds and the final fit run in ``workers`` processes (default: one per CPU this process
    may use, for :data:`PARALLEL_OPS` records or more, where ``fork`` exists), with the same
    result as one."""
    device = str(adapted.get("device", "CPU"))
    companion = (adapted.get("adapted") or {}).get("companion")
    # the own model's sources (kind, family or copy models) are chosen once, on every record
    sources = fit_sources(ops, device=device)
    if workers is None:
        workers = _cpus() if len(ops) >= PARALLEL_OPS else 1
    tasks: list[tuple[Any, ...]] = [
        *((_fold_hits, base_doc, ops, device, sources, k, memo, companion)
          for k in range(OWN_FOLDS)),
        (partial(fit, device=device, sources=sources), ops),
    ]
    *folds, own_doc = _run_all(tasks, workers)
    # per family and kind: [held-out ops, base, corrected, then each weight's hits]
    hits: dict[str, list[int]] = defaultdict(lambda: [0] * (3 + len(OWN_WEIGHTS)))
    predictions: dict[str, list[float]] = {}
    for fold_hits, fold_predictions in folds:
        predictions.update(fold_predictions)
        for name, h in fold_hits.items():
            hits[name] = [a + b for a, b in zip(hits[name], h, strict=True)]
    weights, best = {}, {}
    for fam, h in sorted(hits.items()):
        if "|" in fam:
            continue
        best[fam] = max(range(len(OWN_WEIGHTS)), key=lambda i: (h[3 + i], -i))
        if h[0] >= MIN_HELD and OWN_WEIGHTS[best[fam]] > 0:
            weights[fam] = OWN_WEIGHTS[best[fam]]
    judged = {}
    for name, (n, base, corrected, *by_weight) in sorted(hits.items()):
        fam = family(*name.split("|", 1)) if "|" in name else name
        w = OWN_WEIGHTS.index(weights[fam]) if fam in weights else 0
        judged[name] = {"probes": n, "base": base, "corrected": corrected,
                        "adapted": by_weight[w]}  # fmt: skip
    if not weights:
        return {"fold_hits": judged, "fold_predictions": predictions}
    return {
        "own": own_doc,
        "own_weights": weights,
        "own_families": sorted(weights),
        "fold_hits": judged,
        "fold_predictions": predictions,
    }


def _fold_hits(
    base_doc: Mapping[str, Any],
    ops: Sequence[Mapping[str, Any]],
    device: str,
    sources: Any,
    k: int,
    memo: dict[str, Any] | None = None,
    companion: str | None = None,
) -> tuple[dict[str, list[int]], dict[str, list[float]]]:
    """Per kernel family and per kind (``KIND|TYPE``), fold ``k``'s held-out ops and how many
    of them the base, the corrected base (no trees) and each weight of :data:`OWN_WEIGHTS`
    put within ±10 %, every side fitted on the other folds; and per held-out record key the
    net latencies (the base's units) of those ways."""
    train = [r for r in ops if fold(r, folds=OWN_FOLDS) != k]
    test = [r for r in ops if fold(r, folds=OWN_FOLDS) == k]
    doc = adapt(base_doc, train, own=False, base_memo=memo, companion=companion)
    doc["adapted"]["own"] = fit(train, device=device, sources=sources)
    own = LearnedCostModel(doc).with_own_weights(dict.fromkeys(FAMILIES, 1.0))
    own.base_memo = memo
    corrected = own.with_own_weights({})
    simpler = [own.choosing(dict.fromkeys(FAMILIES, c)) for c in ("base", "corrected")]
    out: dict[str, list[int]] = defaultdict(lambda: [0] * (3 + len(OWN_WEIGHTS)))
    predictions: dict[str, list[float]] = {}
    # judged as measured, in the base's units (the own model's re-anchored by predict)
    for raw, r in zip(test, normalize_records(test, own.anchor_speed), strict=True):
        kernel = as_kernel_kind(r, **own.kernel_kind_flags) if own.kernel_kinds else r
        nets = own.predict_net(r), corrected.predict_net(r)
        net = [m.predict(r).latency_us - own.overhead_us for m in simpler]
        net += [blend_net(*nets, w) for w in OWN_WEIGHTS]
        predictions[str(r["key"])] = [round(v, 4) for v in net]
        predicted = [own.as_measured(r, own.overhead_us + v) for v in net]
        hit = [1] + [int(abs(p - raw["latency_us"]) <= 0.1 * raw["latency_us"]) for p in predicted]
        for name in (_family(r, own), f"{kernel['kind']}|{kernel.get('inference_type')}"):
            out[name] = [a + b for a, b in zip(out[name], hit, strict=True)]
    return dict(out), predictions


def _cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _run_all(tasks: Sequence[tuple[Any, ...]], workers: int) -> list[Any]:
    """``fn(*args)`` of each ``(fn, *args)``, in order, over ``workers`` forked processes (in
    this one when one, or without ``fork``)."""
    if workers <= 1 or "fork" not in mp.get_all_start_methods():
        return [fn(*args) for fn, *args in tasks]

    with ProcessPoolExecutor(min(workers, len(tasks)), mp_context=mp.get_context("fork")) as ex:
        futures = [ex.submit(fn, *args) for fn, *args in tasks]
        return [f.result() for f in futures]


def _family(r: Mapping[str, Any], model: Any) -> str:
    """The kernel family ``model`` prices record ``r`` in (by its kernel kind)."""
    if model.kernel_kinds:
        r = as_kernel_kind(r, **model.kernel_kind_flags)
    return family(r["kind"], r.get("inference_type"))


def _residual_trees(
    doc: Mapping[str, Any],
    norm: Sequence[Mapping[str, Any]],
    memo: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``{"trees": ..., "tree_inputs": ..., "family_trees": {...}}``: boosted trees (LightGBM, as
    JSON lists) on the log residual of the corrected base's net latency, from the tree features
    and that log latency (``"features+log_net"``): one set over every op, and one per kernel
    family with :data:`MIN_FAMILY_TREE_OPS` records, which prices that family's ops (as the
    base model's own trees since version 7: one set for every kind spends its splits on the
    kinds with most records). Adapted to the Zen 4 / 2 threads / builtin kernels from the Zen 3
    model, tuning halves: 61.7 -> 68.6 %, 46.1 -> 50.2 %, 24.1 -> 32.6 % of ops within ±10 %
    (corrections and trees, no model of the device's own; docs/cost-models.md). For a base
    before version 6, on its gross latency, from the tree features alone. ``memo``: the base's
    predictions by record key (:func:`adapt`)."""
    model = LearnedCostModel(doc)
    model.base_memo = memo
    rows = [op_vector(r, model.tree_kinds, **model.feature_flags) for r in norm]
    if not model.net_trees:
        base = np.log([model.predict(r).latency_us for r in norm])
        y = np.log([max(r["latency_us"], 0.05) for r in norm])
        return {"trees": fit_lightgbm(np.array(rows), y, base, ADAPT_TREE_PARAMS)}
    base = np.log([model.predict_net(r) for r in norm])
    y = np.log([net_latency(r) for r in norm])
    X = np.array([[*row, b] for row, b in zip(rows, base, strict=True)])
    trees = fit_lightgbm(X, y, base, ADAPT_TREE_PARAMS)
    fams = np.array([family(r["kind"], r.get("inference_type")) for r in norm])
    by_family = {
        str(f): fit_lightgbm(X[fams == f], y[fams == f], base[fams == f], ADAPT_TREE_PARAMS)
        for f in sorted(set(fams.tolist()))
        if int((fams == f).sum()) >= MIN_FAMILY_TREE_OPS
    }
    return {"trees": trees, "tree_inputs": "features+log_net", "family_trees": by_family}


def uncertain_weights(base_doc: Mapping[str, Any]) -> dict[str, float]:
    """Sampler weights for adapting the model ``base_doc``: each sampler of the generic,
    ``net-rnn``, ``move`` and ``tail`` priors at its prior weight x (how unsure the base is
    about its kind + 0.1). Unsureness: the log residual (``rmse_log``) of the base's fits of
    the kind, the largest over its inference types (its fit of the kind as a whole when it has
    none; 1.0 for a kind it never measured). Read from the model file alone, so the plan is
    known before measuring starts.

    >>> fits = {"CONV_2D|FLOAT": {"rmse_log": 0.9}, "ADD": {"rmse_log": 0.1}}
    >>> w = uncertain_weights({"fits": fits})
    >>> w["ADD"] < w["CONV_2D"] and w["CONV_2D_NET"] == w["CONV_2D"]
    True
    """
    prior = {
        **{k: SAMPLERS[k][1] for k in BASE_SAMPLERS},
        **NET_RNN_PRIOR,
        **MOVE_PRIOR,
        **TAIL_PRIOR,
    }
    fits = base_doc.get("fits", {})
    resid: dict[str, float] = {}
    for name, v in fits.items():
        kind = name.split("|")[0]
        if "|" in name or kind not in resid:
            r = float(v.get("rmse_log", 1.0))
            resid[kind] = max(resid.get(kind, 0.0), r) if "|" in name else r
    out: dict[str, float] = {}
    for name in sorted(prior):
        kind = _kind_of_sampler(name)
        out[name] = round(prior[name] * (resid.get(kind, 1.0) + 0.1), 4)
    return out


#: How far off an unprobed sampler's kind counts (:func:`differing_weights`): a log ratio of
#: 1, as unsure as :func:`uncertain_weights` counts a kind the base never measured. A sampler's
#: distance is capped at :data:`MAX_DISTANCE` (a kind 20x off needs its correction, not all the
#: budget).
UNPROBED_DISTANCE, MAX_DISTANCE = 1.0, 2.0


def differing_weights(
    base_doc: Mapping[str, Any],
    probes: Sequence[Mapping[str, Any]],
    *,
    companion: str | None = None,
) -> dict[str, float]:
    """:func:`uncertain_weights` x (how far the base, re-anchored to the device of ``probes``,
    is from them on each sampler's ops + 0.1): the root mean square of the log ratio of its
    prediction (as measured) to the measured latency over the op records of that sampler
    (labels ``SAMPLER:seed:i``), at most :data:`MAX_DISTANCE`; :data:`UNPROBED_DISTANCE` for a
    sampler with no probe. Deterministic for the same records, so a resumed phase draws the
    same samples. ``companion``: the base is taken times that kernel-set companion (as
    :func:`adapt`'s prior).

    >>> base = {"fits": {"ADD": {"rmse_log": 0.1}}, "anchor_speed": {"add": 1.0}}
    >>> uncertain_weights(base)["ADD"], differing_weights(base, [])["ADD"]  # no probe: x 1.1
    (0.4, 0.44)
    """
    uncertain = uncertain_weights(base_doc)
    ops = [r for r in probes if r.get("type") == "op" and r.get("speed")]
    logs: dict[str, list[float]] = defaultdict(list)
    if ops:
        base = LearnedCostModel(prior_doc(base_doc, companion))
        for raw, r in zip(ops, normalize_records(ops, base.anchor_speed), strict=True):
            p = base.predict_as_measured(r)
            logs[str(raw.get("model", "")).split(":")[0]].append(
                math.log(max(p, 1e-3) / max(raw["latency_us"], 1e-3))
            )
    out = {}
    for name, w in uncertain.items():
        vs = logs.get(name)
        d = math.sqrt(sum(v * v for v in vs) / len(vs)) if vs else UNPROBED_DISTANCE
        out[name] = round(w * (min(d, MAX_DISTANCE) + 0.1), 4)
    return out


#: The op kind of a sampler whose name is not a kind.
SAMPLED_KIND = {
    "TRANSPOSE_HEADS": "TRANSPOSE",
    "TRANSPOSE_LAYOUT": "TRANSPOSE",
    "SLICE_ROWS": "SLICE",
    "CONCATENATION_ROWS": "CONCATENATION",
}


def _kind_of_sampler(name: str) -> str:
    for suffix in ("_NET", "_LN", "_MOVE", "_SMALL"):
        name = name.removesuffix(suffix)
    return SAMPLED_KIND.get(name, name)

"""``learned``: per-op CPU latency predicted from features measured on a real runtime.

Fit (:func:`~.fit.fit`) on records from :mod:`tacopt.cost_models.learned.measurement.measure`;
the model is plain JSON (format ``tacopt-learned``, version 16), never pickle, and loads as a
cost model with ``--cost-model path/to/model.json``. It predicts the measured single-op latency (one
``invoke()``, its fixed Python overhead ``overhead_us`` included); ``op_cost`` reports the
latency *inside a model*: the prediction net of that overhead, times the in-model scale of the
graph it is in (:meth:`LearnedCostModel.in_model_scale`), plus ``per_op_us``.

Every fitted part works on the log of the *net* latency, the invoke overhead added back once:
an op of 0.9 us is 0.68 us of overhead and 0.22 us of work, and a fit of the gross latency in
log space spends its accuracy on the overhead (version 6; before, the trees and kind models
fitted the gross latency: sweep held-out configurations 64.1 -> 67.2 % within ±10 %, the zoo's
tuning half 65.3 / 65.7 -> 69.9 / 72.3 %, same records, docs/cost-models.md).

How a prediction is made (the source is reported by :meth:`LearnedCostModel.predict`). An op is
first named by the kernel it runs
(:func:`~tacopt.cost_models.learned.fitting.features.kernel_kind`, which says what each naming
fixed): a grouped CONV_2D is a ``CONV_2D_GROUPED`` (version 8), one with one input channel per
group a ``DEPTHWISE_CONV_2D`` (version 9), a FULLY_CONNECTED of more than one row a 1x1
``CONV_2D`` (version 11). Since version 12 the trees see a reduction's ``keep_dims`` and axes,
and a kind model of reductions steps in its base fit for a global pool kept 4-D
(:func:`~tacopt.cost_models.learned.fitting.features.global_pool`). Since version 15 they see
the innermost runs a broadcast, a reduction or a transposed convolution walks (``log_runs``).

1. ``exact``: the configuration (same
   :func:`~tacopt.cost_models.learned.measurement.singleop.op_key`) was measured.
2. ``kind``: the (kind, inference type) is priced by a kind model (:mod:`~.kind_models`: a
   log-linear base on padded MACs, bytes, FLOPs and output elements, trees on its residual),
   its own or the GEMM one a one-row FULLY_CONNECTED runs as, which beat the shared trees on
   held-out training configurations (``kind_groups``; chosen in :func:`~.fit.fit`).
3. ``family``: the group is priced by its kernel family's model (every kind of the family,
   told apart by one input per kind: elementwise, data movement, ...), chosen the same way
   (``family_groups``).
4. ``group``: a ridge fit of log net latency on ``[1, log FLOPs, log bytes, log output
   elements]`` per (kind, inference type), shrunk towards the kind's fit, itself shrunk towards
   the global one (``SHRINK``), corrected by LightGBM's boosted trees (JSON lists) over
   :data:`FEATURES` and one flag per frequent kind: one set of trees per kernel family
   (``family_trees``, version 7: families share no residual structure, and a kind added to the
   sweep cannot move another family's corrections; one set for every kind before).
5. ``movement``: a data-movement kind for which
   :mod:`~tacopt.cost_models.learned.fitting.movement` (fixed + per byte + per copied run) beat
   the trees on held-out training configurations (``movement_kinds``), or which has no fit of
   its own.
6. ``fallback``: a kind never measured: the global fit and the trees, at least a GEMM of its
   FLOPs (``fallback_flops_per_us``); ``strict=True`` raises :class:`CostModelError` instead.

Whole models (:meth:`LearnedCostModel.predict_model`): one invoke overhead + ``in_model_scale``
(+ ``in_model_spill`` x how far the model's data spill from the L2 towards the L3 of the
training device, ``cache_bytes``: version 13) x the sum of net op latencies + ``per_op_us`` per
op + ``while_trip_us`` per WHILE trip + ``cold_weight_us_per_mb`` per weight megabyte of a model
whose data overflow that L3 (version 15 files fitted since issue 47's session 4; before: none);
the terms are fitted on the training models' measured
latencies (:func:`~tacopt.cost_models.learned.fitting.whole_model.whole_model_terms`). Quantize /
dequantize at a boundary cost ``conversion_us_per_element`` (fitted on QUANTIZE / DEQUANTIZE
records).

Times are in the units of one machine (``anchor_speed``; records are normalized by the speed
measured beside them, :mod:`~tacopt.cost_models.learned.measurement.speed`); ``op_cost`` converts
them to the machine of ``speed`` (``tacopt calibrate``). The model knows one device, the one it was
measured on (``device``, default ``"CPU"``).

The parts: :mod:`~tacopt.cost_models.learned.fitting.in_model` (whole models, in-model op costs),
:mod:`~tacopt.cost_models.learned.fitting.fit` (fitting them),
:mod:`~tacopt.cost_models.learned.fitting.features` (what the model sees),
:mod:`~tacopt.cost_models.learned.fitting.trees` (the boosted trees) and
:mod:`~tacopt.cost_models.learned.fitting.accuracy` (evaluation on held-out records).
"""

from __future__ import annotations

import copy
import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.base import (
    CostModelError,
    LinkCost,
    needs_conversion,
)
from tacopt.cost_models.learned.fitting.companion import chosen_companion, ratio_of
from tacopt.cost_models.learned.fitting.features import (
    as_kernel_kind,
    design_row,
    feature_names,
    op_vector,
)
from tacopt.cost_models.learned.fitting.in_model import InModelPricing
from tacopt.cost_models.learned.fitting.kind_models import EXP_MAX, KindModels, group_of
from tacopt.cost_models.learned.fitting.movement import predict_movement
from tacopt.cost_models.learned.fitting.rules import fitted_kind, rule_latency
from tacopt.cost_models.learned.fitting.trees import predict_stacked, stack_trees
from tacopt.cost_models.learned.fitting.whole_model import (
    LEGACY_FLOOR_US,
    check_whole_model_terms,
)
from tacopt.cost_models.learned.measurement.speed import (
    family,
    family_index,
    family_indices,
    reference_family,
)
from tacopt.cost_models.model_file import read_model_doc
from tacopt.cost_models.ops import MOVEMENT

FORMAT = "tacopt-learned"
#: How an adapted model may price a kernel family (:mod:`~..sampling.guard`), simplest first:
#: the base re-anchored, the base corrected per kind and family, the adaptation as fitted.
CHOICES = ("base", "corrected", "adapted")
VERSION = 16


def correction_of(corr: Mapping[str, float], kind: str, inference_type: str | None) -> float:
    """The log correction of an op: its group's, else its family's, else the global one.

    >>> correction_of({"*": 0.1, "family:movement": 0.2}, "PAD", "FLOAT")
    0.2
    """
    return ratio_of(corr, kind, inference_type)  # looked up as a companion's ratios


def blend_net(own_us: float, corrected_us: float, weight: float) -> float:
    """An adapted model's net latency of an op from its own model's and its corrected base's:
    their geometric mean, the own model's weighted by ``weight``.

    >>> blend_net(4.0, 1.0, 0.5)
    2.0
    """
    return float(own_us**weight * corrected_us ** (1 - weight))


@dataclass(frozen=True, slots=True)
class Prediction:
    """A predicted single-op latency, ``invoke()`` overhead included (``latency_us``, in the
    units of the model's ``anchor_speed``), and where it came from (``exact``, ``group``,
    ``movement``, ``fallback``)."""

    latency_us: float
    source: str


class LearnedCostModel(InModelPricing):
    """A fitted model (the dict from :func:`~.fit.fit`) as a cost model in microseconds.

    ``op_cost`` is the latency of the op inside a model: the predicted single-op latency net of
    the invoke overhead, times the model's in-model scale.
    """

    name = "learned"
    unit = "us"

    def __init__(
        self, doc: Mapping[str, Any], *, strict: bool = False, source: str = "<dict>"
    ) -> None:
        if doc.get("format") != FORMAT:
            raise CostModelError(f"learned model '{source}': format is not '{FORMAT}'")
        try:
            self.table: dict[str, float] = dict(doc["table"])
            self.fits = {k: np.asarray(v["w"], dtype=np.float64) for k, v in doc["fits"].items()}
            self.movement = {
                k: tuple(float(v) for v in fit) for k, fit in doc.get("movement", {}).items()
            }
            #: the shared trees of files before version 7 (one set for every kind)
            self.trees = stack_trees(doc["trees"]) if doc.get("trees") else None
            #: version 7: one set of trees per kernel family
            self.family_trees = {
                str(f): stack_trees(t) for f, t in (doc.get("family_trees") or {}).items() if t
            }
            version = int(doc.get("version", 1))
            #: whether the trees correct the net latency (version 6) or the gross one
            self.net_trees = version >= 6
            #: whether ops are priced by their kernel kind (version 8: a grouped CONV_2D is
            #: ``CONV_2D_GROUPED``, :func:`~.features.kernel_kind`)
            self.kernel_kinds = version >= 8
            #: version 9: a CONV_2D with one input channel per group is a DEPTHWISE_CONV_2D
            self.depthwise_groups = version >= 9
            #: version 10: a slice copies its innermost cut dimension in one run (copy_runs)
            self.slice_spans = version >= 10
            #: version 11: a FULLY_CONNECTED of more than one row is a 1x1 CONV_2D's GEMM, and a
            #: pad of the channels copies one run per pixel (copy_runs)
            self.gemm_rows = self.pad_pixels = version >= 11
            #: version 14: a STRIDED_SLICE XNNPACK refuses (strides, a shrunk axis) is a kind
            self.strided_slices = version >= 14
            #: version 16: a SOFTMAX with a beta other than 1 (XNNPACK refuses it) is a kind
            self.softmax_beta = version >= 16
            #: how this model names an op's kernel (:func:`~.features.as_kernel_kind`)
            self.kernel_kind_flags = {
                "depthwise": self.depthwise_groups,
                "gemm_rows": self.gemm_rows,
                "strided": self.strided_slices,
                "softmax_beta": self.softmax_beta,
            }
            #: version 12: the trees see a reduction's keep_dims and axes (features.FEATURES),
            #: as the file's tree features say
            self.reductions = "keep_dims" in (doc.get("tree_features") or [])
            #: version 15: and the innermost runs a broadcast or a reduction walks
            self.runs = "log_runs" in (doc.get("tree_features") or [])
            self.feature_flags = {"reductions": self.reductions, "runs": self.runs}
            self.tree_kinds = list(doc.get("tree_kinds", []))
            # kinds priced by their data movement (None: every MOVEMENT kind, as version 3)
            mk = doc.get("movement_kinds")
            self.movement_kinds = None if mk is None else set(mk)
            self.kind_models = KindModels(doc.get("kind_models", {}), **self.feature_flags)
            #: groups priced by a kind model, their own or an alias's (None: every group that
            #: can be)
            kg = doc.get("kind_groups")
            self.kind_groups: set[str] | None = None if kg is None else set(kg)
            #: groups priced by their kernel family's model
            self.family_groups = set(doc.get("family_groups", []))
            #: the invoke overhead of the base fit (its table and fits include it) and of the
            #: device predicted for (the adapted one's, :mod:`~tacopt.cost_models.adapt`)
            self.base_overhead_us = float(doc["overhead_us"])
            adapted = doc.get("adapted") or {}
            self.overhead_us = float(adapted.get("overhead_us", self.base_overhead_us))
            self.corrections = {str(k): float(v) for k, v in adapted.get("corrections", {}).items()}
            self.adapt_table = {str(k): float(v) for k, v in adapted.get("table", {}).items()}
            self.adapt_trees = stack_trees(adapted["trees"]) if adapted.get("trees") else None
            #: the residual trees of a kernel family, for its ops (else ``adapt_trees``)
            self.adapt_family_trees = {
                str(f): stack_trees(t) for f, t in (adapted.get("family_trees") or {}).items()
            }
            #: per kernel family, and per kind (``KIND|TYPE``, before its family's), how a
            #: guarded adaptation prices it (CHOICES; a family not listed: the base); None:
            #: every family as adapted (files before the guard)
            fc = adapted.get("family_choice")
            self.family_choice = None if fc is None else {str(k): str(v) for k, v in fc.items()}
            if any(v not in CHOICES for v in (self.family_choice or {}).values()):
                raise ValueError(f"adapted.family_choice: not one of {CHOICES}")
            #: the kernel-set companion an adaptation's prior multiplies the base by
            #: (``adapted.companion``, :mod:`~.companion`); the ``base`` choice goes without
            self.companion = chosen_companion(doc, source)
            #: the adapted trees also see the corrected net latency (after the tree features)
            self.adapt_trees_see_net = adapted.get("tree_inputs") == "features+log_net"
            #: a model of the adapted device's own, for the kernel families it prices better
            self.own = LearnedCostModel(adapted["own"]) if adapted.get("own") else None
            #: per kernel family, the weight of the own model's log net latency against the
            #: corrected base's (files before weights: 1 for each of ``own_families``)
            self.own_weights = {
                str(f): float(w)
                for f, w in (
                    adapted.get("own_weights")
                    or dict.fromkeys(adapted.get("own_families", []), 1.0)
                ).items()
                if float(w) > 0
            }
            #: the least net latency it fitted on and predicts (whole_model.FLOOR_US)
            self.floor_us = float(doc.get("net_floor_us", LEGACY_FLOOR_US))
            #: kinds the delegate refused when measured, and their (builtin) invoke overhead
            fallback = doc.get("fallback") or {}
            self.fallback_kinds = set(fallback.get("kinds", []))
            self.fallback_overhead_us = float(fallback.get("overhead_us", 0.0))
            self.scale = float(doc.get("in_model_scale", 1.0))
            #: how much more an op costs inside a model whose data spill from the L2 to the L3
            #: of the training device (``cache_bytes``; whole_model.spill_level); files before:
            #: none
            self.spill = float(doc.get("in_model_spill", 0.0))
            self.cache_bytes = [float(b) for b in doc.get("cache_bytes") or []] or None
            self.while_trip_us = float(doc.get("while_trip_us", 0.0))
            #: us a weight megabyte costs an op in a model whose data overflow the L3
            #: (whole_model.whole_model_terms; files before: none)
            self.cold_weight_us_per_mb = float(doc.get("cold_weight_us_per_mb", 0.0))
            self.per_op_us = float(doc.get("per_op_us", 0.0))
            self.conversion_us = float(doc.get("conversion_us_per_element", 0.0))
            self.gemm_rate = float(doc.get("fallback_flops_per_us", 0.0))
            self.devices = (str(doc.get("device", "CPU")),)
            #: the kernels it was measured with (files before fingerprints: XNNPACK)
            self.resolver = str((doc.get("fingerprint") or {}).get("resolver", "xnnpack"))
            self.anchor_speed = {str(k): float(v) for k, v in doc.get("anchor_speed", {}).items()}
            self.speed = {str(k): float(v) for k, v in doc.get("speed", {}).items()}
            gross = int(doc.get("version", 1)) >= 2
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CostModelError(f"learned model '{source}': bad or missing field {exc}") from None
        check_whole_model_terms(self, source)
        names = feature_names(**self.feature_flags)
        expected = [*names, *(f"kind={k}" for k in self.tree_kinds)]
        has_trees = self.trees is not None or bool(self.family_trees)
        if has_trees and list(doc.get("tree_features", expected)) != expected:
            raise CostModelError(
                f"learned model '{source}': fitted on other tree features (version "
                f"{doc.get('version')}); refit it with `tacopt fit`"
            )
        read = max(
            (int(t[0].max()) for t in (self.trees, *self.family_trees.values()) if t), default=-1
        )
        if read >= len(expected):
            raise CostModelError(
                f"learned model '{source}': its trees read tree input {read}, but it names "
                f"{len(expected)}; refit it with `tacopt fit`"
            )
        if "*" not in self.fits:
            raise CostModelError(f"learned model '{source}': no global fit '*'")
        # version 1 files stored net latencies in the table: add the overhead back
        self.table_offset = 0.0 if gross else self.base_overhead_us
        self.doc = doc
        self.strict = strict
        #: how much slower the machine predicted for is than the anchor (``tacopt calibrate``),
        #: per kernel family (:func:`~tacopt.cost_models.speed.family`; ``"*"``: blended)
        self.speed_factors = family_indices(self.speed, self.anchor_speed)
        self.speed_factor = self.speed_factors["*"]
        #: the base's fitted predictions by record ``key``, when the caller shares one between
        #: models of the same base (an adaptation prices each record's base many times over;
        #: :func:`~tacopt.cost_models.learned.sampling.adapt.adapt`); None: not kept
        self.base_memo: dict[str, Prediction] | None = None
        #: per model graph priced (weakly held): its (nodes, edges) and its ops' bytes
        self._graph_bytes: weakref.WeakKeyDictionary[nx.MultiDiGraph, tuple[tuple[int, int], float]]
        self._graph_bytes = weakref.WeakKeyDictionary()
        #: the in-model scale of the model graph it is bound to (for_model); None: each graph's
        self._bound_scale: float | None = None
        #: the cold level of the model graph it is bound to (for_model)
        self._bound_cold: float | None = None

    def predict(self, features: Mapping[str, Any], *, key: str | None = None) -> Prediction:
        """Single-op latency (us, invoke overhead included) of one op configuration (see the
        module docstring for the order); an adapted model (:mod:`~tacopt.cost_models.adapt`)
        looks up what it measured on its device, else asks its model of that device's own for
        the kernel families it chose it for (alone, or blended in log space with the corrected
        base by the family's weight), else corrects the base's net latency by the op's kind or
        family."""
        if key is not None and key in self.adapt_table:
            return Prediction(self.adapt_table[key], "exact")
        if self.kernel_kinds:
            features = as_kernel_kind(features, **self.kernel_kind_flags)
        own, fam = self.own, family(features["kind"], features.get("inference_type"))
        choice = "adapted"
        if self.family_choice is not None:
            group = f"{features['kind']}|{features.get('inference_type')}"
            choice = self.family_choice.get(group, self.family_choice.get(fam, "base"))
        if choice == "base" and self.corrections:
            p = self._predict_base(features, key=key)
            net = max(p.latency_us - self.base_overhead_us, self.floor_us)
            return Prediction(self.overhead_us + net, p.source)
        if choice == "corrected":
            return self._predict_corrected(features, key=key, with_trees=False)
        weight = 0.0 if own is None else self.own_weights.get(fam, 0.0)
        if own is None or weight <= 0:
            return self._predict_corrected(features, key=key)
        # the own model's net latency in the base's units (the overhead re-anchors apart:
        # as_measured), alone or blended in log space with the corrected base's
        p = own.predict(features)
        ref = reference_family(features["kind"], features.get("inference_type"))
        scale = family_index(own.anchor_speed, self.anchor_speed, ref)
        net = max(p.latency_us - own.overhead_us, own.floor_us) / scale
        if weight >= 1:
            return Prediction(self.overhead_us + net, f"own {p.source}")
        corrected = max(self._predict_corrected(features, key=key).latency_us - self.overhead_us,
                        self.floor_us)  # fmt: skip
        return Prediction(self.overhead_us + blend_net(net, corrected, weight), f"blend {p.source}")

    def _predict_corrected(
        self, features: Mapping[str, Any], *, key: str | None, with_trees: bool = True
    ) -> Prediction:
        """The base's prediction, times its kernel-set companion's ratio (the prior of an
        adaptation to another kernel set), corrected (an adapted model) by the op's kind or
        family and (``with_trees``) the residual trees."""
        p = self._predict_base(features, key=key)
        if not self.corrections and self.companion is None:
            return p
        c = correction_of(self.corrections, features["kind"], features.get("inference_type"))
        net = max(p.latency_us - self.base_overhead_us, self.floor_us)
        if self.companion is not None:
            c += self.companion.log_ratio(features, net, memo=self.base_memo)
        net *= math.exp(min(c, EXP_MAX))
        if self.adapt_trees is None or not with_trees:
            return Prediction(self.overhead_us + net, p.source)
        row = op_vector(features, self.tree_kinds, **self.feature_flags)
        if self.adapt_trees_see_net:
            row.append(math.log(net))
        trees = self.adapt_family_trees.get(
            family(features["kind"], features.get("inference_type")), self.adapt_trees
        )
        tree = math.exp(min(float(predict_stacked(trees, np.asarray([row]))[0]), EXP_MAX))
        if self.net_trees:
            return Prediction(self.overhead_us + net * tree, p.source)
        return Prediction((self.overhead_us + net) * tree, p.source)  # before version 6

    def _predict_base(self, features: Mapping[str, Any], *, key: str | None = None) -> Prediction:
        if key is not None and key in self.table:
            return Prediction(self.table[key] + self.table_offset, "exact")
        memo, record = self.base_memo, features.get("key")
        if memo is None or record is None:
            return self._with_fallback(features, self._predict_fitted(features))
        if record not in memo:
            memo[record] = self._with_fallback(features, self._predict_fitted(features))
        return memo[record]

    def _with_fallback(self, features: Mapping[str, Any], p: Prediction) -> Prediction:
        """A kind the delegate refused is invoked through the builtin kernels' shorter path:
        its net latency on their overhead (:func:`~.whole_model.fallback_overhead`)."""
        if features["kind"] not in self.fallback_kinds:
            return p
        net = max(p.latency_us - self.base_overhead_us, self.floor_us)
        return Prediction(self.fallback_overhead_us + net, p.source)

    def _predict_fitted(self, features: Mapping[str, Any]) -> Prediction:
        """The base's prediction from its fits: kind, family or copy models, else the group
        fit and the trees."""
        kind, group = features["kind"], group_of(features)
        if kind.startswith("CUSTOM:") and not fitted_kind(self, features):
            by_rule = rule_latency(self, features)  # its registered rule (custom_ops)
            if by_rule is not None:
                return Prediction(*by_rule)
        if group in self.family_groups:
            by_family = self.kind_models.predict(features, by_family=True)
            if by_family is not None:
                return Prediction(by_family, "family")
        if self.kind_groups is None or group in self.kind_groups:
            by_kind = self.kind_models.predict(features)
            if by_kind is not None:
                return Prediction(by_kind, "kind")
        if kind in MOVEMENT and (self.movement_kinds is None or kind in self.movement_kinds):
            net = predict_movement(
                self.movement, features, slice_spans=self.slice_spans, pad_pixels=self.pad_pixels
            )
            if net is not None:
                return Prediction(self.base_overhead_us + max(net, self.floor_us), "movement")
        row = np.asarray(design_row(features))[: len(self.fits["*"])]  # older files: 4 inputs
        log_net, source = float(row @ self.fits["*"]), "fallback"
        for name in (f"{kind}|{features.get('inference_type')}", kind):
            if name in self.fits:
                log_net, source = float(row @ self.fits[name]), "group"
                break
        if source == "fallback" and self.strict:
            raise CostModelError(f"cost model 'learned': op kind {kind} was never measured")
        tree = 0.0
        trees = self.trees
        if self.family_trees:
            trees = self.family_trees.get(family(kind, features.get("inference_type")))
        if trees is not None:
            x = np.asarray([op_vector(features, self.tree_kinds, **self.feature_flags)])
            tree = float(predict_stacked(trees, x)[0])
        if self.net_trees:
            gross = self.base_overhead_us + math.exp(min(log_net + tree, EXP_MAX))
        else:  # files before version 6: the trees corrected the gross latency
            gross = (self.base_overhead_us + math.exp(min(log_net, EXP_MAX))) * math.exp(
                min(tree, EXP_MAX)
            )
        if source == "fallback" and self.gemm_rate > 0:
            # an unseen kind (a fused LSTM, ...) is at least as slow as a GEMM of its FLOPs
            gross = max(gross, self.base_overhead_us + features.get("flops", 0.0) / self.gemm_rate)
        return Prediction(gross, source)

    def choosing(self, choices: Mapping[str, str]) -> LearnedCostModel:
        """This adapted model pricing each kernel family as ``choices`` says (:data:`CHOICES`;
        a family not named: the base)."""
        out = copy.copy(self)
        out.family_choice = dict(choices)
        return out

    def with_own_weights(self, weights: Mapping[str, float]) -> LearnedCostModel:
        """This adapted model with other weights of its own model per kernel family."""
        out = copy.copy(self)
        out.own_weights = {f: float(w) for f, w in weights.items() if w > 0}
        return out

    def predict_as_measured(self, record: Mapping[str, Any], *, key: str | None = None) -> float:
        """The single-op latency (us) this model predicts for an op record put in its units
        (:func:`~tacopt.cost_models.learned.measurement.speed.normalize_records`), in the units
        the record was measured in: the invoke overhead times the record's ``overhead_index``
        plus the rest times its ``speed_index``. The overhead and the op's work re-anchor by
        different families, so a latency and its prediction compare as measured, not in the
        model's units."""
        return self.as_measured(record, self.predict(record, key=key).latency_us)

    def as_measured(self, record: Mapping[str, Any], latency_us: float) -> float:
        """A latency this model predicted for ``record`` (in its units), in the units the record
        was measured in (:meth:`predict_as_measured`)."""
        s, s_overhead = record.get("speed_index", 1.0), record.get("overhead_index", 1.0)
        return self.overhead_us * s_overhead + (latency_us - self.overhead_us) * s

    def predict_net(self, features: Mapping[str, Any], *, key: str | None = None) -> float:
        """Single-op latency net of the invoke overhead (us), floored at the model's floor."""
        return max(self.predict(features, key=key).latency_us - self.overhead_us, self.floor_us)

    def link_cost(self, src_device: str, dst_device: str) -> LinkCost:
        self.check_device(src_device)
        self.check_device(dst_device)
        return LinkCost(0.0, 0.0)

    def conversion_cost_per_element(self, src_type: str, dst_type: str) -> float:
        if not needs_conversion(src_type, dst_type, model=self.name):
            return 0.0
        return self.speed_factors["elementwise"] * self.conversion_us


#: The learned model shipped with the package (``--cost-model learned``): ``tacopt learn`` (15
#: minutes) on an AMD EPYC Zen 4 (AVX-512 with VNNI, 2 cores), XNNPACK, 1 thread, at version 13,
#: its fingerprint in the file (``learn_v22a``, ``benchmarks/results/learn_v22/``). Until
#: 2026-11-27 17:00 the session before's Zen 4 learn refitted at version 12 (``learn_s8a``,
#: ``learn_v20/``, ``learn_v21/``); before, a learn on a Zen 3 (AVX2; kept as
#: ``benchmarks/results/learn_v21/learned_cpu_zen3.json.gz``), and until 2026-11-26 the fit of
#: an AVX-512 machine's sweep (``benchmarks/results/learned_v5/sweep.jsonl``);
#: docs/cost-models.md has each one's figures.
DEFAULT_MODEL = Path(__file__).parents[2] / "data" / "learned_cpu.json.gz"


def default_learned_model() -> LearnedCostModel:
    """The shipped model, anchored on the machine it was fitted on (``tacopt calibrate`` a copy
    of it to predict for this machine today)."""
    return LearnedCostModel(read_model_doc(DEFAULT_MODEL), source=str(DEFAULT_MODEL))


def read_learned_file(doc: dict[str, Any], path: Path) -> LearnedCostModel:
    """The model of a learned-model file (format :data:`FORMAT`, written by ``tacopt fit``)."""
    return LearnedCostModel(doc, source=str(path))

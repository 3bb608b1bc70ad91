"""A learned model inside a model graph: whole-model latency and each op's in-model cost.

:class:`~tacopt.cost_models.learned.fitting.model.LearnedCostModel` predicts one op alone
(a single ``invoke()``); this part of it prices ops where a partitioner and a whole model see
them: net of the invoke overhead of the op's own path
(:func:`~tacopt.cost_models.learned.fitting.whole_model.in_model_net`), times the in-model scale
of the bytes the model's ops move (the spill term), plus the per-op and cold-weights terms,
a WHILE as its body and condition times its trips. Ops that cost nothing per invoke (state,
ops of constants folded at init, a PAD XNNPACK absorbs) are free.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping
from typing import Any, TypeVar

import networkx as nx

from tacopt.cost_models.learned.fitting.whole_model import in_model_net
from tacopt.cost_models.learned.measurement.records import (
    cold_level,
    counted_ops,
    spill_level,
    weight_bytes,
)
from tacopt.cost_models.learned.measurement.singleop import (
    UNMEASURABLE,
    absorbed_reason,
    folded_reason,
    op_features,
    op_key,
)
from tacopt.cost_models.learned.measurement.speed import reference_family
from tacopt.cost_models.ops import trip_count
from tacopt.cost_models.protocol import CostModelBase, CostModelError, check_inference_type

_P = TypeVar("_P", bound="InModelPricing")


class InModelPricing(CostModelBase):
    """The in-model side of a learned model; its terms are set by the subclass from the model
    file (``in_model_scale``, ``in_model_spill``, ``cache_bytes``, ``per_op_us``,
    ``while_trip_us``, ``cold_weight_us_per_mb``)."""

    scale: float
    spill: float
    cache_bytes: list[float] | None
    per_op_us: float
    overhead_us: float
    while_trip_us: float
    cold_weight_us_per_mb: float
    speed_factors: dict[str, float]
    resolver: str
    _graph_bytes: weakref.WeakKeyDictionary[nx.MultiDiGraph, tuple[tuple[int, int], float]]
    _bound_scale: float | None
    _bound_cold: float | None

    def predict_model(
        self,
        model_record: Mapping[str, Any],
        by_key: Mapping[str, Mapping[str, Any]],
        *,
        with_loops: bool = True,
        raw: bool = False,
    ) -> float:
        """Predicted whole-model latency (us) for a ``model`` record: one invoke overhead +
        the in-model scale of the bytes its ops move (:meth:`in_model_scale`) x the ops' net
        latencies (a refused kind's over the builtin path's overhead: ``whole_model.
        in_model_net``) + ``per_op_us`` per op + the per-trip loop overhead (``raw``: the overhead
        and the plain sum of net op latencies). Ops the record lists as ``absorbed`` (a PAD
        XNNPACK adds to the next convolution) count for nothing."""
        total = ops = moved = weights = 0.0
        for key, rec, count in counted_ops(model_record, by_key):
            # an op that could not run alone (skip record) is predicted from its features
            total += count * in_model_net(self, rec, key=key if rec.get("type") == "op" else None)
            ops += count
            moved += count * float(rec.get("bytes", 0.0))
            weights += count * weight_bytes(rec)
        if raw:
            return self.overhead_us + total
        total = self.overhead_us + self.in_model_scale(moved) * total + self.per_op_us * ops
        total += self.cold_weight_us_per_mb * weights / 1e6 * self.cold_level(moved)
        if with_loops:
            total += self.while_trip_us * model_record.get("loop_trips", 0.0)
        return total

    def in_model_scale(self, model_bytes: float) -> float:
        """How much slower an op runs inside a model whose ops read and write ``model_bytes`` per
        invoke than alone: ``in_model_scale`` + ``in_model_spill`` x its spill level."""
        return self.scale + self.spill * spill_level(model_bytes, self.cache_bytes)

    def cold_level(self, model_bytes: float) -> float:
        """How far a model whose ops read and write ``model_bytes`` per invoke overflows the
        training device's L3 (:func:`~.records.cold_level`): its ops' weights cost
        ``cold_weight_us_per_mb`` a megabyte times this."""
        return cold_level(model_bytes, self.cache_bytes) if self.cold_weight_us_per_mb else 0.0

    def for_model(self: _P, G: nx.MultiDiGraph) -> _P:
        """This model pricing every op at the in-model scale of model graph ``G`` (the bytes
        its ops move), whatever part of ``G`` it is given: a partitioner's unit is a part of the
        model it runs in (:func:`tacopt.cost_models.protocol.for_model`)."""
        if not self.spill and not self.cold_weight_us_per_mb:
            return self
        bound = copy.copy(self)
        moved = self._graph_moved(G)
        bound._bound_scale = self.in_model_scale(moved)
        bound._bound_cold = self.cold_level(moved)
        return bound

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None:
        """Predicted latency (us) of op ``node`` inside a model on this model's device (the
        model: ``G``, whose ops' bytes set the in-model scale, :meth:`in_model_scale`, or the
        model this one is bound to, :meth:`for_model`)."""
        self.check_device(device)
        check_inference_type(inference_type, model=self.name)
        if node not in G:
            raise CostModelError(f"cost model 'learned': op '{node}' is not in the graph")
        if self._bound_scale is None:
            moved = self._graph_moved(G)
            scale, cold = self.in_model_scale(moved), self.cold_level(moved)
        else:
            scale, cold = self._bound_scale, self._bound_cold or 0.0
        return self._op_cost(G, node, inference_type, scale, cold)

    def _op_cost(
        self, G: nx.MultiDiGraph, node: str, inference_type: str, scale: float, cold: float = 0.0
    ) -> float:
        op = G.nodes[node]["op"]
        if op.kind == "WHILE":
            return self._while_cost(G, node, inference_type, scale, cold)
        if not self._runs(G, node):
            return 0.0  # state, an op of constants (computed once, at init), an absorbed PAD
        feats = op_features(G, node, root=G)
        key = op_key(feats) if feats["inference_type"] == inference_type else None
        feats["inference_type"] = inference_type
        net = scale * in_model_net(self, feats, key=key) + self.per_op_us
        if cold:
            net += self.cold_weight_us_per_mb * cold * weight_bytes(feats) / 1e6
        return self.speed_factors[reference_family(op.kind, inference_type)] * net

    def _runs(self, G: nx.MultiDiGraph, node: str) -> bool:
        """Whether an op (not a WHILE) costs anything per invoke: not state, not an op of
        constants (folded at init), not a PAD XNNPACK adds to the next convolution's padding."""
        if G.nodes[node]["op"].kind in UNMEASURABLE or folded_reason(G, node) is not None:
            return False
        return self.resolver != "xnnpack" or absorbed_reason(G, node) is None

    def _graph_moved(self, G: nx.MultiDiGraph) -> float:
        """The bytes the top-level ops of model ``G`` read and write per invoke (a WHILE's body
        and condition, subgraphs of their own, left out), which set its in-model scale and cold
        level; computed once per graph of a given size (0 when neither depends on them)."""
        if not self.spill and not self.cold_weight_us_per_mb:
            return 0.0

        size = (G.number_of_nodes(), G.number_of_edges())
        known = self._graph_bytes.get(G)
        if known is None or known[0] != size:
            moved = 0.0
            for n in G.nodes:
                if G.nodes[n]["op"].kind != "WHILE" and self._runs(G, n):
                    moved += float(op_features(G, n, root=G)["bytes"])
            known = self._graph_bytes[G] = (size, moved)
        return known[1]

    def _while_cost(
        self, G: nx.MultiDiGraph, node: str, itype: str, scale: float, cold: float
    ) -> float:
        op = G.nodes[node]["op"]
        trips, _ = trip_count(G, node, root=G)
        subs = G.graph.get("subgraphs", {})
        total = self.while_trip_us * trips
        for part, mult in (("body_subgraph", trips), ("cond_subgraph", trips + 1)):
            S = subs[op.options[part]]
            S_root = _with_subgraphs(S, subs)
            for n in S.nodes:
                total += mult * self._op_cost(S_root, n, itype, scale, cold)
        return total


def _with_subgraphs(S: nx.MultiDiGraph, subs: Mapping[str, nx.MultiDiGraph]) -> nx.MultiDiGraph:
    if "subgraphs" in S.graph:
        return S
    view = S.copy(as_view=False)
    view.graph["subgraphs"] = dict(subs)
    return view

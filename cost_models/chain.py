"""Wrappers around cost models: :class:`CheckedCostModel` checks every answer, and
:class:`FallbackCostModel` chains models so that each device is priced by the first that knows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.protocol import (
    UNITS,
    CostModel,
    CostModelBase,
    CostModelError,
    LinkCost,
    check_cost,
    check_costs,
    for_model,
    view_cost,
)


class CheckedCostModel:
    """Wraps a model so that every value it returns is checked (:func:`check_cost`)."""

    def __init__(self, inner: CostModel) -> None:
        for attr in (
            "name",
            "unit",
            "op_cost",
            "op_costs",
            "link_cost",
            "conversion_cost_per_element",
        ):
            if not hasattr(inner, attr):
                raise CostModelError(
                    f"cost model {getattr(inner, 'name', type(inner).__name__)!r} lacks '{attr}'"
                )
        if inner.unit not in UNITS:
            raise CostModelError(
                f"cost model '{inner.name}': unknown unit '{inner.unit}' (known: tac, us)"
            )
        self.inner = inner
        self.name = inner.name
        self.unit = inner.unit
        self.devices = tuple(getattr(inner, "devices", ()))

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None:
        return check_cost(
            self.inner.op_cost(G, node, device, inference_type),
            model=self.name,
            op=node,
            device=device,
        )

    def op_costs(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> np.ndarray:
        nodes = list(nodes)
        return check_costs(
            self.inner.op_costs(G, nodes, device, inference_type),
            model=self.name,
            nodes=nodes,
            device=device,
        )

    def view_cost(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> float | None:
        return view_cost(self.inner, G, list(nodes), device, inference_type)

    def for_model(self, G: nx.MultiDiGraph) -> CheckedCostModel:
        """The inner model bound to model graph ``G`` (:func:`for_model`), still checked."""
        bound = for_model(self.inner, G)
        return self if bound is self.inner else CheckedCostModel(bound)

    def link_cost(self, src_device: str, dst_device: str) -> LinkCost:
        link = self.inner.link_cost(src_device, dst_device)
        where = f"link {src_device}->{dst_device}"
        check_cost(link.per_byte, model=self.name, op=where, device=dst_device)
        check_cost(link.fixed, model=self.name, op=where, device=dst_device)
        return link

    def conversion_cost_per_element(self, src_type: str, dst_type: str) -> float:
        v = self.inner.conversion_cost_per_element(src_type, dst_type)
        out = check_cost(v, model=self.name, op=f"conversion {src_type}->{dst_type}", device="-")
        assert out is not None
        return out

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def __repr__(self) -> str:
        return f"CheckedCostModel({self.inner!r})"


class FallbackCostModel(CostModelBase):
    """A chain of cost models: each device is priced by the first model that knows it.

    Use it when no single model covers every device, e.g. a model learned from measurements on
    this machine's CPU followed by roofline profiles of accelerators (spec
    ``model.json+roofline``). Every model in the chain must use the same unit. A link is priced
    by the first model that knows both of its devices; conversions by the first model.

    Examples
    --------
    >>> from tacopt.cost_models.base import get_cost_model
    >>> chain = get_cost_model("roofline+roofline", checked=False)
    >>> chain.name, chain.unit, chain.devices[:2]
    ('roofline+roofline', 'us', ('CPU', 'DGPU'))
    >>> get_cost_model("tac+roofline")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tacopt.cost_models.protocol.CostModelError: cannot chain cost models of different units: ...
    """

    def __init__(self, models: Sequence[CostModel]) -> None:
        if not models:
            raise CostModelError("a cost-model chain needs at least one model")
        if len({m.unit for m in models}) > 1:
            units = ", ".join(f"{m.name} ({m.unit})" for m in models)
            raise CostModelError(f"cannot chain cost models of different units: {units}")
        self.models = tuple(models)
        self.name = "+".join(m.name for m in models)
        self.unit = models[0].unit
        self.devices = tuple(dict.fromkeys(d for m in models for d in _devices_of(m)))

    def model_for(self, device: str) -> CostModel:
        """The first model of the chain that knows ``device``."""
        for m in self.models:
            if _knows(m, device):
                return m
        raise CostModelError(
            f"cost model '{self.name}': no model in the chain knows device '{device}' "
            f"(known: {', '.join(self.devices)})"
        )

    def for_model(self, G: nx.MultiDiGraph) -> FallbackCostModel:
        """The chain with each of its models bound to model graph ``G`` (:func:`for_model`)."""
        return FallbackCostModel([for_model(m, G) for m in self.models])

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None:
        return self.model_for(device).op_cost(G, node, device, inference_type)

    def op_costs(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> np.ndarray:
        return self.model_for(device).op_costs(G, nodes, device, inference_type)

    def view_cost(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> float | None:
        return view_cost(self.model_for(device), G, list(nodes), device, inference_type)

    def link_cost(self, src_device: str, dst_device: str) -> LinkCost:
        for m in self.models:
            if _knows(m, src_device) and _knows(m, dst_device):
                return m.link_cost(src_device, dst_device)
        raise CostModelError(
            f"cost model '{self.name}': no model in the chain knows both devices of the link "
            f"{src_device}->{dst_device}"
        )

    def conversion_cost_per_element(self, src_type: str, dst_type: str) -> float:
        return self.models[0].conversion_cost_per_element(src_type, dst_type)


def _devices_of(model: CostModel) -> tuple[str, ...]:
    return tuple(getattr(model, "devices", ()))


def _knows(model: CostModel, device: str) -> bool:
    devices = _devices_of(model)
    return not devices or device in devices  # a model that lists no devices prices any

"""The cost-model protocol: what a cost model answers, and the checks every answer goes through.

A cost model answers four questions for the partitioner:

- ``op_cost(G, node, device, inference_type)``: what does op ``node`` of graph ``G`` cost when it
  runs on ``device`` in ``inference_type``? ``None`` says, explicitly, that the model cannot price
  it;
- ``op_costs(G, nodes, device, inference_type)``: the same for many ops at once, as a float64
  array; a :class:`numpy.ma.MaskedArray` marks the ops it cannot price (:func:`priced` builds
  one). A plain array prices every op;
- ``link_cost(src_device, dst_device)``: what moving bytes between two devices costs, as a
  :class:`LinkCost` (``per_byte`` x bytes + ``fixed`` once per crossing);
- ``conversion_cost_per_element(src_type, dst_type)``: what quantizing / dequantizing /
  requantizing one tensor element costs between two inference types.

A model may also answer ``view_cost(G, nodes, device, inference_type)`` (TAC's ``GetFuncCost``:
the cost of running ops together); :func:`view_cost` uses it when present, else sums the op costs.
And ``for_model(G)``: the model to price the parts of model ``G`` with, when what an op costs
depends on the whole model and not only on the part it is priced in (the learned model: how far
the model's data spill from the caches); :func:`for_model` uses it when present, else the model
itself. The partitioner binds its cost model to the model it partitions before pricing views.

A cost model only prices: which device runs which op is the device's own record
(:mod:`tacopt.partitioner.targets`). It says "cannot price" only for what a device allows but the
model has no number for, and says it explicitly. A NaN, a negative or an infinite cost is an error
(:class:`CostModelError`) naming the model, the op and the device.

Each model declares its ``unit``: ``"tac"`` (TAC's unit-less cost scale) or ``"us"``
(microseconds), and may list the ``devices`` it knows (none listed: it prices any device).

Examples
--------
>>> costs = check_costs(priced([3.0, 0.0], unsupported=[False, True]), model="m",
...                     nodes=["add_0", "gelu_1"], device="GPU")
>>> costs.tolist()
[3.0, None]
>>> check_costs(np.array([float("nan")]), model="m", nodes=["add_0"], device="GPU")
Traceback (most recent call last):
...
tacopt.cost_models.protocol.CostModelError: cost model 'm' returned nan for op 'add_0' on GPU (a ...
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import networkx as nx
import numpy as np

from tacopt.errors import TacoptError
from tacopt.fusion.ir.vocabulary import ACTIVATION_FORMAT, INFERENCE_TYPES, QUANTIZED_TYPES

__all__ = [
    "INFERENCE_TYPES",
    "QUANTIZED_TYPES",
    "UNITS",
    "CostModel",
    "CostModelBase",
    "CostModelError",
    "LinkCost",
    "check_cost",
    "check_costs",
    "check_inference_type",
    "for_model",
    "needs_conversion",
    "priced",
    "view_cost",
]

UNITS = frozenset({"tac", "us"})


class CostModelError(TacoptError):
    """A cost model that cannot be built or that returned an unusable cost."""


@dataclass(frozen=True, slots=True)
class LinkCost:
    """Cost of moving data from one device to another: ``per_byte * nbytes + fixed``.

    ``fixed`` is paid once per crossing (per pair of connected subgraphs in TAC), not per tensor.
    """

    per_byte: float
    fixed: float

    def cost(self, nbytes: float, crossings: int = 1) -> float:
        """Cost of ``nbytes`` moved in ``crossings`` crossings (0 when nothing moves).

        >>> LinkCost(5.0, 10.0).cost(8)
        50.0
        """
        if nbytes <= 0 and crossings <= 0:
            return 0.0
        return self.per_byte * nbytes + self.fixed * crossings


@runtime_checkable
class CostModel(Protocol):
    """What every cost model provides (see the module docstring)."""

    name: str
    unit: str

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None: ...

    def op_costs(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> np.ndarray: ...

    def link_cost(self, src_device: str, dst_device: str) -> LinkCost: ...

    def conversion_cost_per_element(self, src_type: str, dst_type: str) -> float: ...


class CostModelBase:
    """Optional base class: derive ``op_costs`` and ``view_cost`` from ``op_cost``.

    Subclasses set ``name``, ``unit``, ``devices`` and implement ``op_cost``, ``link_cost`` and
    ``conversion_cost_per_element``; they may override ``op_costs`` with a vectorised version.
    """

    name: str = "base"
    unit: str = "us"
    devices: tuple[str, ...] = ()

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None:
        raise NotImplementedError

    def op_costs(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> np.ndarray:
        costs = [self.op_cost(G, n, device, inference_type) for n in nodes]
        return priced([0.0 if c is None else c for c in costs], [c is None for c in costs])

    def view_cost(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> float | None:
        """Sum of the op costs, ``None`` when the model cannot price one of the ops."""
        return _sum(self.op_costs(G, list(nodes), device, inference_type))

    def check_device(self, device: str) -> None:
        """Raise :class:`CostModelError` for a device this model does not know."""
        if self.devices and device not in self.devices:
            raise CostModelError(
                f"cost model '{self.name}': unknown device '{device}' "
                f"(known: {', '.join(self.devices)})"
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, unit={self.unit!r})"


def check_inference_type(inference_type: str, *, model: str) -> None:
    """Raise :class:`CostModelError` unless ``inference_type`` is one of :data:`INFERENCE_TYPES`."""
    if inference_type not in INFERENCE_TYPES:
        raise CostModelError(
            f"cost model '{model}': unknown inference type '{inference_type}' "
            f"(known: {', '.join(INFERENCE_TYPES)})"
        )


def needs_conversion(src_type: str, dst_type: str, *, model: str) -> bool:
    """Whether data must be (de/re)quantized between two inference types (FLOAT <-> HYBRID and
    same-type edges need nothing, as in TAC's ``GetQuantDequantCost``).

    >>> needs_conversion("HYBRID", "FLOAT", model="m")
    False
    >>> needs_conversion("FLOAT", "QUANTIZED_INT8", model="m")
    True
    """
    check_inference_type(src_type, model=model)
    check_inference_type(dst_type, model=model)
    return ACTIVATION_FORMAT[src_type] != ACTIVATION_FORMAT[dst_type]


def check_cost(value: float | None, *, model: str, op: str, device: str) -> float | None:
    """Return ``value`` as a float (``None``, "cannot price", stays ``None``); raise on NaN,
    negative or infinite.

    Parameters
    ----------
    value : the cost a model returned.
    model, op, device : named in the error message.

    Raises
    ------
    CostModelError
        When ``value`` is NaN, negative or infinite.

    Examples
    --------
    >>> check_cost(3, model="m", op="add_0", device="CPU")
    3.0
    >>> check_cost(float("nan"), model="m", op="add_0", device="CPU")
    Traceback (most recent call last):
    ...
    tacopt.cost_models.protocol.CostModelError: cost model 'm' returned nan for op 'add_0' ...
    """
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise CostModelError(
            f"cost model '{model}' returned {value!r} (not a number) for op '{op}' on {device}"
        ) from None
    if math.isnan(v) or math.isinf(v) or v < 0:
        raise CostModelError(_bad_value(model, v, op, device))
    return v


def _bad_value(model: str, value: float, op: str, device: str) -> str:
    msg = f"cost model '{model}' returned {value} for op '{op}' on {device}"
    if math.isnan(value):
        msg += " (a model says it cannot price an op with None or a masked entry, never NaN)"
    return msg


def priced(
    values: Sequence[float] | np.ndarray, unsupported: Sequence[bool] | np.ndarray
) -> np.ma.MaskedArray:
    """Op costs as returned by ``op_costs``: ``values``, with the ``unsupported`` ones masked.

    >>> priced([1.0, 2.0], [False, True]).tolist()
    [1.0, None]
    """
    return np.ma.masked_array(
        np.asarray(values, dtype=np.float64), mask=np.asarray(unsupported, dtype=bool)
    )


def check_costs(
    values: np.ndarray, *, model: str, nodes: Sequence[str], device: str
) -> np.ma.MaskedArray:
    """Check a vector from ``op_costs`` and return it as a masked array (masked = cannot price).

    Raises
    ------
    CostModelError
        For a vector of the wrong length, or a NaN, negative or infinite cost among the priced
        ops (naming the model, the op and the device).
    """
    arr = np.ma.asarray(values, dtype=np.float64)
    if arr.shape != (len(nodes),):
        raise CostModelError(
            f"cost model '{model}' returned {arr.shape[0] if arr.ndim else 0} costs "
            f"for {len(nodes)} ops on {device}"
        )
    mask = np.ma.getmaskarray(arr)
    data = np.ma.getdata(arr)
    bad = np.flatnonzero(~mask & ~(np.isfinite(data) & (data >= 0)))
    if bad.size:
        i = int(bad[0])
        raise CostModelError(_bad_value(model, float(data[i]), nodes[i], device))
    return np.ma.masked_array(data, mask=mask)


def _sum(costs: np.ndarray) -> float | None:
    """The sum of op costs; ``None`` when one is masked (cannot price)."""
    if np.ma.getmaskarray(costs).any():
        return None
    return float(np.ma.getdata(costs).sum())


def for_model(model: CostModel, G: nx.MultiDiGraph) -> CostModel:
    """``model`` bound to model graph ``G`` (its ``for_model``), to price the parts cut from
    ``G``; the model itself when its class has no ``for_model`` (one a wrapper forwards to an
    inner model by ``__getattr__`` does not count: binding the inner model would drop the
    wrapper).

    >>> from tacopt.cost_models.base import get_cost_model
    >>> from tacopt.fusion.ir import make_graph
    >>> tac = get_cost_model("tac", checked=False)
    >>> for_model(tac, make_graph("g", [], [], [], [])) is tac
    True
    """
    bind = getattr(type(model), "for_model", None)
    return model if bind is None else bind(model, G)


def view_cost(
    model: CostModel, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
) -> float | None:
    """Cost of running ``nodes`` together on ``device``: the model's ``view_cost`` if it has one,
    else the sum of its op costs; ``None`` when the model cannot price one of the ops.

    Every value is checked: a NaN, negative or infinite cost raises :class:`CostModelError`.

    >>> from tacopt.cost_models.base import get_cost_model
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor("x", (10,), "float32"), Tensor("y", (10,), "float32")],
    ...                [Op("add_0", "ADD", ("x", "x"), ("y",))], ["x"], ["y"])
    >>> view_cost(get_cost_model("tac"), G, ["add_0"], "CPU", "FLOAT")
    10.0
    """
    nodes = list(nodes)
    fn = getattr(model, "view_cost", None)
    if fn is not None:
        return check_cost(
            fn(G, nodes, device, inference_type),
            model=model.name,
            op=",".join(nodes[:3]),
            device=device,
        )
    costs = model.op_costs(G, nodes, device, inference_type)
    return _sum(check_costs(costs, model=model.name, nodes=nodes, device=device))

"""The cost-model extension point: the :class:`CostModel` protocol, its registry and checkers.

A cost model answers four questions for the partitioner:

- ``op_cost(G, node, device, inference_type)``: what does op ``node`` of graph ``G`` cost when it
  runs on ``device`` in ``inference_type``? ``None`` means the device cannot run it;
- ``op_costs(G, nodes, device, inference_type)``: the same for many ops at once, as a float64
  array with ``NaN`` for unsupported ops;
- ``link_cost(src_device, dst_device)``: what moving bytes between two devices costs, as a
  :class:`LinkCost` (``per_byte`` x bytes + ``fixed`` once per crossing);
- ``conversion_cost_per_element(src_type, dst_type)``: what quantizing / dequantizing /
  requantizing one tensor element costs between two inference types.

Each model declares its ``unit``: ``"tac"`` (TAC's unit-less cost scale) or ``"us"``
(microseconds). Costs of different units must never be mixed.

Devices are upper-case names (``"CPU"``, ``"GPU"``, ``"NNAPI"``, ...); inference types are the four
of TAC: ``"FLOAT"``, ``"QUANTIZED_INT8"``, ``"QUANTIZED_UINT8"``, ``"HYBRID"``.

Models are chosen by a *spec* (:func:`get_cost_model`): a registered name (``"tac"``,
``"roofline"``, ...), a path to a JSON model file (``path/to/model.json``, e.g. written by
``tacopt fit``) or ``"pkg.mod:Factory"`` for a user model in the user's own module. Specs joined
by ``+`` form a fallback chain (:class:`FallbackCostModel`): ``model.json+roofline`` prices the
CPU with a model learned from CPU measurements and the accelerators with roofline profiles.

Examples
--------
>>> model = get_cost_model("tac")
>>> model.name, model.unit
('tac', 'tac')
>>> model.link_cost("CPU", "GPU")
LinkCost(per_byte=5.0, fixed=10.0)
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import networkx as nx
import numpy as np

from tacopt.fusion.errors import TacoptError
from tacopt.fusion.registry import Registry

#: The inference types of TAC (``InferenceType`` in tac/common/targets.h), ``UNKNOWN`` excluded.
INFERENCE_TYPES: tuple[str, ...] = ("FLOAT", "QUANTIZED_INT8", "QUANTIZED_UINT8", "HYBRID")
QUANTIZED_TYPES = frozenset({"QUANTIZED_INT8", "QUANTIZED_UINT8"})
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
        out = np.empty(len(nodes), dtype=np.float64)
        for i, n in enumerate(nodes):
            c = self.op_cost(G, n, device, inference_type)
            out[i] = np.nan if c is None else c
        return out

    def view_cost(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> float | None:
        """Sum of the op costs, ``None`` when any op is unsupported."""
        costs = self.op_costs(G, list(nodes), device, inference_type)
        return None if np.isnan(costs).any() else float(costs.sum())

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
    floats = {"FLOAT", "HYBRID"}
    return not (src_type == dst_type or (src_type in floats and dst_type in floats))


def check_cost(value: float | None, *, model: str, op: str, device: str) -> float | None:
    """Return ``value`` as a float (``None`` stays ``None``); raise on NaN, negative or infinite.

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
    tacopt.cost_models.base.CostModelError: cost model 'm' returned nan for op 'add_0' on CPU
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
        raise CostModelError(f"cost model '{model}' returned {v} for op '{op}' on {device}")
    return v


def check_costs(values: np.ndarray, *, model: str, nodes: Sequence[str], device: str) -> np.ndarray:
    """Check a vector from ``op_costs``: NaN (unsupported) is allowed, negative / inf are not."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (len(nodes),):
        raise CostModelError(
            f"cost model '{model}' returned {arr.shape[0] if arr.ndim else 0} costs "
            f"for {len(nodes)} ops on {device}"
        )
    bad = np.flatnonzero(np.isinf(arr) | (arr < 0))
    if bad.size:
        i = int(bad[0])
        raise CostModelError(
            f"cost model '{model}' returned {arr[i]} for op '{nodes[i]}' on {device}"
        )
    return arr


def view_cost(
    model: CostModel, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
) -> float | None:
    """Cost of running ``nodes`` together on ``device``: the model's ``view_cost`` if it has one,
    else the sum of its op costs; ``None`` when any op is unsupported.

    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor("x", (10,), "float32"), Tensor("y", (10,), "float32")],
    ...                [Op("add_0", "ADD", ("x", "x"), ("y",))], ["x"], ["y"])
    >>> view_cost(get_cost_model("tac"), G, ["add_0"], "CPU", "FLOAT")
    10.0
    """
    fn = getattr(model, "view_cost", None)
    if fn is not None:
        return check_cost(
            fn(G, nodes, device, inference_type),
            model=model.name,
            op=",".join(nodes[:3]),
            device=device,
        )
    costs = check_costs(
        model.op_costs(G, list(nodes), device, inference_type),
        model=model.name,
        nodes=list(nodes),
        device=device,
    )
    return None if np.isnan(costs).any() else float(costs.sum())


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
    >>> chain = get_cost_model("roofline+roofline", checked=False)
    >>> chain.name, chain.unit, chain.devices[:2]
    ('roofline+roofline', 'us', ('CPU', 'DGPU'))
    >>> get_cost_model("tac+roofline")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tacopt.cost_models.base.CostModelError: cannot chain cost models of different units: ...
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


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------

_REGISTRY: Registry[Callable[[], CostModel]] = Registry("cost model", CostModelError)
#: Modules whose import registers the built-in models (imported on first lookup).
_BUILTIN_MODULES = (
    "tacopt.cost_models.tac",
    "tacopt.cost_models.roofline",
    "tacopt.cost_models.learned",
)


def register_cost_model(
    name: str, factory: Callable[[], CostModel], *, replace: bool = False
) -> None:
    """Register ``factory`` (a no-argument callable returning a model) under ``name``.

    ``replace=True`` replaces a model of the same name (re-running a notebook cell).

    Raises
    ------
    CostModelError
        When ``name`` is already registered and ``replace`` is False.

    Examples
    --------
    >>> register_cost_model("tac", object)
    Traceback (most recent call last):
    ...
    tacopt.cost_models.base.CostModelError: cost model 'tac' is already registered
    """
    _load_builtins()
    _REGISTRY.add(name, factory, replace=replace)


def registered_cost_models() -> list[str]:
    """Sorted names of the registered models."""
    _load_builtins()
    return list(_REGISTRY.names())


def get_cost_model(spec: str | CostModel, *, checked: bool = True) -> CostModel:
    """Build the cost model named by ``spec``.

    Parameters
    ----------
    spec : a registered name (``"tac"``, ``"roofline"``, ...), a path to
        a JSON model file (its ``"format"`` field says which loader reads it), ``"pkg.mod:Name"``
        (``Name`` is a model instance, or a class / factory called without arguments), or an
        already-built model (returned as is, wrapped when ``checked``).
    checked : wrap the model in :class:`CheckedCostModel` so bad values raise.

    Raises
    ------
    CostModelError
        Unknown name (the message lists the known ones), unreadable file, import failure, or an
        object that is not a cost model.

    Examples
    --------
    >>> get_cost_model("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tacopt.cost_models.base.CostModelError: unknown cost model 'nope' (known: ...)
    """
    if isinstance(spec, str):
        model = _build(spec)
    else:
        model = spec
    if checked and not isinstance(model, CheckedCostModel):
        return CheckedCostModel(model)
    return model


def _build(spec: str) -> CostModel:
    _load_builtins()
    factory = _REGISTRY.find(spec)
    if factory is not None:
        return factory()
    if "+" in spec and not Path(spec).is_file():
        return FallbackCostModel([_build(part) for part in spec.split("+")])
    if spec.endswith(".json") or Path(spec).is_file():
        return load_model_file(spec)
    if ":" in spec:
        return _import_factory(spec)
    raise CostModelError(
        f"unknown cost model '{spec}' (known: {', '.join(_REGISTRY.names())}; "
        "or give path/to/model.json or pkg.mod:Factory)"
    )


_FILE_LOADERS: Registry[Callable[[dict[str, Any], Path], CostModel]] = Registry(
    "model file format", CostModelError
)


def register_model_format(fmt: str, loader: Callable[[dict[str, Any], Path], CostModel]) -> None:
    """Register a loader for JSON model files whose ``"format"`` field is ``fmt``."""
    _FILE_LOADERS.add(fmt, loader)


def load_model_file(path: str | Path) -> CostModel:
    """Load a JSON cost-model file; its ``"format"`` field picks the loader."""
    _load_builtins()
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise CostModelError(f"cost model file '{p}' does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CostModelError(f"cost model file '{p}' is not valid JSON: {exc}") from None
    fmt = doc.get("format") if isinstance(doc, dict) else None
    loader = _FILE_LOADERS.find(fmt) if isinstance(fmt, str) else None
    if loader is None:
        raise CostModelError(
            f"cost model file '{p}': unknown format {fmt!r} "
            f"(known: {', '.join(_FILE_LOADERS.names())})"
        )
    return loader(doc, p)


def _import_factory(spec: str) -> CostModel:
    mod_name, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise CostModelError(f"cost model '{spec}': cannot import '{mod_name}': {exc}") from None
    try:
        obj = getattr(mod, attr)
    except AttributeError:
        raise CostModelError(f"cost model '{spec}': '{mod_name}' has no '{attr}'") from None
    if _looks_like_model(obj) and not isinstance(obj, type):
        model = obj
    elif callable(obj):
        try:
            model = obj()
        except TypeError as exc:
            raise CostModelError(f"cost model '{spec}': cannot call '{attr}()': {exc}") from None
    else:
        model = obj
    if not _looks_like_model(model):
        raise CostModelError(f"cost model '{spec}': {type(model).__name__} is not a CostModel")
    return model


def _looks_like_model(obj: Any) -> bool:
    return all(
        hasattr(obj, a)
        for a in ("name", "unit", "op_cost", "op_costs", "link_cost", "conversion_cost_per_element")
    )


_LOADED = False


def _load_builtins() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for mod in _BUILTIN_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:  # a real import error inside the module, not "not written yet"
                raise

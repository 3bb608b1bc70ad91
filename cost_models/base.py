"""Choosing a cost model: the registry of named models, model files and ``pkg.mod:Name`` specs.

The protocol a model follows, and the checks on its answers, are in
:mod:`tacopt.cost_models.protocol` (re-exported here, so ``from tacopt.cost_models.base import
CostModel`` keeps working); chains and the checking wrapper in :mod:`tacopt.cost_models.chain`.

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

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tacopt.cost_models.chain import CheckedCostModel, FallbackCostModel
from tacopt.cost_models.model_file import read_model_doc
from tacopt.cost_models.protocol import (
    INFERENCE_TYPES,
    QUANTIZED_TYPES,
    UNITS,
    CostModel,
    CostModelBase,
    CostModelError,
    LinkCost,
    check_cost,
    check_costs,
    check_inference_type,
    for_model,
    needs_conversion,
    priced,
    view_cost,
)
from tacopt.registry import Registry, resolve_spec

__all__ = [
    "INFERENCE_TYPES",
    "QUANTIZED_TYPES",
    "UNITS",
    "CheckedCostModel",
    "CostModel",
    "CostModelBase",
    "CostModelError",
    "FallbackCostModel",
    "LinkCost",
    "check_cost",
    "check_costs",
    "check_inference_type",
    "for_model",
    "get_cost_model",
    "load_model_file",
    "needs_conversion",
    "priced",
    "register_cost_model",
    "register_model_format",
    "registered_cost_models",
    "view_cost",
]


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------

_REGISTRY: Registry[Callable[[], CostModel]] = Registry("cost model", CostModelError)
#: The built-in models' factories and model-file loaders, imported on first use (listing the
#: names imports nothing: ``tac`` alone does not load the learned model's modules).
BUILTIN_MODELS = {
    "learned": "tacopt.cost_models.learned.fitting.model:default_learned_model",
    "roofline": "tacopt.cost_models.roofline:RooflineCostModel.default",
    "tac": "tacopt.cost_models.tac:TacCostModel",
}
BUILTIN_FORMATS = {
    "tacopt-device-profile": "tacopt.cost_models.roofline:from_profile_file",
    "tacopt-learned": "tacopt.cost_models.learned.fitting.model:read_learned_file",
}
for _name, _spec in BUILTIN_MODELS.items():
    _REGISTRY.add_lazy(_name, _spec)


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
    tacopt.cost_models.protocol.CostModelError: cost model 'tac' is already registered
    """
    _REGISTRY.add(name, factory, replace=replace)


def registered_cost_models() -> list[str]:
    """Sorted names of the registered models."""
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
    tacopt.cost_models.protocol.CostModelError: unknown cost model 'nope' (known: ...)
    """
    if isinstance(spec, str):
        model = _build(spec)
    else:
        model = spec
    if checked and not isinstance(model, CheckedCostModel):
        return CheckedCostModel(model)
    return model


def _build(spec: str) -> CostModel:
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
for _name, _spec in BUILTIN_FORMATS.items():
    _FILE_LOADERS.add_lazy(_name, _spec)


def register_model_format(fmt: str, loader: Callable[[dict[str, Any], Path], CostModel]) -> None:
    """Register a loader for JSON model files whose ``"format"`` field is ``fmt``."""
    _FILE_LOADERS.add(fmt, loader)


def load_model_file(path: str | Path) -> CostModel:
    """Load a JSON cost-model file (gzipped or not); its ``"format"`` field picks the loader."""
    p = Path(path)
    doc = read_model_doc(p)
    fmt = doc.get("format") if isinstance(doc, dict) else None
    loader = _FILE_LOADERS.find(fmt) if isinstance(fmt, str) else None
    if loader is None:
        raise CostModelError(
            f"cost model file '{p}': unknown format {fmt!r} "
            f"(known: {', '.join(_FILE_LOADERS.names())})"
        )
    return loader(doc, p)


def _import_factory(spec: str) -> CostModel:
    obj = resolve_spec(spec, f"cost model '{spec}'", CostModelError)
    attr = spec.partition(":")[2]
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


#: The model that prices the devices a cost model does not know, by the model's unit: a model
#: in microseconds (``learned`` knows only the CPU it was measured on) is completed by
#: ``roofline``'s profiles. TAC units have no default: ``tac`` knows CPU, GPU and NNAPI.
DEFAULT_FOR_UNIT = {"us": "roofline"}


def with_unit_default(model: CostModel) -> CostModel | None:
    """``model`` chained with its unit's default model (:data:`DEFAULT_FOR_UNIT`), which then
    prices the devices ``model`` does not know; None when its unit has no default.

    >>> with_unit_default(get_cost_model("learned")).name
    'learned+roofline'
    >>> with_unit_default(get_cost_model("tac")) is None
    True
    """
    spec = DEFAULT_FOR_UNIT.get(model.unit)
    return None if spec is None else FallbackCostModel([model, get_cost_model(spec)])

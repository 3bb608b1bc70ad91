"""Tables that translate between the TFLite flatbuffer schema and tacopt's plain-dict options.

The reader and the writer share these tables so that decoding options and encoding them again
are exact inverses: option keys are the schema's field names in snake_case, enum values are their
names (``"SAME"``, ``"RELU6"``, ``"INT8"``), subgraph indices become subgraph names under keys
without the ``_index`` suffix (``cond_subgraph_index`` -> ``cond_subgraph``), strings are ``str``,
byte vectors ``bytes`` and other vectors tuples.

Examples
--------
>>> BUILTIN_CODES["CONV_2D"], BUILTIN_NAMES[3]
(3, 'CONV_2D')
>>> snake_case("dilationWFactor")
'dilation_w_factor'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import ai_edge_litert.schema_py_generated as fb
import numpy as np

from tacopt.errors import GraphError


def _enum_names(enum_cls: type) -> dict[int, str]:
    """value -> name of a generated enum class (first name wins for aliases)."""
    names: dict[int, str] = {}
    for name, value in vars(enum_cls).items():
        if not name.startswith("_") and isinstance(value, int):
            names.setdefault(value, name)
    return names


#: Builtin operator code -> name (``3 -> "CONV_2D"``) and back.
BUILTIN_NAMES: dict[int, str] = _enum_names(fb.BuiltinOperator)
BUILTIN_CODES: dict[str, int] = {name: code for code, name in BUILTIN_NAMES.items()}

#: The last builtin code that fits the deprecated int8 field; larger codes store 127 there.
PLACEHOLDER_FOR_GREATER_OP_CODES = 127

#: Union type value -> generated object-API class (``XxxOptionsT``) for both options unions.
#: ``Any``: the generated classes are untyped (``InitFromBuf`` is not visible to mypy).
OPTIONS_CLASSES: dict[int, Any] = {
    value: getattr(fb, name + "T")
    for value, name in _enum_names(fb.BuiltinOptions).items()
    if name != "NONE"
}
OPTIONS2_CLASSES: dict[int, Any] = {
    value: getattr(fb, name + "T")
    for value, name in _enum_names(fb.BuiltinOptions2).items()
    if name != "NONE"
}
#: Options class -> its union type value, for the writer.
OPTIONS_TYPE: dict[type, int] = {cls: v for v, cls in OPTIONS_CLASSES.items()}
OPTIONS2_TYPE: dict[type, int] = {cls: v for v, cls in OPTIONS2_CLASSES.items()}

#: Option field (camelCase, as in the object API) -> enum class, for scalar int fields.
ENUM_FIELDS: dict[str, dict[int, str]] = {
    "padding": _enum_names(fb.Padding),
    "fusedActivationFunction": _enum_names(fb.ActivationFunctionType),
    "type": _enum_names(fb.LSHProjectionType),
    "weightsFormat": _enum_names(fb.FullyConnectedOptionsWeightsFormat),
    "kernelType": _enum_names(fb.LSTMKernelType),
    "combiner": _enum_names(fb.CombinerType),
    "mode": _enum_names(fb.MirrorPadMode),
    "comparisonDirection": _enum_names(fb.StablehloComparisonDirection),
    "compareType": _enum_names(fb.StablehloComparisonType),
    "algorithm": _enum_names(fb.RngAlgorithm),
    "reduceFunction": _enum_names(fb.ReduceWindowFunction),
    "compositeAttributesFormat": _enum_names(fb.CustomOptionsFormat),
    "precisionConfig": _enum_names(fb.StablehloPrecisionConfig),
    "format": _enum_names(fb.DimensionType),
    "arraySegmentsType": _enum_names(fb.SparseIndexVector),
    "arrayIndicesType": _enum_names(fb.SparseIndexVector),
    **{
        key: _enum_names(fb.TensorType)
        for key in (
            "outType",
            "idxOutType",
            "inDataType",
            "outDataType",
            "outputType",
            "keyDtype",
            "valueDtype",
            "quantizedBiasType",
        )
    },
}
ENUM_VALUES: dict[str, dict[str, int]] = {
    key: {name: value for value, name in names.items()} for key, names in ENUM_FIELDS.items()
}

#: Fields holding raw bytes (vectors of ubyte), kept as ``bytes`` rather than tuples of ints.
BYTES_FIELDS = frozenset({"customAttributes", "compositeAttributes"})
#: Fields holding strings (``str`` in the IR; the object API gives ``bytes``).
STRING_FIELDS = frozenset(
    {"name", "container", "sharedName", "callTargetName", "backendConfig", "calledComputations"}
)

_CAMEL = re.compile(r"([A-Z])")


def snake_case(name: str) -> str:
    """``"strideW"`` -> ``"stride_w"`` (object-API attribute to option key)."""
    return _CAMEL.sub(r"_\1", name).lower()


def subgraph_key(camel: str) -> str | None:
    """Option key under which a subgraph-index field is stored by name, else None.

    ``condSubgraphIndex`` -> ``cond_subgraph``, ``branchSubgraphIndices`` -> ``branch_subgraphs``,
    CALL's ``subgraph`` -> ``subgraph``.
    """
    if camel.endswith("SubgraphIndex"):
        return snake_case(camel[: -len("Index")])
    if camel.endswith("SubgraphIndices"):
        return snake_case(camel[: -len("Indices")]) + "s"
    if camel == "subgraph":
        return "subgraph"
    return None


def options_fields(cls: type) -> dict[str, str]:
    """Option key -> object-API attribute of an options class (computed once per class)."""
    cached = _FIELDS_CACHE.get(cls)
    if cached is None:
        cached = {}
        for camel in vars(cls()):
            cached[subgraph_key(camel) or snake_case(camel)] = camel
        _FIELDS_CACHE[cls] = cached
    return cached


_FIELDS_CACHE: dict[type, dict[str, str]] = {}


def is_scalar_table(cls: type) -> bool:
    """True if every field of the options class is a scalar (no vectors, strings or tables)."""
    scalar = _SCALAR_CACHE.get(cls)
    if scalar is None:
        scalar = all(isinstance(v, (int, float)) for v in vars(cls()).values())
        _SCALAR_CACHE[cls] = scalar
    return scalar


_SCALAR_CACHE: dict[type, bool] = {}


def plain_value(camel: str, value: Any, subgraph_names: list[str]) -> Any:
    """Decode one object-API field value to its plain IR form (see the module docstring).

    Raises ``IndexError`` for an out-of-range subgraph index and ``KeyError`` for an unknown enum
    value; the reader turns both into :class:`tacopt.errors.ModelFormatError`.
    """
    if value is None:
        return None
    if subgraph_key(camel) is not None:
        if isinstance(value, (int, float)):
            return _subgraph_name(int(value), subgraph_names)
        return tuple(_subgraph_name(int(v), subgraph_names) for v in value)
    if camel in BYTES_FIELDS:
        return np.asarray(value, dtype=np.uint8).tobytes()
    if camel in STRING_FIELDS:
        if isinstance(value, (bytes, str)):
            return _text(value)
        return tuple(_text(v) for v in value)
    names = ENUM_FIELDS.get(camel)
    if isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return names[value] if names is not None else value
    if isinstance(value, np.ndarray):
        items = value.tolist()
        return tuple(names[v] for v in items) if names is not None else tuple(items)
    if isinstance(value, list):
        return tuple(plain_value(camel, v, subgraph_names) for v in value)
    if hasattr(value, "__dict__"):  # a nested table of the object API
        return plain_object(value, subgraph_names)
    return value


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def plain_object(obj: Any, subgraph_names: list[str]) -> dict[str, Any]:
    """An object-API table (options, sparsity) as a plain dict keyed by snake_case field names."""
    out: dict[str, Any] = {}
    for camel, value in vars(obj).items():
        out[subgraph_key(camel) or snake_case(camel)] = plain_value(camel, value, subgraph_names)
    return out


def _subgraph_name(index: int, subgraph_names: list[str]) -> str:
    if not 0 <= index < len(subgraph_names):
        raise IndexError(f"subgraph index {index} out of range (model has {len(subgraph_names)})")
    return subgraph_names[index]


# -- plain dicts back to object-API tables (for the writer) -------------------------------------

#: Nested table fields: attribute -> object-API class.
_NESTED: dict[str, type] = {"dimMetadata": fb.DimensionMetadataT}
#: Union fields: attribute -> (attribute holding the union type, type value -> class).
_UNIONS: dict[str, tuple[str, dict[int, type]]] = {
    field: (
        field + "Type",
        {
            value: getattr(fb, name + "T")
            for value, name in _enum_names(fb.SparseIndexVector).items()
            if name != "NONE"
        },
    )
    for field in ("arraySegments", "arrayIndices")
}


def object_from_plain(
    cls: type, plain: Mapping[str, Any], subgraph_index: Mapping[str, int], where: str
) -> Any:
    """The object-API table of class ``cls`` holding ``plain`` (inverse of :func:`plain_object`).

    Fields missing from ``plain`` keep the schema's defaults. Raises :class:`GraphError` naming
    ``where`` for an unknown key, enum name or subgraph.
    """
    obj = cls()
    fields = options_fields(cls)
    for key, value in plain.items():
        camel = fields.get(key)
        if camel is None:
            known = ", ".join(sorted(fields))
            raise GraphError(f"{where}: unknown option '{key}' (known: {known})")
        setattr(obj, camel, _object_value(obj, camel, value, plain, subgraph_index, where))
    return obj


def _object_value(
    obj: Any,
    camel: str,
    value: Any,
    plain: Mapping[str, Any],
    subgraph_index: Mapping[str, int],
    where: str,
) -> Any:
    if value is None:
        return None
    if subgraph_key(camel) is not None:
        names = [value] if isinstance(value, str) else list(value)
        for name in names:
            if name not in subgraph_index:
                raise GraphError(f"{where}: option '{camel}' names missing subgraph '{name}'")
        indices = [subgraph_index[n] for n in names]
        return indices[0] if isinstance(value, str) else indices
    if camel in BYTES_FIELDS:
        return np.frombuffer(bytes(value), dtype=np.uint8)
    if camel in STRING_FIELDS:
        return value if isinstance(value, str) else list(value)
    if camel in _NESTED:
        return [object_from_plain(_NESTED[camel], v, subgraph_index, where) for v in value]
    if camel in _UNIONS:
        type_key, classes = _UNIONS[camel]
        type_value = _enum_value(type_key, plain.get(snake_case(type_key), 0), where)
        return object_from_plain(classes[type_value], value, subgraph_index, where)
    if camel in ENUM_FIELDS:
        if isinstance(value, (tuple, list)):
            return [_enum_value(camel, v, where) for v in value]
        return _enum_value(camel, value, where)
    if isinstance(value, tuple):
        return list(value)
    return value


def _enum_value(camel: str, value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    values = ENUM_VALUES[camel]
    if value not in values:
        known = ", ".join(sorted(values))
        raise GraphError(f"{where}: option '{snake_case(camel)}' = {value!r} (known: {known})")
    return values[value]


# -- which options table each builtin op uses (for the writer) ----------------------------------

#: Ops whose options class is not simply their name in CamelCase + "Options".
_OPTIONS_EXCEPTIONS: dict[str, str] = {
    **dict.fromkeys(("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"), "Pool2DOptions"),
    **dict.fromkeys(
        ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL"),
        "ReducerOptions",
    ),
    **dict.fromkeys(("MAXIMUM", "MINIMUM"), "MaximumMinimumOptions"),
    **dict.fromkeys(("RANDOM_STANDARD_NORMAL", "RANDOM_UNIFORM", "MULTINOMIAL"), "RandomOptions"),
    "L2_NORMALIZATION": "L2NormOptions",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "CONV_3D_TRANSPOSE": "Conv3DOptions",
    "LESS_EQUAL": "LessEqualOptions",
    "SCATTER_ND": "ScatterNdOptions",
}


def _options_for_kinds() -> dict[str, tuple[int, type]]:
    by_key: dict[str, tuple[int, type]] = {}
    for union, classes in ((1, OPTIONS_CLASSES), (2, OPTIONS2_CLASSES)):
        for cls in classes.values():
            by_key.setdefault(cls.__name__[: -len("OptionsT")].lower(), (union, cls))
    by_name = {cls.__name__[:-1]: (u, cls) for u, cls in by_key.values()}
    out: dict[str, tuple[int, type]] = {}
    for kind in BUILTIN_CODES:
        if kind in _OPTIONS_EXCEPTIONS:
            out[kind] = by_name[_OPTIONS_EXCEPTIONS[kind]]
        elif kind.replace("_", "").lower() in by_key:
            out[kind] = by_key[kind.replace("_", "").lower()]
    return out


#: Builtin op kind -> (options union 1 or 2, object-API options class).
OPTIONS_FOR_KIND: dict[str, tuple[int, type]] = _options_for_kinds()

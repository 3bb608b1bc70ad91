"""The JSON form of a pick problem: decoding a file's bytes, reading the structure and types of
each object (their meaning is checked by :mod:`tacopt.partitioner.problem.checks`), and writing
a problem back (``docs/pick-problem.md`` describes the format)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from tacopt.io import decode_json
from tacopt.partitioner.errors import ProblemError
from tacopt.partitioner.problem.records import (
    BAD_TEXT,
    Choice,
    Link,
    Named,
    Pairwise,
    ProblemData,
    TensorEdge,
    Unit,
    show,
)

# The fields of each object of the JSON form; anything else is a misspelling.
_FIELDS = {
    "problem": ("cost_unit", "transfer", "quant", "host", "boundaries", "links", "capacity",
                "units", "tensors", "pairwise"),
    "transfer": ("per_byte", "fixed"),
    "quant": ("per_element",),
    "link": ("from", "to", "per_byte", "fixed"),
    "unit": ("name", "initial", "interval", "choices"),
    "choice": ("device", "type", "cost", "memory", "variant"),
    "pairwise": ("a", "b", "cost"),
    "tensor": ("name", "producer", "consumers", "shape", "dtype", "output"),
}  # fmt: skip
_FIELD_SETS = {kind: frozenset(names) for kind, names in _FIELDS.items()}
_CHOICE_FIELDS = _FIELD_SETS["choice"]

# Integer literals longer than this are read as floats (so 10**400 is inf and refused by
# the range checks, naming its field), never as Python ints of unbounded size.
_MAX_INT_CHARS = 20
#: The most bytes a gzipped problem (ours or a contest file) may inflate to: 1 GiB, ten times
#: the largest contest instance (A: 93 MB), so that a small hostile file cannot drive memory
#: without bound.
MAX_INFLATED_BYTES = 1 << 30


def decode_problem(raw: bytes, source: str) -> Any:
    """The JSON value of a pick problem file's bytes (:func:`~tacopt.io.decode_json`,
    as :class:`ProblemError`): long integer literals are read as floats, and a ``.tflite`` model
    given by mistake is named as one.

    >>> decode_problem(b'{"capacity": 1' + b"0" * 30 + b"}", "p.json")
    {'capacity': 1e+30}
    """
    try:
        return decode_json(
            raw, source, MAX_INFLATED_BYTES, error=ProblemError, parse_int=_parse_int
        )
    except ProblemError:
        if raw[4:8] != b"TFL3":  # the flatbuffer file identifier of a .tflite model
            raise
    raise ProblemError(f"{source}: a TFLite model, not a pick problem "
                       "('tacopt partition MODEL --problem OUT.json' writes one)")  # fmt: skip


def _parse_int(literal: str) -> int | float:
    """An integer literal; a very long one as a float (inf beyond 1e308), never a huge int."""
    return int(literal) if len(literal) <= _MAX_INT_CHARS else float(literal)


# ---------------------------------------------------------------------------------------------
# JSON form: structure and types here, meaning in validate_problem


def problem_fields(data: Any, source: str) -> dict[str, Any]:
    """The fields of a :class:`~tacopt.partitioner.problem.PickProblem` read from its JSON form
    (structure and types only; raises :class:`ProblemError` naming the field)."""

    def fail(msg: str) -> NoReturn:
        raise ProblemError(f"{source}: {msg}")

    _object(data, "problem", "top level", fail)
    for field_name in ("transfer", "units", "tensors"):
        if field_name not in data:
            fail(f"missing field {field_name!r}")
    transfer = _link_from(data["transfer"], "transfer", "transfer", fail)
    quant = data.get("quant", {"per_element": 0.0})
    _object(quant, "quant", "quant", fail)
    if "per_element" not in quant:
        fail("quant: missing field 'per_element'")
    links: dict[tuple[str, str], Link] = {}
    for i, item in enumerate(_list_of(data.get("links", []), "links", fail)):
        _object(item, "link", f"links[{i}]", fail)
        src, dst = item.get("from"), item.get("to")
        if not isinstance(src, str) or not isinstance(dst, str) or BAD_TEXT.search(src + dst):
            fail(f"links[{i}]: 'from' and 'to' must be device names, got {show([src, dst])}")
        if (src, dst) in links:
            fail(f"link {src}->{dst} listed twice")
        links[(src, dst)] = _link_from(item, "link", f"link {src}->{dst}", fail)
    units = tuple(
        _unit_from(item, i, fail) for i, item in enumerate(_list_of(data["units"], "units", fail))
    )
    tensors = tuple(
        _tensor_from(item, i, fail)
        for i, item in enumerate(_list_of(data["tensors"], "tensors", fail))
    )
    capacity = data.get("capacity", {})
    if not isinstance(capacity, dict):
        fail(f"'capacity' must be an object of device: bytes, got {show(capacity)}")
    pairwise = tuple(
        _pairwise_from(item, i, fail)
        for i, item in enumerate(_list_of(data.get("pairwise", []), "pairwise", fail))
    )
    return {
        "units": units,
        "tensors": tensors,
        "transfer": transfer,
        "quant_per_element": quant["per_element"],
        "host": data.get("host", "CPU"),
        "boundaries": data.get("boundaries", True),
        "links": links,
        "cost_unit": data.get("cost_unit", "cost"),
        "capacity": dict(capacity),
        "pairwise": pairwise,
    }


def _object(value: Any, kind: str, where: str | Named, fail: Callable[[str], NoReturn]) -> None:
    """Check that ``value`` is a JSON object with no field outside those of ``kind``."""
    if not isinstance(value, dict):
        fail(f"{where} must be a JSON object, got {show(value)}")
    if not _FIELD_SETS[kind].issuperset(value):
        unknown = sorted(map(str, value.keys() - _FIELD_SETS[kind]))[0]
        fail(f"{where}: unknown field {show(unknown)}; known: {', '.join(_FIELDS[kind])}")


def _list_of(value: Any, what: str, fail: Callable[[str], NoReturn]) -> list[Any]:
    if not isinstance(value, list):
        fail(f"{what!r} must be a list, got {show(value)}")
    return value


def _link_from(item: Any, kind: str, where: str, fail: Callable[[str], NoReturn]) -> Link:
    _object(item, kind, where, fail)
    if not {"per_byte", "fixed"} <= item.keys():
        fail(f"{where} must have 'per_byte' and 'fixed'")
    return Link(item["per_byte"], item["fixed"])


def _named(item: Any, kind: str, i: int, fail: Callable[[str], NoReturn]) -> Named:
    """``units[i]`` / ``tensors[i]``: an object with a string ``name`` and only ``kind``'s
    fields; returns how messages name it."""
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        fail(f"{kind}s[{i}] must be an object with a string 'name'")
    where = Named(kind, item["name"])
    if not _FIELD_SETS[kind].issuperset(item):
        _object(item, kind, where, fail)
    return where


def _unit_from(item: Any, i: int, fail: Callable[[str], NoReturn]) -> Unit:
    where = _named(item, "unit", i, fail)
    name = item["name"]
    raw = item.get("choices")
    if not isinstance(raw, list):
        fail(f"{where}: 'choices' must be a list of {{device, type, cost}}, got {show(raw)}")
    if not raw:
        fail(f"{where}: no choices")
    choices = []
    for k, c in enumerate(raw):
        # The common case in one comparison: an object with exactly the three fields (and
        # maybe a memory and a variant).
        if (
            not isinstance(c, dict)
            or len(c) - ("memory" in c) - ("variant" in c) != 3
            or not _CHOICE_FIELDS.issuperset(c)
        ):
            _object(c, "choice", f"{where} choices[{k}]", fail)
            fail(f"{where} choices[{k}]: needs 'device', 'type' and 'cost'")
        device, kind, variant = c["device"], c["type"], c.get("variant", "")
        if type(device) is not str or type(kind) is not str or type(variant) is not str:
            fail(f"{where} choices[{k}]: 'device', 'type' and 'variant' must be strings")
        choices.append(Choice(device, kind, c["cost"], c.get("memory", 0.0), variant))
    interval = item.get("interval")
    if interval is not None:
        if not isinstance(interval, list) or len(interval) != 2:
            fail(f"{where}: 'interval' must be [start, end] (steps), got {show(interval)}")
        interval = tuple(interval)
    initial = item.get("initial")
    if initial is None:
        return Unit(name, tuple(choices), interval=interval)
    labels = [c.label for c in choices]
    if initial not in labels:
        fail(f"{where}: initial {show(initial)} is not one of its choices {show(labels)}")
    return Unit(name, tuple(choices), labels.index(initial), interval)


def _tensor_from(item: Any, i: int, fail: Callable[[str], NoReturn]) -> TensorEdge:
    where = _named(item, "tensor", i, fail)
    name = item["name"]
    for key in ("consumers", "shape", "dtype"):
        if key not in item:
            fail(f"{where}: missing field {key!r}")
    producer = item.get("producer")
    if producer is not None and not isinstance(producer, str):
        fail(f"{where}: producer must be a unit name or null, got {show(producer)}")
    consumers = item["consumers"]
    if not isinstance(consumers, list) or not all(type(v) is str for v in consumers):
        fail(f"{where}: consumers must be a list of unit names, got {show(consumers)}")
    shape = item["shape"]
    if not isinstance(shape, list):
        fail(f"{where}: shape must be a list of integers, got {show(shape)}")
    dtype = item["dtype"]
    if not isinstance(dtype, str):
        fail(f"{where}: dtype must be a string, got {show(dtype)}")
    return TensorEdge(
        name, producer, tuple(consumers), tuple(shape), dtype, item.get("output", False)
    )


def _pairwise_from(item: Any, i: int, fail: Callable[[str], NoReturn]) -> Pairwise:
    _object(item, "pairwise", f"pairwise[{i}]", fail)
    if not {"a", "b", "cost"} <= item.keys():
        fail(f"pairwise[{i}] must have 'a', 'b' and 'cost'")
    a, b, cost = item["a"], item["b"], item["cost"]
    if type(a) is not str or type(b) is not str:
        fail(f"pairwise[{i}]: 'a' and 'b' must be unit names, got {show([a, b])}")
    if not isinstance(cost, list) or not all(isinstance(row, list) for row in cost):
        fail(f"pairwise {a}-{b}: 'cost' must be a list of rows (lists), got {show(cost)}")
    return Pairwise(a, b, tuple(tuple(row) for row in cost))


def problem_to_dict(problem: ProblemData) -> dict[str, Any]:
    """The JSON form of ``problem`` (``capacity``, ``memory`` and ``pairwise`` only when set)."""
    out: dict[str, Any] = {
        "cost_unit": problem.cost_unit,
        "transfer": {"per_byte": problem.transfer.per_byte, "fixed": problem.transfer.fixed},
        "quant": {"per_element": problem.quant_per_element},
        "host": problem.host,
        "boundaries": problem.boundaries,
    }
    if problem.links:
        out["links"] = [
            {"from": s, "to": d, "per_byte": link.per_byte, "fixed": link.fixed}
            for (s, d), link in sorted(problem.links.items())
        ]
    if problem.capacity:
        out["capacity"] = dict(sorted(problem.capacity.items()))
    out["units"] = [
        {
            "name": u.name,
            "initial": u.choices[u.initial].label if u.choices else None,
            **({"interval": list(u.interval)} if u.interval is not None else {}),
            "choices": [_choice_dict(c) for c in u.choices],
        }
        for u in problem.units
    ]
    out["tensors"] = [
        {
            "name": t.name,
            "producer": t.producer,
            "consumers": list(t.consumers),
            "shape": list(t.shape),
            "dtype": t.dtype,
            **({"output": True} if t.output else {}),
        }
        for t in problem.tensors
    ]
    if problem.pairwise:
        out["pairwise"] = [
            {"a": p.a, "b": p.b, "cost": [list(row) for row in p.cost]} for p in problem.pairwise
        ]
    return out


def _choice_dict(c: Choice) -> dict[str, Any]:
    out = {"device": c.device, "type": c.type, "cost": c.cost}
    out |= {"memory": c.memory} if c.memory else {}
    return out | ({"variant": c.variant} if c.variant else {})

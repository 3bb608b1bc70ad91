"""The pick problem: units with alternative implementations, and the tensors between them.

A :class:`PickProblem` is what every picker reads. Each :class:`Unit` (a subgraph, in TAC's
words) has a few :class:`Choice` s, one per (device, inference type) it can run as, each with its
own compute cost. Each :class:`TensorEdge` goes from a producer unit (or from the graph inputs)
to consumer units (and maybe to the graph outputs). The objective a plan is charged is defined
once, in :func:`tacopt.partitioner.plan.evaluate`; the file format is described in
``docs/pick-problem.md``.

:func:`index_problem` turns a problem into flat numpy arrays (choices, consumer arcs, link
costs) that the pickers and ``evaluate`` share, so that 50,000-unit problems stay fast.
"""

from __future__ import annotations

import codecs
import json
import math
import numbers
import os
import re
import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from tacopt.fusion.io import atomic_write
from tacopt.partitioner.errors import ProblemError

INFERENCE_TYPES = ("FLOAT", "QUANTIZED_INT8", "QUANTIZED_UINT8", "HYBRID")

# A hybrid op reads and writes float activations (only its weights are int8), so, as in TAC's
# GetQuantDequantCost, FLOAT <-> HYBRID needs no conversion.
_ACTIVATION_FORMAT = {
    "FLOAT": "FLOAT",
    "HYBRID": "FLOAT",
    "QUANTIZED_INT8": "QUANTIZED_INT8",
    "QUANTIZED_UINT8": "QUANTIZED_UINT8",
}

_DTYPE_NBYTES = {
    "bool": 1, "int8": 1, "uint8": 1,
    "float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2,
    "float32": 4, "int32": 4, "uint32": 4,
    "float64": 8, "int64": 8, "uint64": 8, "complex64": 8,
    "complex128": 16,
}  # fmt: skip

# Every total a plan can reach must stay below this. float64 holds far more, but the solvers do
# not: HiGHS reads 1e20 as infinity and CP-SAT needs integer costs below 2**63. Costs in µs or
# in TAC's units are many orders of magnitude smaller.
MAX_TOTAL = 1e18
# A tensor holds fewer bytes than this (the byte count of any real tensor fits an int64).
MAX_NBYTES = 2**63

# Names are printed in tables and one-line errors: no control characters, no lone surrogates
# (which cannot be written as UTF-8).
_BAD_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

# The fields of each object of the JSON form; anything else is a misspelling.
_FIELDS = {
    "problem": ("cost_unit", "transfer", "quant", "host", "boundaries", "links", "units",
                "tensors"),
    "transfer": ("per_byte", "fixed"),
    "quant": ("per_element",),
    "link": ("from", "to", "per_byte", "fixed"),
    "unit": ("name", "initial", "choices"),
    "choice": ("device", "type", "cost"),
    "tensor": ("name", "producer", "consumers", "shape", "dtype", "output"),
}  # fmt: skip
_FIELD_SETS = {kind: frozenset(names) for kind, names in _FIELDS.items()}
_CHOICE_FIELDS = _FIELD_SETS["choice"]

# Integer literals longer than this are read as floats (so 10**400 is inf and refused by
# the range checks, naming its field), never as Python ints of unbounded size.
_MAX_INT_CHARS = 20

_short = reprlib.Repr()
_short.maxlevel, _short.maxstring, _short.maxother = 2, 40, 40
_short.maxlist = _short.maxdict = 4


def _show(value: Any) -> str:
    """A short one-line repr of any decoded JSON value, for error messages."""
    if isinstance(value, float) and math.isinf(value):  # also how 10**400 and 1e400 are read
        return f"{value} (beyond float64)"
    return _short.repr(value)


@dataclass(frozen=True, slots=True)
class _Named:
    """``unit 'name'`` in an error message, formatted only when the message is."""

    kind: str
    name: Any

    def __str__(self) -> str:
        return f"{self.kind} {_show(self.name)}"


@dataclass(frozen=True, slots=True)
class Choice:
    """One way to run a unit: on ``device`` as inference ``type``, at ``cost``."""

    device: str
    type: str
    cost: float

    @property
    def label(self) -> str:
        """``DEVICE/TYPE``, the name used for ``initial`` in problem files."""
        return f"{self.device}/{self.type}"


@dataclass(frozen=True, slots=True)
class Unit:
    """A subgraph to place, with its alternatives; ``initial`` indexes the plan TAC starts from."""

    name: str
    choices: tuple[Choice, ...]
    initial: int = 0


@dataclass(frozen=True, slots=True)
class TensorEdge:
    """A tensor from ``producer`` (``None``: a graph input) to ``consumers``.

    ``output`` marks a graph output. ``consumers`` may repeat a unit that reads the tensor twice
    (the objective counts each destination once; TAC's picker counts operands).
    """

    name: str
    producer: str | None
    consumers: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    output: bool = False

    @property
    def elements(self) -> int:
        """Number of elements (1 for a scalar)."""
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class Link:
    """Cost of moving a tensor between two devices: ``per_byte * bytes + fixed``."""

    per_byte: float
    fixed: float

    def cost(self, nbytes: float) -> float:
        """The cost of one transfer of ``nbytes`` bytes."""
        return self.per_byte * nbytes + self.fixed


@dataclass(frozen=True, slots=True)
class PickProblem:
    """Units, tensors and the transfer and conversion prices of a pick problem.

    ``links`` overrides ``transfer`` for a (from device, to device) pair. With
    ``boundaries=False`` graph inputs and outputs cost nothing, as in TAC. ``cost_unit`` names
    the unit of every cost and price (``"us"``, ``"tac"`` for TAC's cost units, ...); plans
    report their objective in it.
    """

    units: tuple[Unit, ...]
    tensors: tuple[TensorEdge, ...]
    transfer: Link
    quant_per_element: float
    host: str = "CPU"
    boundaries: bool = True
    links: Mapping[tuple[str, str], Link] = field(default_factory=dict)
    cost_unit: str = "cost"

    def link(self, src: str, dst: str) -> Link:
        """The link used from device ``src`` to device ``dst``."""
        return self.links.get((src, dst), self.transfer)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<problem>") -> PickProblem:
        """Build and validate a problem from its JSON form (see ``docs/pick-problem.md``).

        Parameters
        ----------
        data : dict
            The decoded JSON object.
        source : str
            Where it came from, used in error messages (a file name).

        Returns
        -------
        PickProblem

        Raises
        ------
        ProblemError
            On any missing, mistyped or inconsistent field, naming the unit or tensor.

        Examples
        --------
        >>> p = PickProblem.from_dict({"transfer": {"per_byte": 5, "fixed": 10},
        ...     "units": [{"name": "a",
        ...                "choices": [{"device": "CPU", "type": "FLOAT", "cost": 1}]}],
        ...     "tensors": []})
        >>> p.units[0].choices[0].label, p.quant_per_element
        ('CPU/FLOAT', 0.0)
        """
        problem = _problem_from_dict(data, source)
        validate_problem(problem, source=source)
        return problem

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the problem; ``from_dict(p.to_dict()) == p``.

        Examples
        --------
        >>> p = PickProblem((), (), Link(5.0, 10.0), 2.0)
        >>> PickProblem.from_dict(p.to_dict()) == p
        True
        """
        out: dict[str, Any] = {
            "cost_unit": self.cost_unit,
            "transfer": {"per_byte": self.transfer.per_byte, "fixed": self.transfer.fixed},
            "quant": {"per_element": self.quant_per_element},
            "host": self.host,
            "boundaries": self.boundaries,
        }
        if self.links:
            out["links"] = [
                {"from": s, "to": d, "per_byte": link.per_byte, "fixed": link.fixed}
                for (s, d), link in sorted(self.links.items())
            ]
        out["units"] = [
            {
                "name": u.name,
                "initial": u.choices[u.initial].label if u.choices else None,
                "choices": [
                    {"device": c.device, "type": c.type, "cost": c.cost} for c in u.choices
                ],
            }
            for u in self.units
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
            for t in self.tensors
        ]
        return out


def dtype_nbytes(dtype: str) -> int:
    """Bytes per element of a TFLite / numpy dtype name.

    Raises
    ------
    ProblemError
        For an unknown dtype (the message lists the known ones).

    Examples
    --------
    >>> dtype_nbytes("float32"), dtype_nbytes("int8")
    (4, 1)
    """
    try:
        return _DTYPE_NBYTES[dtype]
    except KeyError:
        raise ProblemError(f"unknown dtype {dtype!r}; known: {', '.join(_DTYPE_NBYTES)}") from None


def type_of_dtype(dtype: str) -> str:
    """The inference type a graph input or output of this dtype is in.

    int8 and uint8 tensors are quantized; every other dtype counts as FLOAT (integer tensors such
    as indices pass through float and hybrid kernels unconverted).

    Examples
    --------
    >>> type_of_dtype("float32"), type_of_dtype("uint8")
    ('FLOAT', 'QUANTIZED_UINT8')
    """
    dtype_nbytes(dtype)
    return {"int8": "QUANTIZED_INT8", "uint8": "QUANTIZED_UINT8"}.get(dtype, "FLOAT")


def activation_format(inference_type: str) -> str:
    """The format activations travel in for an inference type; HYBRID ones are FLOAT.

    Examples
    --------
    >>> activation_format("HYBRID"), activation_format("QUANTIZED_INT8")
    ('FLOAT', 'QUANTIZED_INT8')
    """
    try:
        return _ACTIVATION_FORMAT[inference_type]
    except KeyError:
        known = ", ".join(INFERENCE_TYPES)
        raise ProblemError(f"unknown inference type {inference_type!r}; known: {known}") from None


def load_problem(path: str | os.PathLike[str]) -> PickProblem:
    """Read and validate a pick problem from a UTF-8 JSON file.

    Raises
    ------
    ProblemError
        If the file is missing, is not UTF-8 JSON, or describes an invalid problem (the message
        names the file and the field, unit or tensor).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.json"
    >>> save_problem(PickProblem((), (), Link(5.0, 10.0), 2.0), f).name
    'p.json'
    >>> load_problem(f).transfer
    Link(per_byte=5.0, fixed=10.0)
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ProblemError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return PickProblem.from_dict(_decode_json(raw, str(path)), source=str(path))


def save_problem(problem: PickProblem, path: str | os.PathLike[str]) -> Path:
    """Write ``problem`` as JSON to ``path`` atomically and return the path."""
    return atomic_write(path, json.dumps(problem.to_dict(), indent=1) + "\n")


def _decode_json(raw: bytes, source: str) -> Any:
    """The JSON value of a file's bytes, which must be UTF-8 (a leading BOM is allowed)."""

    def fail(msg: str) -> NoReturn:
        if raw[4:8] == b"TFL3":  # the flatbuffer file identifier of a .tflite model
            msg = "a TFLite model, not a pick problem ('tacopt partition MODEL --problem OUT.json'"
            msg += " writes one)"
        raise ProblemError(f"{source}: {msg}")

    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in raw:
        # JSON never holds a raw NUL byte; UTF-16 and UTF-32 text always does.
        fail("not UTF-8 text (UTF-16, UTF-32 or binary); a pick problem is a UTF-8 JSON file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        fail(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
             "a pick problem is a UTF-8 JSON file")  # fmt: skip
    try:
        return json.loads(text, parse_int=_parse_int)
    except RecursionError:
        fail("not valid JSON: arrays or objects nested too deeply")
    except ValueError as exc:  # JSONDecodeError, or a number the decoder cannot take
        fail(f"not valid JSON: {' '.join(str(exc).split())}")


def _parse_int(literal: str) -> int | float:
    """An integer literal; a very long one as a float (inf beyond 1e308), never a huge int."""
    return int(literal) if len(literal) <= _MAX_INT_CHARS else float(literal)


def validate_problem(problem: PickProblem, *, source: str = "<problem>") -> None:
    """Check a problem; raise a one-line :class:`ProblemError` naming what is wrong.

    Checks: names are strings without control characters, unique unit and tensor names, at
    least one choice per unit, known inference types, no (device, type) twice in a unit, costs
    and prices that are numbers from 0 to :data:`MAX_TOTAL`, a host that some unit can run on,
    no link from a device to itself, known units and dtypes in tensors, shapes of non-negative
    integers under :data:`MAX_NBYTES` bytes, no cycle among units, and no plan whose total
    could exceed :data:`MAX_TOTAL` (so that every total is finite in float64 and within the
    solvers' range).

    Examples
    --------
    >>> bad = PickProblem((Unit("a", ()),), (), Link(5.0, 10.0), 2.0)
    >>> validate_problem(bad, source="p.json")
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.ProblemError: p.json: unit 'a': no choices
    """

    def fail(msg: str) -> NoReturn:
        raise ProblemError(f"{source}: {msg}")

    _check_text(problem.cost_unit, "cost_unit", fail)
    _check_text(problem.host, "host", fail)
    if not isinstance(problem.boundaries, bool):
        fail(f"'boundaries' must be true or false, got {_show(problem.boundaries)}")
    prices = [
        (problem.transfer.per_byte, "transfer.per_byte"),
        (problem.transfer.fixed, "transfer.fixed"),
        (problem.quant_per_element, "quant.per_element"),
    ]
    for (src, dst), link in problem.links.items():
        _check_text(src, "link 'from'", fail)
        _check_text(dst, "link 'to'", fail)
        if src == dst:
            fail(f"link {src}->{dst}: a tensor never moves to the device it is on")
        prices += [(link.per_byte, f"link {src}->{dst} per_byte"),
                   (link.fixed, f"link {src}->{dst} fixed")]  # fmt: skip
    for value, what in prices:
        _check_price(value, what, fail)
    max_costs = _check_units(problem.units, fail)
    devices = {c.device for u in problem.units for c in u.choices}
    if devices and problem.host not in devices:
        known = ", ".join(sorted(devices))
        fail(f"host {problem.host!r} is not a device of any unit (devices: {known})")
    _check_tensors(problem.tensors, {u.name for u in problem.units}, fail)
    _topological_order(problem, fail)
    _check_totals(problem, float(max_costs.sum()), fail)


def _check_text(value: Any, what: str, fail: Callable[[str], NoReturn]) -> None:
    if not isinstance(value, str) or not value:
        fail(f"{what} must be a non-empty string, got {_show(value)}")
    if _BAD_TEXT.search(value):
        fail(f"{what} {_show(value)} holds a control character or a lone surrogate")


def _check_price(value: Any, what: str, fail: Callable[[str], NoReturn]) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(f"{what} must be a number, got {_show(value)}")
    number: Any = value  # numbers.Real promises no comparison operators to mypy
    if not 0 <= number <= MAX_TOTAL:  # False for NaN; exact for ints of any size
        fail(f"{what} must be finite, >= 0 and <= {MAX_TOTAL:g}, got {_show(value)}")


def _check_units(units: Sequence[Unit], fail: Callable[[str], NoReturn]) -> np.ndarray:
    """Check every unit; return each unit's largest cost.

    A few whole-problem checks decide quickly that 50,000 units are fine; only when one of them
    fails does :func:`_check_unit` go unit by unit, to name the first culprit.
    """
    names = [u.name for u in units]
    flat = [c for u in units for c in u.choices]
    devices = [c.device for c in flat]
    types = [c.type for c in flat]
    counts = [len(u.choices) for u in units]
    costs = _float_array([c.cost for c in flat])
    fine = (
        costs is not None
        and 0 not in counts
        and set(map(type, names)) <= {str}
        and len(set(names)) == len(names)
        and set(map(type, devices)) <= {str}
        and set(map(type, types)) <= {str}
        and set(types) <= _ACTIVATION_FORMAT.keys()
        and "" not in set(devices)
        and not _BAD_TEXT.search("".join(names) + "".join(devices))
        and set(map(type, (u.initial for u in units))) <= {int}
        and all(0 <= u.initial < n for u, n in zip(units, counts))
        and not _any_pair_twice(counts, devices, types)
    )
    if fine and costs is not None:
        if not units:
            return costs
        return np.maximum.reduceat(costs, np.cumsum([0, *counts[:-1]]))
    seen: set[str] = set()
    for unit in units:
        _check_unit(unit, seen, fail)
    fail("invalid units")  # not reached: _check_unit names the first culprit


def _any_pair_twice(counts: list[int], devices: list[str], types: list[str]) -> bool:
    """Whether some unit lists a (device, type) twice; choices are numbered unit by unit."""
    dev_code = {d: i for i, d in enumerate(dict.fromkeys(devices))}
    type_code = {t: i for i, t in enumerate(INFERENCE_TYPES)}
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    dev = np.fromiter(map(dev_code.__getitem__, devices), np.int64, len(devices))
    kind = np.fromiter(map(type_code.__getitem__, types), np.int64, len(types))
    keys = (owner * len(dev_code) + dev) * len(type_code) + kind
    return len(np.unique(keys)) < len(keys)


def _float_array(values: list[Any]) -> np.ndarray | None:
    """``values`` as float64 when they are all plain numbers from 0 to MAX_TOTAL, else None."""
    if not set(map(type, values)) <= {float, int, np.float64}:
        return None
    try:
        array = np.array(values, dtype=np.float64)
    except OverflowError:  # an int beyond float64
        return None
    return array if np.all((array >= 0) & (array <= MAX_TOTAL)) else None  # NaN fails


def _check_unit(unit: Unit, seen: set[str], fail: Callable[[str], NoReturn]) -> None:
    if not isinstance(unit.name, str):
        fail(f"unit names must be strings, got {_show(unit.name)}")
    where = f"unit {_show(unit.name)}"
    if _BAD_TEXT.search(unit.name):
        fail(f"{where}: the name holds a control character or a lone surrogate")
    if unit.name in seen:
        fail(f"duplicate unit name {_show(unit.name)}")
    seen.add(unit.name)
    if not unit.choices:
        fail(f"{where}: no choices")
    pairs: set[tuple[str, str]] = set()
    for k, c in enumerate(unit.choices):
        if not isinstance(c.device, str) or not isinstance(c.type, str):
            fail(f"{where} choices[{k}]: device and type must be strings")
        _check_text(c.device, f"{where} choices[{k}] device", fail)
        if c.type not in _ACTIVATION_FORMAT:
            known = ", ".join(INFERENCE_TYPES)
            fail(f"{where} choices[{k}]: unknown inference type {_show(c.type)}; known: {known}")
        label = f"{where} choice {c.label}"
        if (c.device, c.type) in pairs:
            fail(f"{label}: listed twice")
        pairs.add((c.device, c.type))
        _check_price(c.cost, f"{label} cost", fail)
    if isinstance(unit.initial, bool) or not isinstance(unit.initial, int):
        fail(f"{where}: initial choice must be an index, got {_show(unit.initial)}")
    if not 0 <= unit.initial < len(unit.choices):
        fail(f"{where}: initial choice {unit.initial} out of range")


def _check_tensors(
    tensors: Sequence[TensorEdge], units: set[str], fail: Callable[[str], NoReturn]
) -> None:
    names: set[str] = set()
    for t in tensors:
        if not isinstance(t.name, str):
            fail(f"tensor names must be strings, got {_show(t.name)}")
        where = _Named("tensor", t.name)
        if t.name in names:
            fail(f"duplicate tensor name {_show(t.name)}")
        names.add(t.name)
        if t.producer is not None and t.producer not in units:
            fail(f"{where}: unknown producer unit {_show(t.producer)}")
        if not units.issuperset(t.consumers):
            unknown = next(v for v in t.consumers if v not in units)
            fail(f"{where}: unknown consumer unit {_show(unknown)}")
        if t.producer in t.consumers:
            fail(f"{where}: unit {t.producer!r} consumes its own output (a cycle)")
        if t.dtype not in _DTYPE_NBYTES:
            fail(f"{where}: unknown dtype {_show(t.dtype)}; known: {', '.join(_DTYPE_NBYTES)}")
        if not isinstance(t.output, bool):
            fail(f"{where}: output must be true or false, got {_show(t.output)}")
        if not all(type(d) is int and 0 <= d < MAX_NBYTES for d in t.shape) and not all(
            _is_count(d) for d in t.shape
        ):
            fail(f"{where}: shape {_show(list(t.shape))} must be integers from 0 to 2**63 - 1")
        if 0 not in t.shape:
            nbytes = _DTYPE_NBYTES[t.dtype]
            for d in t.shape:
                nbytes *= d
                if nbytes >= MAX_NBYTES:
                    fail(f"{where}: shape {_show(list(t.shape))} holds 2**63 bytes or more")
    if _BAD_TEXT.search("".join(names)):
        bad = next(n for n in names if _BAD_TEXT.search(n))
        fail(f"tensor {_show(bad)}: the name holds a control character or a lone surrogate")


def _is_count(value: Any) -> bool:
    """A non-negative integer below MAX_NBYTES (numpy integers too, but not booleans)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    number: Any = value
    return bool(0 <= number < MAX_NBYTES)


def _check_totals(problem: PickProblem, compute: float, fail: Callable[[str], NoReturn]) -> None:
    """Refuse a problem where some plan could cost more than :data:`MAX_TOTAL`.

    The bound adds each unit's dearest choice, and for each tensor the dearest transfer and
    conversion once per destination it could need (distinct consumers plus the host for a
    graph output, at most one per other device or format). Prices are already each at most
    ``MAX_TOTAL`` and byte counts below ``MAX_NBYTES``, so every product here is finite.
    """
    devices = sorted({c.device for u in problem.units for c in u.choices} | {problem.host})
    per_byte, per_byte_field, fixed = 0.0, "transfer.per_byte", 0.0
    for src in devices:
        for dst in devices:
            link = problem.link(src, dst)
            if src != dst and link.per_byte > per_byte:
                per_byte = link.per_byte
                if (src, dst) in problem.links:
                    per_byte_field = f"link {src}->{dst} per_byte"
            if src != dst:
                fixed = max(fixed, link.fixed)
    kept = [t for t in problem.tensors if t.producer is not None or problem.boundaries]
    formats = {activation_format(c.type) for u in problem.units for c in u.choices}
    formats |= {activation_format(type_of_dtype(t.dtype)) for t in kept}
    # Per kept tensor: destinations, elements, bytes per element (one pass, then numpy).
    rows = np.array(
        [(len(set(t.consumers)) + (t.output and problem.boundaries), t.elements,
          _DTYPE_NBYTES[t.dtype]) for t in kept],
        dtype=np.float64,
    ).reshape(-1, 3)  # fmt: skip
    destinations, elements = rows[:, 0], rows[:, 1]
    quant = problem.quant_per_element
    transfer_total = quant_total = 0.0
    if len(devices) > 1:
        one = np.where(destinations > 0, per_byte * elements * rows[:, 2] + fixed, 0.0)
        if np.any(one > MAX_TOTAL):
            k = int(np.argmax(one > MAX_TOTAL))
            nbytes = kept[k].elements * _DTYPE_NBYTES[kept[k].dtype]
            fail(f"{_Named('tensor', kept[k].name)}: one transfer of its {nbytes} bytes may cost"
                 f" {one[k]:.3g} ({per_byte_field} = {per_byte:g}), more than the {MAX_TOTAL:g}"
                 " any total may reach")  # fmt: skip
        transfer_total = float(np.minimum(destinations, len(devices) - 1) @ one)
    if len(formats) > 1:
        one = np.where(destinations > 0, quant * elements, 0.0)
        if np.any(one > MAX_TOTAL):
            t = kept[int(np.argmax(one > MAX_TOTAL))]
            fail(f"{_Named('tensor', t.name)}: one conversion of its {t.elements} elements may"
                 f" cost {quant * t.elements:.3g} (quant.per_element = {quant:g}), more than the"
                 f" {MAX_TOTAL:g} any total may reach")  # fmt: skip
        quant_total = float(np.minimum(destinations, len(formats) - 1) @ one)
    total = compute + transfer_total + quant_total
    if total > MAX_TOTAL:
        parts = {"the units' costs": compute, "the transfer prices": transfer_total,
                 "quant.per_element": quant_total}  # fmt: skip
        fail(f"a plan may cost up to {total:.3g} (compute {compute:.3g}, transfer "
             f"{transfer_total:.3g}, quant {quant_total:.3g}), more than the {MAX_TOTAL:g} "
             f"any total may reach; scale down {max(parts, key=parts.__getitem__)}")  # fmt: skip


def _topological_order(problem: PickProblem, fail: Callable[[str], NoReturn]) -> list[int]:
    """Unit indices in an order where producers come first (Kahn's algorithm, LIFO ready list).

    Deterministic: the order depends only on the order of units and tensors in the problem.
    """
    pos = {u.name: i for i, u in enumerate(problem.units)}
    succ: list[list[int]] = [[] for _ in problem.units]
    indegree = [0] * len(problem.units)
    for t in problem.tensors:
        if t.producer is None:
            continue
        p = pos[t.producer]
        for v in dict.fromkeys(t.consumers):
            succ[p].append(pos[v])
            indegree[pos[v]] += 1
    ready = [i for i in range(len(indegree)) if indegree[i] == 0]
    order: list[int] = []
    while ready:
        # LIFO: a chain is followed to its end before a sibling starts; O(1) per step.
        k = ready.pop()
        order.append(k)
        for j in succ[k]:
            indegree[j] -= 1
            if indegree[j] == 0:
                ready.append(j)
    if len(order) < len(problem.units):
        stuck = min(i for i in range(len(indegree)) if indegree[i] > 0)
        fail(f"cycle among units through unit {_show(problem.units[stuck].name)}")
    return order


def _unit_order(problem: PickProblem, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
    """A topological order of units: the listed one when it is, else Kahn's."""
    produced = tail >= 0
    if np.all(tail[produced] < head[produced]):
        return np.arange(len(problem.units), dtype=np.int64)

    def fail(msg: str) -> NoReturn:
        raise ProblemError(msg)

    return np.array(_topological_order(problem, fail), dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# JSON form: structure and types here, meaning in validate_problem


def _problem_from_dict(data: Any, source: str) -> PickProblem:
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
        if not isinstance(src, str) or not isinstance(dst, str) or _BAD_TEXT.search(src + dst):
            fail(f"links[{i}]: 'from' and 'to' must be device names, got {_show([src, dst])}")
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
    return PickProblem(
        units,
        tensors,
        transfer,
        quant["per_element"],
        data.get("host", "CPU"),
        data.get("boundaries", True),
        links,
        data.get("cost_unit", "cost"),
    )


def _object(value: Any, kind: str, where: str | _Named, fail: Callable[[str], NoReturn]) -> None:
    """Check that ``value`` is a JSON object with no field outside those of ``kind``."""
    if not isinstance(value, dict):
        fail(f"{where} must be a JSON object, got {_show(value)}")
    if not _FIELD_SETS[kind].issuperset(value):
        unknown = sorted(map(str, value.keys() - _FIELD_SETS[kind]))[0]
        fail(f"{where}: unknown field {_show(unknown)}; known: {', '.join(_FIELDS[kind])}")


def _list_of(value: Any, what: str, fail: Callable[[str], NoReturn]) -> list[Any]:
    if not isinstance(value, list):
        fail(f"{what!r} must be a list, got {_show(value)}")
    return value


def _link_from(item: Any, kind: str, where: str, fail: Callable[[str], NoReturn]) -> Link:
    _object(item, kind, where, fail)
    if not {"per_byte", "fixed"} <= item.keys():
        fail(f"{where} must have 'per_byte' and 'fixed'")
    return Link(item["per_byte"], item["fixed"])


def _unit_from(item: Any, i: int, fail: Callable[[str], NoReturn]) -> Unit:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        fail(f"units[{i}] must be an object with a string 'name'")
    name = item["name"]
    where = _Named("unit", name)
    if not _FIELD_SETS["unit"].issuperset(item):
        _object(item, "unit", where, fail)
    raw = item.get("choices")
    if not isinstance(raw, list):
        fail(f"{where}: 'choices' must be a list of {{device, type, cost}}, got {_show(raw)}")
    if not raw:
        fail(f"{where}: no choices")
    choices = []
    for k, c in enumerate(raw):
        # The common case in one comparison: an object with exactly the three fields.
        if not isinstance(c, dict) or len(c) != 3 or not _CHOICE_FIELDS.issuperset(c):
            _object(c, "choice", f"{where} choices[{k}]", fail)
            fail(f"{where} choices[{k}]: needs 'device', 'type' and 'cost'")
        device, kind = c["device"], c["type"]
        if type(device) is not str or type(kind) is not str:
            fail(f"{where} choices[{k}]: 'device' and 'type' must be strings")
        choices.append(Choice(device, kind, c["cost"]))
    initial = item.get("initial")
    if initial is None:
        return Unit(name, tuple(choices))
    labels = [c.label for c in choices]
    if initial not in labels:
        fail(f"{where}: initial {_show(initial)} is not one of its choices {_show(labels)}")
    return Unit(name, tuple(choices), labels.index(initial))


def _tensor_from(item: Any, i: int, fail: Callable[[str], NoReturn]) -> TensorEdge:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        fail(f"tensors[{i}] must be an object with a string 'name'")
    name = item["name"]
    where = _Named("tensor", name)
    if not _FIELD_SETS["tensor"].issuperset(item):
        _object(item, "tensor", where, fail)
    for key in ("consumers", "shape", "dtype"):
        if key not in item:
            fail(f"{where}: missing field {key!r}")
    producer = item.get("producer")
    if producer is not None and not isinstance(producer, str):
        fail(f"{where}: producer must be a unit name or null, got {_show(producer)}")
    consumers = item["consumers"]
    if not isinstance(consumers, list) or not all(type(v) is str for v in consumers):
        fail(f"{where}: consumers must be a list of unit names, got {_show(consumers)}")
    shape = item["shape"]
    if not isinstance(shape, list):
        fail(f"{where}: shape must be a list of integers, got {_show(shape)}")
    dtype = item["dtype"]
    if not isinstance(dtype, str):
        fail(f"{where}: dtype must be a string, got {_show(dtype)}")
    return TensorEdge(
        name, producer, tuple(consumers), tuple(shape), dtype, item.get("output", False)
    )


# ---------------------------------------------------------------------------------------------
# Flat arrays shared by evaluate and the pickers


@dataclass(frozen=True, slots=True)
class ProblemIndex:
    """A problem as flat arrays. Choices are numbered globally, unit by unit.

    Only tensors that can cost something are kept: those with a producer unit, plus graph inputs
    when boundaries count. ``arc_*`` lists each distinct (tensor, consumer unit) pair once;
    ``src_unit`` is -1 for a graph input, whose device and format are then ``src_dev`` and
    ``src_fmt``. ``to_host`` marks graph outputs that must reach the host (boundaries only).
    """

    unit_names: tuple[str, ...]
    devices: tuple[str, ...]
    formats: tuple[str, ...]
    choice_start: np.ndarray  # [n_units + 1]
    choice_unit: np.ndarray  # [n_choices]
    choice_dev: np.ndarray
    choice_fmt: np.ndarray
    choice_cost: np.ndarray
    initial: np.ndarray  # [n_units] global choice index of each unit's initial choice
    order: np.ndarray  # [n_units] a topological order of units
    tensor_names: tuple[str, ...]
    src_unit: np.ndarray  # [n_tensors]
    src_dev: np.ndarray
    src_fmt: np.ndarray
    nbytes: np.ndarray
    elements: np.ndarray
    to_host: np.ndarray
    host_dev: int
    host_fmt: np.ndarray  # [n_tensors] the format the tensor has at the graph boundary
    arc_tensor: np.ndarray  # [n_arcs], sorted by tensor
    arc_unit: np.ndarray
    link_per_byte: np.ndarray  # [n_devices, n_devices]
    link_fixed: np.ndarray
    quant_per_element: float

    @property
    def n_units(self) -> int:
        return len(self.unit_names)

    def transfer_cost(
        self, src: np.ndarray | int, dst: np.ndarray | int, tensor: np.ndarray | int
    ) -> np.ndarray:
        """Cost of sending ``tensor`` from device ``src`` to ``dst`` (0 where they are equal)."""
        cost = self.link_per_byte[src, dst] * self.nbytes[tensor] + self.link_fixed[src, dst]
        return np.where(src == dst, 0.0, cost)

    def quant_cost(
        self, src: np.ndarray | int, dst: np.ndarray | int, tensor: np.ndarray | int
    ) -> np.ndarray:
        """Cost of converting ``tensor`` from format ``src`` to ``dst`` (0 where equal)."""
        return np.where(src == dst, 0.0, self.quant_per_element * self.elements[tensor])


def index_problem(problem: PickProblem) -> ProblemIndex:
    """Flatten a validated problem into a :class:`ProblemIndex`.

    Examples
    --------
    >>> p = PickProblem((Unit("a", (Choice("GPU", "FLOAT", 1.0), Choice("CPU", "HYBRID", 2.0))),),
    ...                 (), Link(5.0, 10.0), 2.0)
    >>> ix = index_problem(p)
    >>> ix.devices, ix.formats, ix.choice_dev.tolist()
    (('CPU', 'GPU'), ('FLOAT',), [1, 0])
    """
    units = problem.units
    flat = [c for u in units for c in u.choices]
    dtypes = {t.dtype for t in problem.tensors}
    dtype_fmt = {dt: activation_format(type_of_dtype(dt)) for dt in dtypes}
    devices = sorted({c.device for c in flat} | {problem.host})
    formats = sorted({activation_format(c.type) for c in flat} | set(dtype_fmt.values()))
    dev_of = {d: i for i, d in enumerate(devices)}
    fmt_of = {f: i for i, f in enumerate(formats)}
    pos = {u.name: i for i, u in enumerate(units)}
    counts = np.fromiter((len(u.choices) for u in units), dtype=np.int64, count=len(units))
    choice_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    initial = choice_start[:-1] + np.fromiter((u.initial for u in units), np.int64, len(units))

    kept = [t for t in problem.tensors if t.producer is not None or problem.boundaries]
    src_unit = np.array([-1 if t.producer is None else pos[t.producer] for t in kept], np.int64)
    host_fmt = np.array([fmt_of[dtype_fmt[t.dtype]] for t in kept], np.int64)
    elements = np.array([t.elements for t in kept], dtype=np.float64)
    nbytes = elements * np.array([_DTYPE_NBYTES[t.dtype] for t in kept], dtype=np.float64)
    arc_t = [i for i, t in enumerate(kept) for _ in t.consumers]
    arc_v = [pos[v] for t in kept for v in t.consumers]
    arc_key = np.unique(np.array(arc_t, np.int64) * max(len(units), 1) + np.array(arc_v, np.int64))
    arc_tensor, arc_unit = np.divmod(arc_key, max(len(units), 1))

    n_dev = len(devices)
    per_byte = np.full((n_dev, n_dev), float(problem.transfer.per_byte))
    fixed = np.full((n_dev, n_dev), float(problem.transfer.fixed))
    for (src, dst), link in problem.links.items():
        if src in dev_of and dst in dev_of:
            per_byte[dev_of[src], dev_of[dst]] = link.per_byte
            fixed[dev_of[src], dev_of[dst]] = link.fixed
    # Staying on a device is free; zeros here keep even unvalidated self-links out of products.
    np.fill_diagonal(per_byte, 0.0)
    np.fill_diagonal(fixed, 0.0)

    return ProblemIndex(
        unit_names=tuple(u.name for u in units),
        devices=tuple(devices),
        formats=tuple(formats),
        choice_start=choice_start,
        choice_unit=np.repeat(np.arange(len(units), dtype=np.int64), counts),
        choice_dev=np.array([dev_of[c.device] for c in flat], dtype=np.int64),
        choice_fmt=np.array([fmt_of[activation_format(c.type)] for c in flat], dtype=np.int64),
        choice_cost=np.array([c.cost for c in flat], dtype=np.float64),
        initial=initial,
        order=_unit_order(problem, src_unit[arc_tensor], arc_unit),
        tensor_names=tuple(t.name for t in kept),
        src_unit=src_unit,
        src_dev=np.where(src_unit < 0, dev_of[problem.host], -1),
        src_fmt=np.where(src_unit < 0, host_fmt, -1),
        nbytes=nbytes,
        elements=elements,
        to_host=np.array([t.output and problem.boundaries for t in kept], dtype=bool),
        host_dev=dev_of[problem.host],
        host_fmt=host_fmt,
        arc_tensor=arc_tensor,
        arc_unit=arc_unit,
        link_per_byte=per_byte,
        link_fixed=fixed,
        quant_per_element=float(problem.quant_per_element),
    )

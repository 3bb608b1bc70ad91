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

import json
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    ``boundaries=False`` graph inputs and outputs cost nothing, as in TAC.
    """

    units: tuple[Unit, ...]
    tensors: tuple[TensorEdge, ...]
    transfer: Link
    quant_per_element: float
    host: str = "CPU"
    boundaries: bool = True
    links: Mapping[tuple[str, str], Link] = field(default_factory=dict)

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
    """Read and validate a pick problem from a JSON file.

    Raises
    ------
    ProblemError
        If the file is missing, is not JSON, or describes an invalid problem (the message names
        the file and the unit or tensor).

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
        text = path.read_text()
    except OSError as exc:
        raise ProblemError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProblemError(f"{path}: not valid JSON: {exc}") from None
    return PickProblem.from_dict(data, source=str(path))


def save_problem(problem: PickProblem, path: str | os.PathLike[str]) -> Path:
    """Write ``problem`` as JSON to ``path`` atomically and return the path."""
    return atomic_write(path, json.dumps(problem.to_dict(), indent=1) + "\n")


def validate_problem(problem: PickProblem, *, source: str = "<problem>") -> None:
    """Check a problem; raise a one-line :class:`ProblemError` naming what is wrong.

    Checks: unique unit and tensor names, at least one choice per unit, known inference types,
    no duplicate (device, type) in a unit, finite non-negative costs and prices, known units
    and dtypes in tensors, non-negative shapes, and no cycle among units.

    Examples
    --------
    >>> bad = PickProblem((Unit("a", ()),), (), Link(5.0, 10.0), 2.0)
    >>> validate_problem(bad, source="p.json")
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.ProblemError: p.json: unit 'a': no choices
    """

    def fail(msg: str) -> None:
        raise ProblemError(f"{source}: {msg}")

    _check_price(problem.transfer.per_byte, "transfer.per_byte", fail)
    _check_price(problem.transfer.fixed, "transfer.fixed", fail)
    _check_price(problem.quant_per_element, "quant.per_element", fail)
    if not isinstance(problem.host, str) or not problem.host:
        fail("host must be a non-empty device name")
    for (src, dst), link in problem.links.items():
        _check_price(link.per_byte, f"link {src}->{dst} per_byte", fail)
        _check_price(link.fixed, f"link {src}->{dst} fixed", fail)
    names: set[str] = set()
    for unit in problem.units:
        if unit.name in names:
            fail(f"duplicate unit name {unit.name!r}")
        names.add(unit.name)
        if not unit.choices:
            fail(f"unit {unit.name!r}: no choices")
        seen: set[tuple[str, str]] = set()
        for c in unit.choices:
            where = f"unit {unit.name!r} choice {c.label}"
            if c.type not in _ACTIVATION_FORMAT:
                fail(f"{where}: unknown inference type; known: {', '.join(INFERENCE_TYPES)}")
            if (c.device, c.type) in seen:
                fail(f"{where}: listed twice")
            seen.add((c.device, c.type))
            _check_price(c.cost, f"{where} cost", fail)
        if not 0 <= unit.initial < len(unit.choices):
            fail(f"unit {unit.name!r}: initial choice {unit.initial} out of range")
    tensor_names: set[str] = set()
    for t in problem.tensors:
        if t.name in tensor_names:
            fail(f"duplicate tensor name {t.name!r}")
        tensor_names.add(t.name)
        if t.producer is not None and t.producer not in names:
            fail(f"tensor {t.name!r}: unknown producer unit {t.producer!r}")
        for v in t.consumers:
            if v not in names:
                fail(f"tensor {t.name!r}: unknown consumer unit {v!r}")
            if v == t.producer:
                fail(f"tensor {t.name!r}: unit {v!r} consumes its own output (a cycle)")
        if any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in t.shape):
            fail(f"tensor {t.name!r}: shape {list(t.shape)} must be non-negative integers")
        if t.dtype not in _DTYPE_NBYTES:
            fail(f"tensor {t.name!r}: unknown dtype {t.dtype!r}")
    _topological_order(problem, fail)


def _check_price(value: Any, what: str, fail: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        fail(f"{what} must be finite and non-negative, got {value!r}")


def _topological_order(problem: PickProblem, fail: Any) -> list[int]:
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
        fail(f"cycle among units through unit {problem.units[stuck].name!r}")
    return order


def _unit_order(problem: PickProblem, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
    """A topological order of units: the listed one when it is, else Kahn's."""
    produced = tail >= 0
    if np.all(tail[produced] < head[produced]):
        return np.arange(len(problem.units), dtype=np.int64)

    def fail(msg: str) -> None:
        raise ProblemError(msg)

    return np.array(_topological_order(problem, fail), dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# JSON form


def _problem_from_dict(data: Any, source: str) -> PickProblem:
    def fail(msg: str) -> Any:
        raise ProblemError(f"{source}: {msg}")

    if not isinstance(data, dict):
        fail("top level must be a JSON object")
    for field_name in ("transfer", "units", "tensors"):
        if field_name not in data:
            fail(f"missing field {field_name!r}")
    transfer = _link_from(data["transfer"], "transfer", fail)
    quant = data.get("quant", {"per_element": 0.0})
    if not isinstance(quant, dict) or "per_element" not in quant:
        fail("'quant' must be an object with 'per_element'")
    links: dict[tuple[str, str], Link] = {}
    for i, item in enumerate(_list_of(data.get("links", []), "links", fail)):
        if not isinstance(item, dict) or not {"from", "to"} <= item.keys():
            fail(f"links[{i}] must be an object with 'from', 'to', 'per_byte', 'fixed'")
        key = (str(item["from"]), str(item["to"]))
        if key in links:
            fail(f"link {key[0]}->{key[1]} listed twice")
        links[key] = _link_from(item, f"link {key[0]}->{key[1]}", fail)
    units = tuple(
        _unit_from(item, i, fail) for i, item in enumerate(_list_of(data["units"], "units", fail))
    )
    tensors = tuple(
        _tensor_from(item, i, fail)
        for i, item in enumerate(_list_of(data["tensors"], "tensors", fail))
    )
    host = data.get("host", "CPU")
    boundaries = data.get("boundaries", True)
    if not isinstance(boundaries, bool):
        fail(f"'boundaries' must be true or false, got {boundaries!r}")
    return PickProblem(units, tensors, transfer, quant["per_element"], host, boundaries, links)


def _list_of(value: Any, what: str, fail: Any) -> list[Any]:
    if not isinstance(value, list):
        fail(f"{what!r} must be a list")
    return value


def _link_from(item: Any, what: str, fail: Any) -> Link:
    if not isinstance(item, dict) or not {"per_byte", "fixed"} <= item.keys():
        fail(f"{what} must be an object with 'per_byte' and 'fixed'")
    return Link(item["per_byte"], item["fixed"])


def _unit_from(item: Any, i: int, fail: Any) -> Unit:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        fail(f"units[{i}] must be an object with a string 'name'")
    name = item["name"]
    raw = item.get("choices")
    if not isinstance(raw, list) or not raw:
        fail(f"unit {name!r}: no choices")
    choices = []
    for c in raw:
        if not isinstance(c, dict) or not {"device", "type", "cost"} <= c.keys():
            fail(f"unit {name!r}: each choice needs 'device', 'type' and 'cost'")
        choices.append(Choice(str(c["device"]), str(c["type"]), c["cost"]))
    initial = item.get("initial")
    if initial is None:
        return Unit(name, tuple(choices))
    labels = [c.label for c in choices]
    if initial not in labels:
        fail(f"unit {name!r}: initial {initial!r} is not one of its choices {labels}")
    return Unit(name, tuple(choices), labels.index(initial))


def _tensor_from(item: Any, i: int, fail: Any) -> TensorEdge:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        fail(f"tensors[{i}] must be an object with a string 'name'")
    name = item["name"]
    for key in ("consumers", "shape", "dtype"):
        if key not in item:
            fail(f"tensor {name!r}: missing field {key!r}")
    producer = item.get("producer")
    if producer is not None and not isinstance(producer, str):
        fail(f"tensor {name!r}: producer must be a unit name or null")
    consumers = item["consumers"]
    if not isinstance(consumers, list) or not all(isinstance(v, str) for v in consumers):
        fail(f"tensor {name!r}: consumers must be a list of unit names")
    shape = item["shape"]
    if not isinstance(shape, list):
        fail(f"tensor {name!r}: shape must be a list of integers")
    output = item.get("output", False)
    if not isinstance(output, bool):
        fail(f"tensor {name!r}: output must be true or false")
    return TensorEdge(name, producer, tuple(consumers), tuple(shape), str(item["dtype"]), output)


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

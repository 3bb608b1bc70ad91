"""The records of a pick problem: choices, units, tensors, links, pairwise costs, the dtype and
inference-type tables they use, and :class:`ProblemData`, what the checks, the JSON writer and
the index read of a problem (:class:`tacopt.partitioner.problem.PickProblem` has it all)."""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tacopt.fusion.ir.vocabulary import ACTIVATION_FORMAT, INFERENCE_TYPES, PRICED_DTYPE_NBYTES
from tacopt.partitioner.errors import ProblemError

#: The pick problem's vocabulary is fusion's (:mod:`tacopt.fusion.ir.vocabulary`): the inference
#: types, the format their activations travel in (HYBRID's are FLOAT: no conversion between them,
#: as in TAC's GetQuantDequantCost) and the whole-byte sizes of the dtypes a problem prices
#: (``PRICED_DTYPE_NBYTES``).

# Every total a plan can reach must stay below this. float64 holds far more, but the solvers do
# not: HiGHS reads 1e20 as infinity and CP-SAT needs integer costs below 2**63. Costs in µs or
# in TAC's units are many orders of magnitude smaller.
MAX_TOTAL = 1e18
# A tensor holds fewer bytes than this (the byte count of any real tensor fits an int64).
MAX_NBYTES = 2**63

# Names are printed in tables and one-line errors: no control characters, no lone surrogates
# (which cannot be written as UTF-8).
BAD_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


_short = reprlib.Repr()
_short.maxlevel, _short.maxstring, _short.maxother = 2, 40, 40
_short.maxlist = _short.maxdict = 4


def show(value: Any) -> str:
    """A short one-line repr of any decoded JSON value, for error messages."""
    if isinstance(value, float) and math.isinf(value):  # also how 10**400 and 1e400 are read
        return f"{value} (beyond float64)"
    return _short.repr(value)


@dataclass(frozen=True, slots=True)
class Named:
    """``unit 'name'`` in an error message, formatted only when the message is."""

    kind: str
    name: Any

    def __str__(self) -> str:
        return f"{self.kind} {show(self.name)}"


@dataclass(frozen=True, slots=True)
class Choice:
    """One way to run a unit: on ``device`` as inference ``type``, at ``cost``.

    ``memory`` is the bytes the choice holds on its device while its unit is resident (the
    whole run, or the unit's ``interval``); it counts against the device's capacity.
    ``variant`` tells apart several choices of one unit on the same device and type (an IOPDDL
    contest node's strategies, a second view of the same subgraph); usually empty.
    """

    device: str
    type: str
    cost: float
    memory: float = 0.0
    variant: str = ""

    @property
    def label(self) -> str:
        """``DEVICE/TYPE`` (``DEVICE/TYPE:VARIANT`` with a variant), as ``initial`` names it.

        >>> Choice("mesh", "FLOAT", 3, variant="2").label
        'mesh/FLOAT:2'
        """
        head = f"{self.device}/{self.type}"
        return f"{head}:{self.variant}" if self.variant else head

    @property
    def key(self) -> tuple[str, str, str]:
        """``(device, type, variant)``: what tells a unit's choices apart."""
        return (self.device, self.type, self.variant)


@dataclass(frozen=True, slots=True)
class Unit:
    """A subgraph to place, with its alternatives; ``initial`` indexes the plan TAC starts from.

    ``interval`` is the half-open range of steps ``(start, end)`` during which the chosen
    choice's ``memory`` is held (an IOPDDL node's live range; ``end <= start`` holds nothing);
    None holds it for the whole run.
    """

    name: str
    choices: tuple[Choice, ...]
    initial: int = 0
    interval: tuple[int, int] | None = None


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
class Pairwise:
    """A cost added when units ``a`` and ``b`` run as their choices ``i`` and ``j``: ``cost[i][j]``.

    The matrix has one row per choice of ``a`` and one column per choice of ``b`` (any
    interaction worth pricing: a per-pair transfer, a layout change, a resharding).
    """

    a: str
    b: str
    cost: tuple[tuple[float, ...], ...]


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
        return PRICED_DTYPE_NBYTES[dtype]
    except KeyError:
        known = ", ".join(PRICED_DTYPE_NBYTES)
        raise ProblemError(f"unknown dtype {dtype!r}; known: {known}") from None


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
        return ACTIVATION_FORMAT[inference_type]
    except KeyError:
        known = ", ".join(INFERENCE_TYPES)
        raise ProblemError(f"unknown inference type {inference_type!r}; known: {known}") from None


class ProblemData(Protocol):
    """The fields of a pick problem that :mod:`.checks`, :mod:`.json_form` and :mod:`.index`
    read (so that they need not import :class:`~tacopt.partitioner.problem.PickProblem`, which
    is built from them)."""

    @property
    def units(self) -> tuple[Unit, ...]: ...
    @property
    def tensors(self) -> tuple[TensorEdge, ...]: ...
    @property
    def transfer(self) -> Link: ...
    @property
    def quant_per_element(self) -> float: ...
    @property
    def host(self) -> str: ...
    @property
    def boundaries(self) -> bool: ...
    @property
    def links(self) -> Mapping[tuple[str, str], Link]: ...
    @property
    def cost_unit(self) -> str: ...
    @property
    def capacity(self) -> Mapping[str, float]: ...
    @property
    def pairwise(self) -> tuple[Pairwise, ...]: ...
    def link(self, src: str, dst: str) -> Link: ...

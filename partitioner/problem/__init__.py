"""The pick problem: units with alternative implementations, and the tensors between them.

A :class:`PickProblem` is what every picker reads. Each :class:`Unit` (a subgraph, in TAC's
words) has a few :class:`Choice` s, one per (device, inference type) it can run as, each with its
own compute cost and the memory it holds on its device. Each :class:`TensorEdge` goes from a
producer unit (or from the graph inputs) to consumer units (and maybe to the graph outputs).
Devices may have a capacity in bytes, and :class:`Pairwise` costs price pairs of choices. The
objective a plan is charged is defined once, in :func:`tacopt.partitioner.plan.evaluate`; the
file format is described in ``docs/pick-problem.md``.

The pieces live along their ideas: the records in :mod:`~tacopt.partitioner.problem.records`, the
JSON form in :mod:`~tacopt.partitioner.problem.json_form`, the checks in
:mod:`~tacopt.partitioner.problem.checks` and the flat arrays (:func:`index_problem`) in
:mod:`~tacopt.partitioner.problem.index`; this module re-exports their public names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tacopt.io import atomic_write
from tacopt.partitioner.errors import ProblemError
from tacopt.partitioner.problem.checks import validate_problem
from tacopt.partitioner.problem.index import ProblemIndex, index_problem
from tacopt.partitioner.problem.json_form import decode_problem, problem_fields, problem_to_dict
from tacopt.partitioner.problem.records import (
    INFERENCE_TYPES,
    MAX_NBYTES,
    MAX_TOTAL,
    Choice,
    Link,
    Pairwise,
    TensorEdge,
    Unit,
    activation_format,
    dtype_nbytes,
    type_of_dtype,
)

__all__ = [
    "INFERENCE_TYPES",
    "MAX_NBYTES",
    "MAX_TOTAL",
    "Choice",
    "Link",
    "Pairwise",
    "PickProblem",
    "ProblemIndex",
    "TensorEdge",
    "Unit",
    "activation_format",
    "dtype_nbytes",
    "index_problem",
    "load_problem",
    "save_problem",
    "type_of_dtype",
    "validate_problem",
]


@dataclass(frozen=True, slots=True)
class PickProblem:
    """Units, tensors and the transfer and conversion prices of a pick problem.

    ``links`` overrides ``transfer`` for a (from device, to device) pair. With
    ``boundaries=False`` graph inputs and outputs cost nothing, as in TAC. ``cost_unit`` names
    the unit of every cost and price (``"us"``, ``"tac"`` for TAC's cost units, ...); plans
    report their objective in it. ``capacity`` maps a device to the bytes it can hold (a
    device not listed is unlimited); ``pairwise`` adds costs over pairs of units' choices.
    """

    units: tuple[Unit, ...]
    tensors: tuple[TensorEdge, ...]
    transfer: Link
    quant_per_element: float
    host: str = "CPU"
    boundaries: bool = True
    links: Mapping[tuple[str, str], Link] = field(default_factory=dict)
    cost_unit: str = "cost"
    capacity: Mapping[str, float] = field(default_factory=dict)
    pairwise: tuple[Pairwise, ...] = ()

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
        problem = cls(**problem_fields(data, source))
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
        return problem_to_dict(self)



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
    return PickProblem.from_dict(decode_problem(raw, str(path)), source=str(path))


def save_problem(problem: PickProblem, path: str | os.PathLike[str]) -> Path:
    """Write ``problem`` as JSON to ``path`` atomically and return the path."""
    return atomic_write(path, json.dumps(problem.to_dict(), indent=1) + "\n")

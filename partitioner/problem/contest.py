"""IOPDDL contest instances (``google/iopddl``) read into a :class:`PickProblem`.

A contest problem picks one strategy per node. Its cost is the sum of the chosen strategies'
costs plus, for every edge ``(u, v)``, the entry ``s_u * |S_v| + s_v`` of the edge's row-major
cost matrix; it is invalid if at any time step ``t`` the summed usage of the nodes whose
half-open interval ``[start, end)`` contains ``t`` exceeds ``usage_limit`` (no limit when the
field is absent).

As a pick problem: node ``i`` is unit ``"i"`` with ``interval = (start, end)``; strategy ``k``
is its choice ``Choice("mesh", "FLOAT", cost, memory=usage, variant="k")``; edge ``(u, v)`` is
a :class:`Pairwise` matrix (a self-loop's diagonal is added to the node's costs, which is what
the contest charges); the usage limit is the capacity of the one device ``mesh``. There are no
tensors, so :func:`tacopt.partitioner.plan.evaluate` charges exactly the contest's cost, summed
in exact integers, and the memory check is the contest's rule (an interval with
``end <= start`` holds nothing). Costs of 10^18 and more are the contest's infinity: the
problem keeps them (a plan using one is valid, and costs that much); the solver avoids them.

The file is JSON, plain or gzip-compressed (recognised by its magic bytes, not its name)::

    {"problem": {"name": ..., "nodes": {"intervals": [[start, end], ...],
                                        "costs": [[per strategy], ...],
                                        "usages": [[per strategy], ...]},
                 "edges": {"nodes": [[u, v], ...], "costs": [[|S_u| * |S_v| entries], ...]},
                 "usage_limit": L}}

A solution is a JSON list of strategy indices, one per node (:func:`solution_indices`).

Examples
--------
>>> from tacopt.partitioner.plan import evaluate
>>> p = problem_from_dict({"problem": {"name": "tiny",
...     "nodes": {"intervals": [[0, 2], [1, 3]], "costs": [[5, 1], [2]], "usages": [[1, 4], [2]]},
...     "edges": {"nodes": [[0, 1]], "costs": [[10, 0]]}, "usage_limit": 5}})
>>> [c.label for c in p.units[0].choices], p.capacity
(['mesh/FLOAT:0', 'mesh/FLOAT:1'], {'mesh': 5})
>>> evaluate(p, {"0": p.units[0].choices[0], "1": p.units[1].choices[0]}).total
17
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from tacopt.errors import TacoptError
from tacopt.io import atomic_write, decode_json
from tacopt.partitioner.problem import (
    MAX_TOTAL,
    Choice,
    Link,
    Pairwise,
    PickProblem,
    Unit,
    validate_problem,
)
from tacopt.partitioner.problem.json_form import MAX_INFLATED_BYTES

#: Largest value an int64 field of the contest may hold.
INT64_MAX = 2**63 - 1
#: The one device of a contest problem; its capacity is the usage limit.
DEVICE = "mesh"


class IopddlError(TacoptError):
    """A contest problem or solution file that cannot be used (the message names the field)."""


def check_solution(problem: PickProblem, solution: Any) -> np.ndarray:
    """``solution`` as an int64 array after the evaluator's checks (size, index range)."""
    n = len(problem.units)
    if not isinstance(solution, (list, tuple, np.ndarray)):
        raise IopddlError(f"solution: a list of strategy indices, not {type(solution).__name__}")
    if len(solution) != n:
        raise IopddlError(f"solution: {len(solution)} strategy indices for {n} nodes")
    if isinstance(solution, np.ndarray):
        x = solution.astype(np.int64, copy=False)
    else:
        if any(type(s) is not int for s in solution):
            bad = next(i for i, s in enumerate(solution) if type(s) is not int)
            raise IopddlError(f"solution[{bad}]: {solution[bad]!r} is not an integer index")
        x = np.array(solution, dtype=np.int64).reshape(len(solution))
    k = np.array([len(u.choices) for u in problem.units], dtype=np.int64)
    out = (x < 0) | (x >= k)
    if out.any():
        i = int(np.argmax(out))
        raise IopddlError(
            f"solution[{i}]: strategy {int(x[i])} out of range (node {i} has {int(k[i])})"
        )
    return x


def solution_indices(problem: PickProblem, assignment: Mapping[str, Choice]) -> list[int]:
    """The contest's solution of a plan's ``assignment``: each unit's choice index, in the
    problem's unit order (for any pick problem: the position of the choice in its unit)."""
    return [u.choices.index(assignment[u.name]) for u in problem.units]


def solution_assignment(problem: PickProblem, solution: Any) -> dict[str, Choice]:
    """The assignment (unit name to choice) of a contest solution, checked first."""
    x = check_solution(problem, solution).tolist()
    return {u.name: u.choices[k] for u, k in zip(problem.units, x)}


def read_solution(path: str | os.PathLike[str], problem: PickProblem) -> np.ndarray:
    """Read a contest solution file (a JSON list of strategy indices) checked against
    ``problem``."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise IopddlError(f"{path}: cannot read: {exc.strerror or exc}") from None
    data = decode_json(raw, str(path), MAX_INFLATED_BYTES, error=IopddlError)
    try:
        return check_solution(problem, data)
    except IopddlError as exc:
        raise IopddlError(f"{path}: {exc}") from None


def solution_json(solution: Any) -> str:
    """The contest's solution format: one JSON list of strategy indices."""
    return json.dumps([int(s) for s in solution]) + "\n"


def write_solution(path: str | os.PathLike[str], solution: Any) -> Path:
    """Write ``solution`` in the contest's format, atomically."""
    return atomic_write(path, solution_json(solution))


def is_iopddl(data: Any) -> bool:
    """Whether decoded JSON looks like a contest problem (``problem.nodes`` and ``.edges``)."""
    inner = data.get("problem") if isinstance(data, dict) else None
    return isinstance(inner, dict) and "nodes" in inner and "edges" in inner


def decode_file(raw: bytes, source: str, *, limit: int | None = None) -> Any:
    """The JSON value of a file's bytes, gunzipped first when they start with gzip's magic (at
    most ``limit`` bytes inflated, default :data:`MAX_INFLATED_BYTES`)."""
    limit = MAX_INFLATED_BYTES if limit is None else limit
    return decode_json(raw, source, limit, error=IopddlError)



def load_iopddl(path: str | os.PathLike[str]) -> PickProblem:
    """Read and check a contest problem from a ``.json`` or ``.json.gz`` file.

    Raises
    ------
    IopddlError
        If the file cannot be read, is not (gzip) JSON, or a field is missing or wrong (the
        message names the file and the field).
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise IopddlError(f"{path}: cannot read: {exc.strerror or exc}") from None
    data = decode_file(raw, str(path))
    if not is_iopddl(data):
        raise IopddlError(f"{path}: not a contest problem (no problem.nodes / problem.edges)")
    return problem_from_dict(data, source=str(path))


def problem_from_dict(data: Any, source: str = "problem") -> PickProblem:
    """Build a checked :class:`PickProblem` from the decoded contest JSON."""
    where = f"{source}: problem"
    p = _field(data, "problem", source, dict)
    nodes = _field(p, "nodes", where, dict)
    edges = _field(p, "edges", where, dict)
    name = p.get("name", "")  # the problem's own name; the pick problem is named by its file
    if not isinstance(name, str):
        raise IopddlError(f"{where}.name: a string, not {type(name).__name__}")

    intervals = _field(nodes, "intervals", f"{where}.nodes", list)
    n = len(intervals)
    lens, costs = _ragged(_field(nodes, "costs", f"{where}.nodes", list), f"{where}.nodes.costs")
    ulens, usages = _ragged(
        _field(nodes, "usages", f"{where}.nodes", list), f"{where}.nodes.usages"
    )
    for field, got in (("costs", lens), ("usages", ulens)):
        if len(got) != n:
            raise IopddlError(f"{where}.nodes.{field}: {len(got)} rows for {n} intervals")
    _first_bad(lens != ulens, f"{where}.nodes.usages", "strategies, not as many as its costs",
               lens=ulens)  # fmt: skip
    _first_bad(lens == 0, f"{where}.nodes.costs", "no strategy", lens=lens)
    _refuse_overflow(costs, lens, f"{where}.nodes.costs")
    interval = _pairs(intervals, f"{where}.nodes.intervals")

    pairs = _field(edges, "nodes", f"{where}.edges", list)
    edge_nodes = _pairs(pairs, f"{where}.edges.nodes")
    outside = (edge_nodes >= n).any(axis=1) if len(edge_nodes) else np.zeros(0, dtype=bool)
    _first_bad(np.asarray(outside), f"{where}.edges.nodes", f"a node index >= {n} nodes")
    mats = _field(edges, "costs", f"{where}.edges", list)
    elens, edge_cost = _ragged(mats, f"{where}.edges.costs")
    _refuse_overflow(edge_cost, elens, f"{where}.edges.costs")
    if len(elens) != len(edge_nodes):
        raise IopddlError(f"{where}.edges.costs: {len(elens)} matrices for {len(edge_nodes)} edges")
    need = lens[edge_nodes[:, 0]] * lens[edge_nodes[:, 1]] if len(edge_nodes) else elens
    _first_bad(elens != need, f"{where}.edges.costs", "entries, not |S_u| * |S_v|", lens=elens)

    limit = p.get("usage_limit")
    if limit is not None and (type(limit) is not int or not 0 <= limit <= INT64_MAX):
        raise IopddlError(f"{where}.usage_limit: {limit!r} is not an integer in [0, 2^63)")
    problem = _pick_problem(lens, costs, usages, interval, edge_nodes, elens, edge_cost, limit)
    validate_problem(problem, source=source)
    return problem


def _pick_problem(lens, costs, usages, interval, edge_nodes, elens, edge_cost, limit):
    """The pick problem of the checked contest arrays (a self-loop's diagonal joins the costs)."""
    n = len(lens)
    offset = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    cost = costs.copy()
    eoff = np.concatenate(([0], np.cumsum(elens))).astype(np.int64)
    loops = np.flatnonzero(edge_nodes[:, 0] == edge_nodes[:, 1]) if len(edge_nodes) else []
    for e in loops:
        u = int(edge_nodes[e, 0])
        k = int(lens[u])
        diagonal = edge_cost[eoff[e] : eoff[e + 1]][:: k + 1]
        # Held at 2^63 - 1: a strategy whose loops sum beyond it is forbidden many times over.
        own = cost[offset[u] : offset[u + 1]]
        own += np.minimum(diagonal, INT64_MAX - own)
    names = [str(i) for i in range(n)]
    widest = int(lens.max(initial=0))
    variants = [str(k) for k in range(widest)]
    # Choices are frozen: one object per distinct (cost, usage, strategy number), shared by
    # the nodes that have it (A: 213,736 choices, 3,066 distinct).
    rank = np.arange(len(cost), dtype=np.int64) - np.repeat(offset[:-1], lens)
    shared = {}  # (cost, usage, strategy number) -> its Choice
    flat = []
    for key in zip(cost.tolist(), usages.tolist(), rank.tolist()):
        choice = shared.get(key)
        if choice is None:
            choice = shared[key] = Choice(DEVICE, "FLOAT", key[0], key[1], variants[key[2]])
        flat.append(choice)
    units = []
    for i, (lo, hi, span) in enumerate(zip(offset[:-1].tolist(), offset[1:].tolist(),
                                           interval.tolist())):  # fmt: skip
        units.append(Unit(names[i], tuple(flat[lo:hi]), 0, tuple(span)))
    # Every matrix row of every edge at once (A: 430,000 rows of 5.9 million entries), then
    # each edge's rows as one tuple.
    kept = np.flatnonzero(edge_nodes[:, 0] != edge_nodes[:, 1]) if len(edge_nodes) else []
    n_rows = lens[edge_nodes[kept, 0]] if len(kept) else np.zeros(0, np.int64)
    width = lens[edge_nodes[kept, 1]] if len(kept) else np.zeros(0, np.int64)
    first_row = np.concatenate(([0], np.cumsum(n_rows))).astype(np.int64)
    edge_of_row = np.repeat(np.arange(len(kept)), n_rows)
    row_start = eoff[np.asarray(kept, np.int64)][edge_of_row] + (
        np.arange(first_row[-1]) - first_row[edge_of_row]) * width[edge_of_row]  # fmt: skip
    flat_edges = edge_cost.tolist()
    rows = list(map(tuple, map(flat_edges.__getitem__,
                               map(slice, row_start.tolist(),
                                   (row_start + width[edge_of_row]).tolist()))))  # fmt: skip
    ends = edge_nodes[kept].tolist() if len(kept) else []
    pairs = [Pairwise(names[u], names[v], tuple(rows[lo:hi]))
             for (u, v), lo, hi in zip(ends, first_row[:-1].tolist(), first_row[1:].tolist())]
    return PickProblem(tuple(units), (), Link(0, 0), 0, host=DEVICE, boundaries=False,
                       capacity={} if limit is None else {DEVICE: limit},
                       pairwise=tuple(pairs))  # fmt: skip


def _field(obj: Any, key: str, where: str, kind: type) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise IopddlError(f"{where}: missing field {key!r}")
    if not isinstance(obj[key], kind):
        raise IopddlError(f"{where}.{key}: a JSON {_KIND[kind]}, not {type(obj[key]).__name__}")
    return obj[key]


_KIND: dict[type, str] = {dict: "object", list: "array"}


def _ragged(rows: list[Any], where: str) -> tuple[np.ndarray, np.ndarray]:
    """Row lengths and the flat int64 values of a list of integer lists (checked)."""
    for i, row in enumerate(rows):
        if not isinstance(row, list):
            raise IopddlError(f"{where}[{i}]: an array, not {type(row).__name__}")
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    flat = list(chain.from_iterable(rows))
    values = _integers(flat, lambda j: _locate(lens, j, where))
    return lens, values


def _pairs(rows: list[Any], where: str) -> np.ndarray:
    lens, flat = _ragged(rows, where)
    _first_bad(lens != 2, where, "values, not a pair [a, b]", lens=lens)
    return flat.reshape(len(rows), 2)


def _integers(flat: list[Any], locate: Any) -> np.ndarray:
    """``flat`` as int64 values in [0, 2^63); the first bad one is reported via ``locate(j)``."""
    if set(map(type, flat)) <= {int}:  # the common case at C speed; bools are not ints here
        try:
            values = np.array(flat, dtype=np.int64) if flat else np.zeros(0, dtype=np.int64)
        except OverflowError:
            values = None
        if values is not None and not (values < 0).any():
            return values
    for j, v in enumerate(flat):  # a plain scan: bools and strings would slip into an array
        if type(v) is not int or v < 0 or v > INT64_MAX:
            if isinstance(v, float) and v.is_integer() and 0 <= v <= INT64_MAX:
                continue  # 3.0 is the number 3 in JSON
            raise IopddlError(f"{locate(j)}: {v!r} is not an integer in [0, 2^63)")
    return np.array(flat, dtype=np.int64) if flat else np.zeros(0, dtype=np.int64)


def _locate(lens: np.ndarray, j: int, where: str) -> str:
    row = int(np.searchsorted(np.cumsum(lens), j, side="right"))
    return f"{where}[{row}][{j - int(lens[:row].sum())}]"


def _refuse_overflow(values: np.ndarray, lens: np.ndarray, where: str) -> None:
    """Refuse a cost above the contest's forbidden cost (:data:`MAX_TOTAL`, 10^18): the pickers
    add a node's cost to its edges' in int64, where two such costs already overflow."""
    over = np.flatnonzero(values > int(MAX_TOTAL))
    if len(over):
        j = int(over[0])
        raise IopddlError(
            f"{_locate(lens, j, where)}: {int(values[j])} is above 10^18, the contest's forbidden "
            "cost; sums of such costs overflow exact integer arithmetic (write 10^18 to forbid)"
        )


def _first_bad(mask: np.ndarray, where: str, what: str, lens: np.ndarray | None = None) -> None:
    if mask.any():
        i = int(np.argmax(mask))
        count = f"{int(lens[i])} " if lens is not None else ""
        raise IopddlError(f"{where}[{i}]: {count}{what}")

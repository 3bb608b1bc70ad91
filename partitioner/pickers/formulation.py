"""The exact picker: an integer program over all units at once, solved through OR-Tools.

Model (data, variables, constraints, objective), in the words of ``docs/pick-problem.md``:

Capacities add, per limited device ``d``, a resident-memory variable ``r_d`` (its choices'
bytes over the capacity) and one row per step where a tensor starts and the worst case could
overflow: ``r_d + sum of live tensors' bytes over capacity * (y_p(d) + need[t, d]) <= 1`` (a
tensor is on d if its producer is, or if it is moved there). Pairwise costs add the local
marginal polytope: ``w_ij >= 0``, ``sum_j w_ij = x_ai``, ``sum_i w_ij = x_bj``.

The matrix is built with numpy and handed to OR-Tools' model builder in one call
(``fill_model_from_sparse_data``): 0.05 s for 10,000 units, so the time is the solver's.
Joint rows that the device and format rows imply are left out (see ``_needed_pair_rows``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tacopt.partitioner.problem import ProblemIndex

if TYPE_CHECKING:  # scipy loads when a model is built: a trivial problem never starts a solver
    import scipy.sparse as sp


@dataclass(frozen=True, slots=True)
class LinearModel:
    """``min cost @ v`` s.t. ``row_lb <= matrix @ v <= row_ub``, ``0 <= v <= 1``.

    The first ``n_choices`` variables are the choice binaries ``x``; the rest are auxiliary
    (``need``, ``conv``, ``extra``). ``owner[r]`` is the auxiliary variable row ``r`` bounds
    from below (used to complete a warm start).
    """

    cost: np.ndarray
    matrix: sp.csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    n_choices: int
    owner: np.ndarray


def build_model(index: ProblemIndex) -> LinearModel:
    """The integer program of ``index`` as sparse arrays (see the module docstring)."""
    n_choices = len(index.choice_cost)
    n_units = index.n_units
    n_fmt = len(index.formats)
    host = np.full(len(index.src_unit), index.host_dev)
    model = _Blocks(index.choice_cost)
    # Every unit runs as exactly one of its choices.
    model.add(index.choice_unit, np.arange(n_choices), np.ones(n_choices), np.ones(n_units))
    # Each tensor pays one transfer per device it must reach and does not start on.
    dev_rows = _linking_rows(index, index.choice_dev, len(index.devices), index.src_dev, host)
    need = _add_need(model, index, dev_rows, index.choice_dev, index.src_dev, index.transfer_cost)
    if index.quant_per_element > 0:
        # Each tensor pays one conversion per format it must reach and does not start in.
        fmt_rows = _linking_rows(index, index.choice_fmt, n_fmt, index.src_fmt, index.host_fmt)
        conv = _add_need(model, index, fmt_rows, index.choice_fmt, index.src_fmt, index.quant_cost)
        # A consumer on (d, q) that its producer is not on needs a transfer to d or a
        # conversion to q: need[t, d] + conv[t, q] >= x_v(d, q) - x_p(d, q). Without this
        # row the LP mixes one unit's devices with another's formats and is not integral.
        joint = index.choice_dev * n_fmt + index.choice_fmt
        pair_rows = _linking_rows(
            index,
            joint,
            len(index.devices) * n_fmt,
            index.src_dev * n_fmt + index.src_fmt,
            host * n_fmt + index.host_fmt,
        )
        pair_rows = _needed_pair_rows(index, pair_rows)
        d, q = np.divmod(pair_rows.kind, n_fmt)
        rows, cols = [pair_rows.rows], [pair_rows.cols]
        for lookup, key in (
            (need, pair_rows.t * len(index.devices) + d),
            (conv, pair_rows.t * n_fmt + q),
        ):
            found, column = lookup(key)
            rows.append(np.flatnonzero(found))
            cols.append(column[found])
        vals = np.concatenate([pair_rows.vals, np.ones(sum(len(r) for r in rows[1:]))])
        model.add(np.concatenate(rows), np.concatenate(cols), vals, pair_rows.lb)
    if index.has_pairwise:
        _add_pairwise(model, index)
    if index.has_memory:
        _add_memory(model, index, dev_rows, need)
    return model.finish()


def _add_pairwise(model: _Blocks, index: ProblemIndex) -> None:
    """One ``w`` per entry of each pairwise matrix, tied to the two units' choices."""
    start = index.choice_start
    n_a = np.diff(start)[index.pair_a]
    n_b = np.diff(start)[index.pair_b]
    first_w = model.n_vars
    model.new_vars(index.pair_cost)
    polytope = local_polytope(n_a, n_b, start[index.pair_a], start[index.pair_b], first_w)
    n_rows = polytope.n_rows
    model.add_range(polytope.rows, polytope.cols, polytope.vals, np.zeros(n_rows),
                    np.zeros(n_rows))  # fmt: skip


@dataclass(frozen=True, slots=True)
class LocalPolytope:
    """The rows of :func:`local_polytope` (``rows``, ``cols``, ``vals``: all ``= 0``), and
    which matrix entry each ``w`` column stands for (``entry``, in column order)."""

    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    n_rows: int
    entry: np.ndarray


def local_polytope(
    n_a: np.ndarray,
    n_b: np.ndarray,
    first_a: np.ndarray,
    first_b: np.ndarray,
    first_w: int,
    keep: np.ndarray | None = None,
) -> LocalPolytope:
    """The local marginal polytope of pairwise matrices: the one builder of these rows.

    Matrix ``e`` is ``n_a[e] x n_b[e]`` between the choices of two units whose choice columns
    start at ``first_a[e]`` and ``first_b[e]``; its entries are numbered row-major, matrix after
    matrix. Each entry kept (``keep``, all if None) gets a column ``w`` from ``first_w`` on, and
    the rows are ``sum_j w[e, i, j] - x[first_a[e] + i] = 0`` for every ``(e, i)``, then
    ``sum_i w[e, i, j] - x[first_b[e] + j] = 0`` for every ``(e, j)`` (tight for trees).

    Examples
    --------
    >>> p = local_polytope(np.array([2]), np.array([2]), np.array([0]), np.array([2]), 4)
    >>> p.n_rows, p.entry.tolist()
    (4, [0, 1, 2, 3])
    """
    sizes = n_a * n_b
    pair_of = np.repeat(np.arange(len(sizes)), sizes)
    local = np.arange(len(pair_of)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    i, j = np.divmod(local, np.maximum(n_b[pair_of], 1))
    entry = np.arange(len(pair_of)) if keep is None else np.flatnonzero(keep)
    pair_of, i, j = pair_of[entry], i[entry], j[entry]
    w = first_w + np.arange(len(entry))
    # Row blocks: (pair, i) for the a side, then (pair, j) for the b side.
    a_first = np.cumsum(n_a) - n_a
    b_first = np.cumsum(n_b) - n_b + int(n_a.sum())
    x_a = np.repeat(first_a, n_a) + _within(n_a)
    x_b = np.repeat(first_b, n_b) + _within(n_b)
    n_rows = int(n_a.sum() + n_b.sum())
    return LocalPolytope(
        rows=np.concatenate([a_first[pair_of] + i, b_first[pair_of] + j, np.arange(n_rows)]),
        cols=np.concatenate([w, w, x_a, x_b]),
        vals=np.concatenate([np.ones(2 * len(w)), -np.ones(n_rows)]),
        n_rows=n_rows,
        entry=entry,
    )


def _within(size: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s)`` for each ``s`` in ``size``."""
    return np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)


def _add_memory(model: _Blocks, index: ProblemIndex, dev_rows: _LinkingRows, need: Any) -> None:
    """Capacity rows at the steps where a tensor starts, where the worst case may overflow."""
    n_dev = len(index.devices)
    n_t = len(index.src_unit)
    nbytes = index.nbytes
    producer = index.src_unit
    # Which devices each tensor can be on: its producer's choices, or a move row (need).
    can = np.zeros((n_t, n_dev), dtype=bool)
    p_of, p_choice = _expand_producer(index, np.arange(n_t), producer)
    can[p_of, index.choice_dev[p_choice]] = True
    can[producer < 0, index.host_dev] = True
    can[dev_rows.t, dev_rows.kind] = True
    steps = np.unique(np.concatenate([[0], index.live_start]))
    # Whole bytes: a row may then allow half a byte more than the capacity (floor + 0.5), so
    # that a solver's tolerance cannot let a plan one byte over pass as feasible.
    whole = bool(np.all(index.choice_memory == np.floor(index.choice_memory))
                 and np.all(nbytes == np.floor(nbytes)))  # fmt: skip
    for d in np.flatnonzero(np.isfinite(index.capacity)).tolist():
        cap = max(float(index.capacity[d]), 1e-9)
        room = (math.floor(cap) + 0.5) / cap if whole else 1.0
        on_d = index.choice_dev == d
        most = np.zeros(index.n_units)
        np.maximum.at(most, index.choice_unit[on_d], index.choice_memory[on_d])
        live_here = can[:, d] & (nbytes > 0)
        # Worst-case bytes on d at each candidate step: every unit at its largest choice on d
        # and every tensor that can be on d.
        t_live = np.flatnonzero(live_here)
        s_of = np.searchsorted(steps, index.live_start[t_live])
        e_of = np.searchsorted(steps, index.live_end[t_live], side="right")
        worst = np.zeros(len(steps) + 1)
        np.add.at(worst, s_of, nbytes[t_live])
        np.add.at(worst, e_of, -nbytes[t_live])
        worst = np.cumsum(worst)[:-1] + most.sum()
        tight = np.flatnonzero(worst > cap * (1 + 1e-12))
        if len(tight) == 0:
            continue
        # r_d = resident bytes on d / capacity.
        r = model.new_vars(np.zeros(1))
        k = np.flatnonzero(on_d & (index.choice_memory > 0))
        model.add_range(np.zeros(len(k) + 1, np.int64), np.concatenate([k, r]),
                        np.concatenate([index.choice_memory[k] / cap, [-1.0]]),
                        np.zeros(1), np.zeros(1))  # fmt: skip
        # Each live tensor enters every tight row its interval covers.
        row_of_step = np.full(len(steps), -1)
        row_of_step[tight] = np.arange(len(tight))
        span = e_of - s_of
        t_rep = np.repeat(t_live, span)
        offset = np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span)
        s_rep = np.repeat(s_of, span) + offset
        keep = row_of_step[s_rep] >= 0
        t_rep, row_rep = t_rep[keep], row_of_step[s_rep[keep]]
        weight = nbytes[t_rep] / cap
        rows, cols = [np.arange(len(tight))], [np.repeat(r, len(tight))]
        vals = [np.ones(len(tight))]
        # The producer's choices on d ...
        items, choice = _expand_producer(index, np.arange(len(t_rep)), producer[t_rep])
        on = index.choice_dev[choice] == d
        rows.append(row_rep[items[on]])
        cols.append(choice[on])
        vals.append(weight[items[on]])
        # ... or a move there (need[t, d]); a graph input is on the host from the start.
        found, column = need(t_rep * n_dev + d)
        rows.append(row_rep[found])
        cols.append(column[found])
        vals.append(weight[found])
        fixed = np.zeros(len(tight))
        on_host = (producer[t_rep] < 0) & (d == index.host_dev)
        np.add.at(fixed, row_rep[on_host], weight[on_host])
        model.add_range(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                        np.full(len(tight), -np.inf), room - fixed)  # fmt: skip


def _needed_pair_rows(index: ProblemIndex, pair: _LinkingRows) -> _LinkingRows:
    """The joint rows not implied by the device and format rows.

    A joint row (d, q) of an arc p -> v is implied unless both p and v have choices on several
    devices *and* in several formats. If p is only on d0, ``x_p(d0, q) = z_p(q)`` and the
    format row (``d = d0``) or the device row (``d != d0``, where ``x_p(d, q) = 0``) implies
    it; likewise if p has one format. If v is only in q0 (only its ``(d, q0)`` rows exist),
    the device plus format rows give ``need + conv >= y_v(d) + 1 - y_p(d) - z_p(q0)``, and
    ``y_p(d) + z_p(q0) - x_p(d, q0) <= 1`` (the x of p's choices on d or in q0) makes that at
    least ``x_v(d, q0) - x_p(d, q0)``; a one-device v is symmetric. Graph inputs and outputs
    are fixed (one device, one format). Rows a fixed kind made vacuous were never added.
    """
    several = (_only_kind(index, index.choice_dev) < 0) & (_only_kind(index, index.choice_fmt) < 0)
    keep = (pair.producer >= 0) & (pair.consumer >= 0)
    keep[keep] = several[pair.producer[keep]] & several[pair.consumer[keep]]
    new_row = np.cumsum(keep) - 1
    entry = keep[pair.rows]
    return _LinkingRows(
        n_kind=pair.n_kind,
        t=pair.t[keep],
        kind=pair.kind[keep],
        lb=pair.lb[keep],
        producer=pair.producer[keep],
        consumer=pair.consumer[keep],
        rows=new_row[pair.rows[entry]],
        cols=pair.cols[entry],
        vals=pair.vals[entry],
    )


class _Blocks:
    """Accumulates row blocks and auxiliary variables of a :class:`LinearModel`."""

    def __init__(self, choice_cost: np.ndarray) -> None:
        n_choices = self.n_choices = len(choice_cost)
        self.n_rows = 0
        self.entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.lbs: list[np.ndarray] = []
        self.ubs: list[np.ndarray] = []
        self.costs: list[np.ndarray] = [choice_cost]
        self.owners: list[np.ndarray] = []
        self.n_vars = n_choices

    def new_vars(self, cost: np.ndarray) -> np.ndarray:
        first = self.n_vars
        self.costs.append(cost)
        self.n_vars += len(cost)
        return first + np.arange(len(cost))

    def add(
        self,
        rows: np.ndarray,
        cols: np.ndarray,
        vals: np.ndarray,
        lb: np.ndarray,
        owner: np.ndarray | None = None,
    ) -> None:
        """Rows ``lb <= A x`` (``== 1`` rows when ``owner`` is None and lb is all ones)."""
        self.entries.append((rows + self.n_rows, cols, vals))
        self.lbs.append(lb)
        equality = owner is None and not self.owners
        self.ubs.append(lb.copy() if equality else np.full(len(lb), np.inf))
        self.owners.append(np.full(len(lb), -1) if owner is None else owner)
        self.n_rows += len(lb)

    def add_range(
        self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, lb: np.ndarray, ub: np.ndarray
    ) -> None:
        """Rows ``lb <= A x <= ub`` owned by no auxiliary variable."""
        self.entries.append((rows + self.n_rows, cols, vals))
        self.lbs.append(np.asarray(lb, dtype=np.float64))
        self.ubs.append(np.asarray(ub, dtype=np.float64))
        self.owners.append(np.full(len(lb), -1))
        self.n_rows += len(lb)

    def finish(self) -> LinearModel:
        # scipy.sparse (about 0.15 s to import, measured) loads when a program is built: the
        # enumerate stage answers one-unit problems, and a one-unit partition, without it.
        import scipy.sparse as sp

        rows, cols, vals = (np.concatenate(part) for part in zip(*self.entries))
        matrix = sp.csr_matrix((vals, (rows, cols)), shape=(self.n_rows, self.n_vars))
        return LinearModel(
            np.concatenate(self.costs),
            matrix,
            np.concatenate(self.lbs),
            np.concatenate(self.ubs),
            self.n_choices,
            np.concatenate(self.owners),
        )


@dataclass(frozen=True, slots=True)
class _LinkingRows:
    """Rows ``owner >= y_v(kind) - y_p(kind)``, one per (arc, kind), without their owner."""

    n_kind: int
    t: np.ndarray  # tensor of each row
    kind: np.ndarray  # destination kind of each row
    lb: np.ndarray  # 0, or 1 for a graph output's row to the host
    producer: np.ndarray  # producer unit of each row, -1 for a graph input
    consumer: np.ndarray  # consumer unit of each row, -1 for a graph output's row
    rows: np.ndarray  # x entries (consumer -1, producer +1)
    cols: np.ndarray
    vals: np.ndarray


def _linking_rows(
    index: ProblemIndex,
    kind: np.ndarray,
    n_kind: int,
    src_fixed: np.ndarray,
    sink_kind: np.ndarray,
) -> _LinkingRows:
    """The linking rows of one kind (device, format, or both).

    ``kind[k]`` is the kind of choice ``k``; ``src_fixed[t]`` that of a graph input;
    ``sink_kind[t]`` that of the host for graph outputs. Rows are dropped where the tensor
    can only start on their kind (they could never bind).
    """
    start = index.choice_start
    counts = np.diff(start)[index.arc_unit]
    # Expand every (tensor, consumer) arc into the consumer's choices.
    arc_of = np.repeat(np.arange(len(index.arc_unit)), counts)
    within = np.arange(len(arc_of)) - np.repeat(np.cumsum(counts) - counts, counts)
    k_cons = start[index.arc_unit][arc_of] + within
    # One row per (arc, kind); graph outputs add a row (tensor, host) with constant 1.
    sinks = np.flatnonzero(index.to_host)
    n_arcs = len(index.arc_unit)
    row_key = np.concatenate([arc_of, n_arcs + np.arange(len(sinks))]) * n_kind + np.concatenate(
        [kind[k_cons], sink_kind[sinks]]
    )
    row_keys, row_of_entry = np.unique(row_key, return_inverse=True)
    row_t = np.concatenate([index.arc_tensor, sinks])[row_keys // n_kind]
    row_v = np.concatenate([index.arc_unit, np.full(len(sinks), -1)])[row_keys // n_kind]
    row_d = row_keys % n_kind
    is_sink = row_keys // n_kind >= n_arcs

    producer = index.src_unit[row_t]
    only = _only_kind(index, kind)
    live = np.where(producer >= 0, only[np.maximum(producer, 0)], src_fixed[row_t]) != row_d
    new_row = np.cumsum(live) - 1
    row_t, row_d, is_sink, producer = row_t[live], row_d[live], is_sink[live], producer[live]
    row_v = row_v[live]

    entry_row = row_of_entry[: len(k_cons)]
    keep = live[entry_row]
    cons_rows = new_row[entry_row][keep]
    p_rows, p_choice = _expand_producer(index, np.arange(len(row_t)), producer)
    on_d = kind[p_choice] == row_d[p_rows]
    return _LinkingRows(
        n_kind=n_kind,
        t=row_t,
        kind=row_d,
        lb=is_sink.astype(np.float64),
        producer=producer,
        consumer=row_v,
        rows=np.concatenate([cons_rows, p_rows[on_d]]),
        cols=np.concatenate([k_cons[keep], p_choice[on_d]]),
        vals=np.concatenate([-np.ones(len(cons_rows)), np.ones(int(on_d.sum()))]),
    )


def _add_need(
    model: _Blocks,
    index: ProblemIndex,
    link: _LinkingRows,
    kind: np.ndarray,
    src_fixed: np.ndarray,
    price: Any,
) -> Any:
    """Add ``need[t, d]`` (and ``extra``) variables owning ``link``'s rows; return a lookup.

    ``price(src, dst, t)`` is the cost of one move. ``need[t, d]`` costs the cheapest source
    other than ``d``; ``extra[t, s, d] >= need[t, d] + y_p(s) - 1`` pays for dearer sources.
    The lookup maps keys ``t * n_kind + d`` to (found mask, column).
    """
    n_kind = link.n_kind
    keys, need_of_row = np.unique(link.t * n_kind + link.kind, return_inverse=True)
    need_t, need_d = np.divmod(keys, n_kind)
    producer = index.src_unit[need_t]
    fixed = np.maximum(src_fixed[need_t], 0)
    base = np.where(producer < 0, price(fixed, need_d, need_t), np.inf)
    v_of, v_choice = _expand_producer(index, np.arange(len(need_t)), producer)
    s = kind[v_choice]
    elsewhere = s != need_d[v_of]
    move = price(s, need_d[v_of], need_t[v_of])
    np.minimum.at(base, v_of[elsewhere], move[elsewhere])
    need = model.new_vars(base)
    model.add(
        np.concatenate([np.arange(len(link.t)), link.rows]),
        np.concatenate([need[need_of_row], link.cols]),
        np.concatenate([np.ones(len(link.t)), link.vals]),
        link.lb,
        owner=need[need_of_row],
    )
    dear = elsewhere & (move > base[v_of] + 1e-12)
    if dear.any():
        e_keys, e_of = np.unique(v_of[dear] * n_kind + s[dear], return_inverse=True)
        e_need, e_src = np.divmod(e_keys, n_kind)
        extra = model.new_vars(price(e_src, need_d[e_need], need_t[e_need]) - base[e_need])
        n_e = len(e_keys)
        model.add(
            np.concatenate([np.arange(n_e), np.arange(n_e), e_of]),
            np.concatenate([extra, need[e_need], v_choice[dear]]),
            np.concatenate([np.ones(n_e), -np.ones(n_e), -np.ones(len(e_of))]),
            -np.ones(n_e),
            owner=extra,
        )

    def lookup(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = np.minimum(np.searchsorted(keys, key), max(len(keys) - 1, 0))
        found = keys[at] == key if len(keys) else np.zeros(len(key), bool)
        return found, need[at] if len(keys) else np.zeros(len(key), np.int64)

    return lookup


def _only_kind(index: ProblemIndex, kind: np.ndarray) -> np.ndarray:
    """Per unit: the kind all its choices share, or -1 if they differ."""
    start = index.choice_start[:-1]
    lo = np.minimum.reduceat(kind, start) if len(kind) else kind
    hi = np.maximum.reduceat(kind, start) if len(kind) else kind
    return np.where(lo == hi, lo, -1)


def _expand_producer(
    index: ProblemIndex, items: np.ndarray, producer: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (item, choice of its producer unit), skipping items whose producer is -1."""
    has = producer >= 0
    items, producer = items[has], producer[has]
    counts = np.diff(index.choice_start)[producer]
    item_of = np.repeat(items, counts)
    within = np.arange(len(item_of)) - np.repeat(np.cumsum(counts) - counts, counts)
    return item_of, index.choice_start[producer].repeat(counts) + within

"""The partitioning pipeline as straight-line code: annotate, raise, views, cost, pick, apply.

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph, validate_graph
>>> G = make_graph("g", [Tensor(n, (1, 8, 8, 4), "float32") for n in "xyz"],
...     [Op("relu_0", "RELU", ("x",), ("y",)), Op("tanh_1", "TANH", ("y",), ("z",))], ["x"], ["z"])
>>> r = partition(G, "GPU,CPU", picker="exact")
>>> r.plan.status, sorted(r.plan.assignment)
('OPTIMAL', ['subgraph_0'])
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx

from tacopt.cost_models.base import CostModel, get_cost_model, with_unit_default
from tacopt.cost_models.ops import inference_type
from tacopt.fusion.fuse import fuse as fuse_graph
from tacopt.fusion.ir import validate_graph
from tacopt.partitioner.annotate import Annotation, annotate_targets, normalize_pins, pinned_ops
from tacopt.partitioner.apply import apply_plan
from tacopt.partitioner.costing import build_problem
from tacopt.partitioner.lowerings import unfuse_unrunnable
from tacopt.partitioner.memory import graph_peak_memory, internal_activation_peak
from tacopt.partitioner.pickers import pick, picker_options
from tacopt.partitioner.plan import Plan
from tacopt.partitioner.problem import PickProblem, index_problem, validate_problem
from tacopt.partitioner.subgraphs import (
    Partition,
    Subgraph,
    op_units,
    raise_subgraphs,
    validate_partition,
)
from tacopt.partitioner.targets import (
    PartitionError,
    Target,
    TargetError,
    pricing_device,
    resolve_devices,
)
from tacopt.partitioner.views import View, enumerate_views, fusion_regions, view_weight_bytes

GRANULARITIES = ("subgraph", "op")


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """Everything the pipeline decided, stage by stage, and the partitioned graph."""

    graph: nx.MultiDiGraph
    plan: Plan
    problem: PickProblem
    partition: Partition
    annotations: dict[str, Annotation]
    views: dict[str, tuple[View, ...]]
    devices: tuple[str, ...]
    granularity: str
    cost_model: str
    seconds: dict[str, float]
    #: Fusions applied before partitioning, per rule (empty with ``fuse=False``).
    fusions: dict[str, int] = field(default_factory=dict)
    #: Fused ops no listed device runs, unfused before partitioning, per kind.
    unfused: dict[str, int] = field(default_factory=dict)
    #: The graph the units are of: the fused model (the model itself with ``fuse=False``).
    source: nx.MultiDiGraph | None = None
    #: The devices as resolved (Target objects, in the user's order, CPU included).
    targets: tuple[Target, ...] = ()
    #: The pins asked for, as (pattern, device) pairs in the order given.
    pins: tuple[tuple[str, str], ...] = ()
    #: Devices the given cost model does not know -> the model that priced them instead
    #: (:func:`cover_devices`).
    defaulted: dict[str, str] = field(default_factory=dict)

    def pinned(self) -> dict[str, str]:
        """Pinned op -> its device (the ops of ``source`` a pin matched)."""
        return {op: a.device for op, a in self.annotations.items() if a.pinned}

    def summary(self) -> dict[str, Any]:
        """The plan as JSON-ready data with the pipeline's knobs and stage timings."""
        out = self.plan.to_dict()
        # One memory model: the partitioned graph's, each op a step (the same for the same plan
        # at either granularity); the pick problem's count, which the picker constrained, beside.
        out["unit_peak_memory"] = out["peak_memory"]
        peaks = graph_peak_memory(self.graph)
        out["peak_memory"] = {d: peaks.get(d, 0.0) for d in sorted({*self.devices, *peaks})}
        out["fits"] = all(out["peak_memory"].get(d, 0.0) <= c for d, c in out["capacity"].items())
        out["units"] = {
            s.name: {
                "ops": list(s.ops),
                "initial": f"{s.device}/{s.inference_type}",
                "views": [
                    {"device": v.device, "type": v.inference_type, "lowerings": list(v.lowerings)}
                    for v in self.views[s.name]
                ],
            }
            for s in self.partition.subgraphs
        }
        out["devices"] = list(self.devices)
        out["granularity"] = self.granularity
        out["cost_model"] = self.cost_model
        out["priced_by_default"] = dict(self.defaulted)
        out["pins"] = pins_summary(self.source, self.pins) if self.source is not None else []
        out["pinned"] = self.pinned()
        out["fusions"] = dict(self.fusions)
        out["unfused"] = dict(self.unfused)
        out["stage_seconds"] = dict(self.seconds)
        return out


def pins_summary(G: nx.MultiDiGraph, pins: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The plan JSON's ``pins``: each pin as given, its device and the ops it pinned.

    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor(n, (1, 4), "float32") for n in "xy"],
    ...     [Op("a", "RELU", ("x",), ("y",))], ["x"], ["y"])
    >>> pins_summary(G, [("kind:RELU", "CPU")])
    [{'pin': 'kind:RELU=CPU', 'pattern': 'kind:RELU', 'device': 'CPU', 'ops': ['a']}]
    """
    first = pinned_ops(G, pins)
    return [
        {"pin": f"{pattern}={device}", "pattern": pattern, "device": device,
         "ops": [op for op, i in first.items() if i == k]}
        for k, (pattern, device) in enumerate(pins)
    ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class PickProposal:
    """The pick problem of a model and what applying a plan to it needs (the propose step).

    ``graph`` is the graph the problem was built on: the fused model (``fusions`` lists the
    fusions applied, ``unfused`` the fused ops no listed device runs, unfused again), or the model
    itself with ``fuse=False``.
    """

    problem: PickProblem
    partition: Partition
    annotations: dict[str, Annotation]
    views: dict[str, tuple[View, ...]]
    targets: tuple[Target, ...]
    cost_model: CostModel
    seconds: dict[str, float]
    graph: nx.MultiDiGraph
    fusions: dict[str, int]
    #: Fused ops no listed device runs, unfused before partitioning, per kind.
    unfused: dict[str, int]
    #: Devices the given cost model does not know -> the model that priced them instead.
    defaulted: dict[str, str] = field(default_factory=dict)


def cover_devices(
    model: CostModel, targets: Sequence[Target]
) -> tuple[CostModel, dict[str, str]]:
    """``model``, or ``model`` chained with its unit's default when it cannot price a target.

    A cost model prices the devices it knows; a target it cannot price
    (:func:`~tacopt.partitioner.targets.pricing_device`) is priced by the default model of the
    same unit (:data:`tacopt.cost_models.base.DEFAULT_FOR_UNIT`: ``roofline`` for models in
    microseconds, such as ``learned``, which knows the CPU it was measured on). Returns the model
    to use and, for each such device, the name of the model that prices it; when no default
    knows the device, ``model`` is returned unchanged (costing then names the device).

    Examples
    --------
    >>> from tacopt.cost_models.base import get_cost_model
    >>> model, defaulted = cover_devices(get_cost_model("learned"), resolve_devices("GPU,CPU"))
    >>> model.name, defaulted
    ('learned+roofline', {'GPU': 'roofline'})
    >>> cover_devices(get_cost_model("tac"), resolve_devices("GPU,CPU"))[1]
    {}
    """

    def priced(m: CostModel, t: Target) -> bool:
        try:
            pricing_device(t, m)
        except TargetError:
            return False
        return True

    missing = [t for t in targets if not priced(model, t)]
    if not missing:
        return model, {}
    chained = with_unit_default(model)
    if chained is None or not all(priced(chained, t) for t in missing):
        return model, {}
    default = getattr(chained, "models", (chained,))[-1]
    return get_cost_model(chained), {t.name: default.name for t in missing}


def build_pick_problem(
    G: nx.MultiDiGraph,
    devices: str | Sequence[str | Target],
    *,
    cost_model: str | CostModel = "tac",
    granularity: str = "subgraph",
    pins: Sequence[tuple[str, str] | str] = (),
    fuse: bool = True,
    capacity: Mapping[str, float] | None = None,
) -> PickProposal:
    """Fuse, annotate, raise units, enumerate views and cost them: the pick problem of ``G``.

    Pure: ``G`` is not modified. :func:`partition` is this followed by a picker and
    :func:`tacopt.partitioner.apply.apply_plan`; a study that compares pickers calls this once and
    runs every picker on the same problem.

    Every choice holds its view's weight bytes
    (:func:`~tacopt.partitioner.views.view_weight_bytes`) as memory; ``capacity`` (device ->
    bytes) limits devices. Parameters and errors are those of :func:`partition`.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> G = make_graph("g", [Tensor(n, (1, 8, 8, 4), "float32") for n in "xy"],
    ...     [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
    >>> [u.name for u in build_pick_problem(G, "GPU,CPU").problem.units]
    ['subgraph_0']
    """
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[stage] = now - clock
        clock = now

    if granularity not in GRANULARITIES:
        raise PartitionError(f"unknown granularity '{granularity}'; known: subgraph, op")
    targets = resolve_devices(devices)
    names = [t.name for t in targets]
    unknown = sorted(set(capacity or {}) - set(names))
    if unknown:
        known = ", ".join(names)
        raise PartitionError(f"capacity of unknown device {unknown[0]!r}; devices: {known}")
    validate_graph(G)
    model = get_cost_model(cost_model) if isinstance(cost_model, str) else cost_model
    model, defaulted = cover_devices(model, targets)
    lap("setup")
    fusions: dict[str, int] = {}
    unfused: dict[str, int] = {}
    plain, regions = G, []
    if fuse:

        def runs(H: nx.MultiDiGraph, node: str) -> bool:
            itype = inference_type(H, node)
            return any(t.supports(H, node, itype) for t in targets)

        fused = fuse_graph(G)
        G, unfused = unfuse_unrunnable(fused.graph, runs)
        fusions = fused.counts
        regions = fusion_regions(G, plain)
        lap("fuse")
    annotations = annotate_targets(G, targets, pins=pins)
    # A unit holding a whole fusion region also gets the region unfused as views. A region of
    # an op and its only reader (an LSTM and the slice of its last step, where the model had
    # one WHILE) starts with one label and shares a unit; other regions are not forced
    # together (on the zoo, holding a bidirectional LSTM's ops on one device cost up to 1.55x),
    # and a pinned region is left as the pins say.
    grouped: list[tuple[str, ...]] = [
        r for r in regions
        if len(r) == 2 and set(G.successors(r[0])) == {r[1]}
        and not any(annotations[n].pinned for n in r)
    ]  # fmt: skip
    for region in grouped:
        for n in region[1:]:
            annotations[n] = annotations[region[0]]
    raise_units = raise_subgraphs if granularity == "subgraph" else op_units
    part = raise_units(G, annotations)
    if granularity == "op" and grouped:
        part = _group_regions(part, grouped)
    validate_partition(G, part)
    lap("raise")
    units = enumerate_views(G, part, targets, original=plain, regions=regions)
    lap("views")
    problem, views = build_problem(G, units, targets, model)
    problem = replace(problem, cost_unit=getattr(model, "unit", "cost"))
    problem = with_capacity(_with_memory(problem, views), capacity or {})
    lap("cost")
    return PickProposal(
        problem, part, annotations, views, tuple(targets), model, seconds, G, fusions, unfused,
        defaulted,
    )  # fmt: skip


def _group_regions(part: Partition, regions: list[tuple[str, ...]]) -> Partition:
    """``op`` units with each fusion region's ops in one unit, named after its first op."""
    region_of = {n: r for r in regions for n in r}
    out: list[Subgraph] = []
    for s in part.subgraphs:
        region = region_of.get(s.ops[0])
        if region is None:
            out.append(s)
        elif s.ops[0] == region[0]:
            out.append(replace(s, ops=region))
    return Partition(tuple(out))


def _with_memory(problem: PickProblem, views: dict[str, tuple[View, ...]]) -> PickProblem:
    """``problem`` with each choice holding its view's weight bytes and, for a unit of several
    ops, the peak of its internal activations (:mod:`tacopt.partitioner.memory`)."""

    def held(v: View) -> float:
        return float(view_weight_bytes(v)) + internal_activation_peak(v.graph)

    units = tuple(
        replace(u, choices=tuple(replace(c, memory=held(v))
                                 for c, v in zip(u.choices, views[u.name])))
        for u in problem.units
    )  # fmt: skip
    return replace(problem, units=units)


def with_capacity(problem: PickProblem, capacity: Mapping[str, float]) -> PickProblem:
    """``problem`` (a :class:`~tacopt.partitioner.problem.PickProblem`) limited to ``capacity``.

    Memory is counted step by step along the listed unit order, so with capacities the units
    are put in an execution order (the one :func:`~tacopt.partitioner.problem.index_problem`
    uses) and the problem is validated.

    Raises
    ------
    ProblemError
        For a capacity of a device no unit runs on, or one that is not a byte count.
    """
    problem = replace(problem, capacity=dict(capacity))
    if capacity:
        order = index_problem(problem).order.tolist()
        problem = replace(problem, units=tuple(problem.units[i] for i in order))
        validate_problem(problem, source="capacity")
    return problem


def partition(
    G: nx.MultiDiGraph,
    devices: str | Sequence[str | Target],
    *,
    picker: str = "exact",
    cost_model: str | CostModel = "tac",
    granularity: str = "subgraph",
    pins: Sequence[tuple[str, str] | str] = (),
    time_limit_s: float | None = None,
    fuse: bool = True,
    capacity: Mapping[str, float] | None = None,
) -> PartitionResult:
    """Partition ``G`` across ``devices`` and return the applied plan.

    Parameters
    ----------
    G : nx.MultiDiGraph
        The model (not modified).
    devices : str or sequence
        ``"GPU,CPU"``, or a sequence of device names and
        :class:`~tacopt.partitioner.targets.Target` objects, in order of preference; both forms
        are checked by :func:`~tacopt.partitioner.targets.resolve_devices`, which appends the
        CPU when absent.
    picker : str
        A registered picker (:func:`tacopt.partitioner.pickers.picker_names`).
    cost_model : str or CostModel
        A spec for :func:`tacopt.cost_models.base.get_cost_model`, or a model object.
    granularity : {"subgraph", "op"}
        TAC's raised subgraphs, or one unit per op.
    pins : sequence of (pattern, device) or "PATTERN=DEVICE"
        Force matching ops onto a device: by op or output tensor name glob, or by kind
        (``kind:CONV_2D``); recorded in the plan JSON (``pins``, ``pinned``). Every picker
        keeps them: a pinned unit has views on its pinned device only.
    time_limit_s : float, optional
        Passed to pickers that take a time limit.
    fuse : bool
        Fuse ``G`` first (:func:`tacopt.fusion.fuse.fuse`, the default): the partitioner works
        on the fused DAG, and a fused op a device lacks is lowered back to its primitive ops in
        that device's views. ``False`` partitions ``G`` as it is.
    capacity : mapping, optional
        Device -> bytes it can hold (:func:`tacopt.cli_options.capacities` reads
        ``--memory``); every choice holds its view's weights, and tensors their bytes while
        live. A picker that finds no plan within them raises
        :class:`~tacopt.partitioner.plan.NoPlanError`.

    Returns
    -------
    PartitionResult
        ``graph`` holds only ops LiteRT runs (fused kinds it lacks are lowered everywhere).

    Raises
    ------
    TacoptError
        Unknown device, picker or cost model, a bad pin, a cost model without a number for a
        CPU op, or a malformed graph (subclasses name what and where).
    """
    accepted = picker_options(picker)  # an unknown picker fails here, before any work
    proposal = build_pick_problem(
        G, devices, cost_model=cost_model, granularity=granularity, pins=pins, fuse=fuse,
        capacity=capacity,
    )  # fmt: skip
    seconds = dict(proposal.seconds)
    clock = time.perf_counter()
    options: dict[str, Any] = {}
    if time_limit_s is not None:
        for key in ("time_limit_s", "time_limit"):
            if key in accepted or "*" in accepted:
                options[key] = time_limit_s
                break
    plan = pick(proposal.problem, picker, **options)
    seconds["pick"] = time.perf_counter() - clock
    clock = time.perf_counter()
    H = apply_plan(proposal.graph, proposal.partition, proposal.views, plan.assignment)
    seconds["apply"] = time.perf_counter() - clock
    return PartitionResult(
        H,
        plan,
        proposal.problem,
        proposal.partition,
        proposal.annotations,
        proposal.views,
        tuple(t.name for t in proposal.targets),
        granularity,
        getattr(proposal.cost_model, "name", str(cost_model)),
        seconds,
        proposal.fusions,
        proposal.unfused,
        proposal.graph,
        tuple(proposal.targets),
        normalize_pins(pins),
        proposal.defaulted,
    )

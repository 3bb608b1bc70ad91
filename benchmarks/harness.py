"""The study runner: models x device sets x granularities x cost models x pickers, one JSONL record
per picker run, resumable, in parallel worker processes or on a Dask cluster.

A :class:`Study` expands into :class:`Case` s (:func:`expand_cases`). A case is one pick problem:
one model (or synthetic problem) with one device set, granularity and cost model. The problem is
built ONCE per case and every picker of the case solves that same problem, ``exact`` first, so
that every other picker's ratio to the optimum is known (:func:`run_case`).

:func:`run_study` appends each finished case's records to the output file and flushes them, so an
interrupted run loses at most the cases in flight; a torn last line is dropped on restart, and
records already in the file are skipped. When the run ends the file is rewritten (atomically) in
case order, so the output does not depend on how many workers ran it or in which order they
finished. Before any of that, :func:`check_study` and :func:`check_models` refuse a study that
cannot run, and Ctrl-C stops worker processes (:mod:`tacopt.benchmarks.workers`) at once,
raising :class:`StudyInterrupted`.

A record (one JSON object per line)::

    key, model, zoo, kind, ops, units, choices, tensors, devices, granularity, cost_model,
    fusion ("fused" or "plain"), fusions {rule: n}, unfused {kind: n}, cost_unit, picker,
    status, objective, breakdown {compute, transfer, quant}, bound, gap, exact_objective,
    ratio_to_exact, gap_to_exact, seconds, build_seconds, transfers, conversions, seed, params
    {time_limit_s, backend, ...}, versions {...}, error

``gap`` is the picker's own proven relative gap (exact only); ``gap_to_exact`` is
``objective / exact_objective - 1`` on the same problem. ``status`` is the plan's status
(OPTIMAL, FEASIBLE, HEURISTIC, ...) or ERROR when the picker or the problem build raised a
:class:`~tacopt.fusion.errors.TacoptError` (the message is in ``error``), or CRASH for any other
exception (a bug, recorded so that one model cannot stop a long study).

Examples
--------
>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
>>> study = Study(zoos=("layered:12",), pickers=("greedy", "first-fit"))
>>> [(r["picker"], r["status"], r["units"]) for r in run_study(study, out, jobs=1)]
[('greedy', 'HEURISTIC', 12), ('first-fit', 'HEURISTIC', 12)]
>>> len(run_study(study, out, jobs=1))  # resumed: nothing left to run
2
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tacopt.benchmarks.zoos import BenchmarkError, ZooItem, load_item, resolve_zoo
from tacopt.fusion.errors import TacoptError
from tacopt.fusion.io import atomic_write

if TYPE_CHECKING:  # workers imports this module
    from tacopt.benchmarks.workers import WorkerSetup

#: Device sets of the default study (TAC's examples).
DEFAULT_DEVICE_SETS: tuple[tuple[str, ...], ...] = (
    ("GPU", "CPU"),
    ("NNAPI", "CPU"),
    ("GPU", "NNAPI", "CPU"),
)
DEFAULT_PICKERS = ("exact", "tac", "greedy", "first-fit")
#: Statuses of records whose picker (or problem) failed.
FAILED = frozenset({"ERROR", "CRASH"})


@dataclass(frozen=True, slots=True)
class Study:
    """What to run: the cross product of every field that is a tuple.

    ``time_limit_s`` and ``backend`` go to pickers that take them (``exact``); ``seed`` to the
    synthetic generators and pickers that take one. ``time_limit_s=None`` uses the picker's own
    default.
    """

    zoos: tuple[str, ...] = ("bundled",)
    device_sets: tuple[tuple[str, ...], ...] = DEFAULT_DEVICE_SETS
    granularities: tuple[str, ...] = ("subgraph", "op")
    cost_models: tuple[str, ...] = ("tac",)
    pickers: tuple[str, ...] = DEFAULT_PICKERS
    time_limit_s: float | None = 60.0
    backend: str | None = None
    seed: int = 0
    #: ``"fused"``: the partitioner's pipeline as it is (fuse first); ``"plain"``: ``fuse=False``.
    fusion: tuple[str, ...] = ("fused",)


#: The values of :attr:`Study.fusion`.
FUSION_MODES = ("fused", "plain")


@dataclass(frozen=True, slots=True)
class Case:
    """One pick problem of a study and the pickers that solve it (``exact`` first).

    Synthetic pick-problem items carry their own devices and costs: their ``devices`` is empty
    and ``granularity`` and ``cost_model`` are ``"-"``.
    """

    item: ZooItem
    devices: tuple[str, ...]
    granularity: str
    cost_model: str
    pickers: tuple[str, ...]
    time_limit_s: float | None = None
    backend: str | None = None
    seed: int = 0
    fusion: str = "fused"

    @property
    def key(self) -> str:
        """Stable identity of the case: zoo, model, devices, granularity, cost model, seed, and
        ``|plain`` for a case partitioned without fusing."""
        devices = ",".join(self.devices) or "-"
        return (
            f"{self.item.zoo}/{self.item.name}|{devices}|{self.granularity}|{self.cost_model}"
            f"|seed={self.seed}" + ("|plain" if self.fusion == "plain" else "")
        )

    def record_key(self, picker: str) -> str:
        """Stable identity of one record: the case key and the picker."""
        return f"{self.key}|{picker}"


@dataclass(frozen=True, slots=True)
class BuiltProblem:
    """A case's pick problem and what is known about the model it came from."""

    problem: Any
    ops: int
    cost_unit: str
    build_seconds: float
    extra: Mapping[str, Any] = field(default_factory=dict)


def expand_cases(study: Study) -> list[Case]:
    """The cases of ``study`` in a fixed order: zoo, model, device set, granularity, cost model.

    Raises
    ------
    BenchmarkError
        For an unknown zoo or an empty field of the study.

    Examples
    --------
    >>> cases = expand_cases(Study(zoos=("transformer:1",)))
    >>> len(cases), cases[0].pickers
    (6, ('exact', 'tac', 'greedy', 'first-fit'))
    >>> cases[0].key
    'transformer/transformer_L1|GPU,CPU|subgraph|tac|seed=0'

    """
    for name in ("zoos", "device_sets", "granularities", "cost_models", "pickers", "fusion"):
        if not getattr(study, name):
            raise BenchmarkError(f"study option {name!r} is empty")
    pickers = tuple(dict.fromkeys(p for p in study.pickers if p == "exact")) + tuple(
        dict.fromkeys(p for p in study.pickers if p != "exact")
    )
    common: dict[str, Any] = dict(
        pickers=pickers, time_limit_s=study.time_limit_s, backend=study.backend, seed=study.seed
    )
    cases: list[Case] = []
    for spec in study.zoos:
        for item in resolve_zoo(spec):
            if item.kind == "problem":
                cases.append(
                    Case(replace(item, seed=item.seed + study.seed), (), "-", "-", **common)
                )
                continue
            for devices in study.device_sets:
                for granularity in study.granularities:
                    for cost_model in study.cost_models:
                        for fusion in study.fusion:
                            cases.append(
                                Case(
                                    item, tuple(devices), granularity, cost_model, **common,
                                    fusion=fusion,
                                )
                            )  # fmt: skip
    keys = [c.key for c in cases]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise BenchmarkError(f"study lists case {dup!r} twice (the same model in two zoos?)")
    return cases


# ---------------------------------------------------------------------------------------------
# one case


def build_problem(case: Case) -> BuiltProblem:
    """Build the pick problem of ``case`` (once; every picker of the case solves it)."""
    started = time.perf_counter()
    loaded = load_item(case.item)
    if case.item.kind == "problem":
        n = len(loaded.units)
        return BuiltProblem(loaded, n, "us", time.perf_counter() - started)
    from tacopt.cost_models.base import get_cost_model

    cost_model = get_cost_model(case.cost_model)
    proposal = _proposal(loaded, case.devices, cost_model, case.granularity, case.fusion == "fused")
    ops = sum(g.number_of_nodes() for g in [loaded, *loaded.graph.get("subgraphs", {}).values()])
    extra = {"fusions": proposal.fusions, "unfused": proposal.unfused}
    return BuiltProblem(
        proposal.problem, ops, cost_model.unit, time.perf_counter() - started, extra
    )


def _proposal(G: Any, devices: Sequence[str], cost_model: Any, granularity: str, fuse: bool) -> Any:
    from tacopt.partitioner.pipeline import GRANULARITIES, build_pick_problem

    if granularity not in GRANULARITIES:
        raise BenchmarkError(f"unknown granularity {granularity!r}; known: op, subgraph")
    return build_pick_problem(G, devices, cost_model=cost_model, granularity=granularity, fuse=fuse)


def count_moves(problem: Any, assignment: Mapping[str, Any]) -> tuple[int, int]:
    """Numbers of (transfers, conversions) an assignment pays, as ``evaluate`` charges them.

    Evaluates the assignment with unit prices (every transfer and every conversion costs 1), so
    the counts follow :func:`tacopt.partitioner.plan.evaluate`'s rules exactly (once per tensor and
    distinct destination device / format, graph boundaries included when the problem counts them).

    Examples
    --------
    >>> from tacopt.partitioner.problem import Choice, Link, PickProblem, TensorEdge, Unit
    >>> cpu, gpu = Choice("CPU", "FLOAT", 3.0), Choice("GPU", "QUANTIZED_INT8", 1.0)
    >>> p = PickProblem((Unit("a", (cpu, gpu)), Unit("b", (cpu,)), Unit("c", (cpu,))),
    ...     (TensorEdge("t", "a", ("b", "c"), (100,), "float32"),), Link(5.0, 10.0), 2.0)
    >>> count_moves(p, {"a": gpu, "b": cpu, "c": cpu})
    (1, 1)
    """
    from tacopt.partitioner.plan import choice_indices, evaluate_index
    from tacopt.partitioner.problem import index_problem

    index = index_problem(problem)
    n_dev = len(index.devices)
    unit_priced = replace(
        index,
        link_per_byte=np.zeros((n_dev, n_dev)),
        link_fixed=np.ones((n_dev, n_dev)),
        quant_per_element=1.0,
        elements=np.ones_like(index.elements),
    )
    counted = evaluate_index(unit_priced, choice_indices(problem, index, assignment))
    return round(counted.transfer), round(counted.quant)


def run_case(case: Case, done: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict]:
    """Run every picker of ``case`` not already in ``done`` (records by picker) on one problem.

    Returns the new records in picker order. Never raises for a failing model or picker: the
    failure becomes a record with status ERROR (a :class:`~tacopt.fusion.errors.TacoptError`) or
    CRASH.
    """
    done = done or {}
    todo = [p for p in case.pickers if p not in done]
    if not todo:
        return []
    base = _base_record(case)
    try:
        built = build_problem(case)
    except Exception as exc:  # noqa: BLE001 - one bad model must not stop a study
        return [_failed(_for_picker(base, case, p), exc) for p in todo]
    problem = built.problem
    base.update(
        ops=built.ops,
        units=len(problem.units),
        choices=sum(len(u.choices) for u in problem.units),
        tensors=len(problem.tensors),
        cost_unit=built.cost_unit,
        build_seconds=round(built.build_seconds, 6),
        **built.extra,
    )
    if not case.devices:
        base["devices"] = ",".join(sorted({c.device for u in problem.units for c in u.choices}))
    previous = done.get("exact", {})
    exact = previous.get("objective") if previous.get("status") in ("OPTIMAL", "FEASIBLE") else None
    records = []
    for picker in todo:
        record = _run_picker(case, problem, picker, _for_picker(base, case, picker))
        if picker == "exact" and record["status"] in ("OPTIMAL", "FEASIBLE"):
            exact = record["objective"]
        records.append(record)
    for record in records:
        _fill_ratio(record, exact)
    return records


def _run_picker(case: Case, problem: Any, picker: str, record: dict) -> dict:
    from tacopt.partitioner.pickers import pick, picker_options

    try:
        accepted = picker_options(picker)
        wanted = {"time_limit_s": case.time_limit_s, "backend": case.backend, "seed": case.seed}
        options = {k: v for k, v in wanted.items() if v is not None and ({k, "*"} & accepted)}
        record["params"] = {**record["params"], **options}
        started = time.perf_counter()
        plan = pick(problem, picker, **options)
        wall = time.perf_counter() - started
        transfers, conversions = count_moves(problem, plan.assignment)
    except Exception as exc:  # noqa: BLE001 - recorded, see run_case
        return _failed(record, exc)
    record.update(
        status=plan.status,
        objective=plan.objective,
        breakdown={
            "compute": plan.breakdown.compute,
            "transfer": plan.breakdown.transfer,
            "quant": plan.breakdown.quant,
        },
        bound=plan.bound,
        gap=plan.gap,
        seconds=round(wall, 6),
        transfers=transfers,
        conversions=conversions,
        params={**record["params"], **_jsonable(plan.params)},
    )
    return record


def _fill_ratio(record: dict, exact: float | None) -> None:
    record["exact_objective"] = exact
    objective = record.get("objective")
    if exact is None or objective is None:
        return
    if exact > 0:
        record["ratio_to_exact"] = objective / exact
        record["gap_to_exact"] = objective / exact - 1.0
    else:  # a free optimum: any positive cost is infinitely worse, equal is ratio 1
        record["ratio_to_exact"] = 1.0 if objective <= 0 else math.inf
        record["gap_to_exact"] = 0.0 if objective <= 0 else math.inf


def _base_record(case: Case) -> dict:
    return {
        "key": case.key,
        "model": case.item.name,
        "zoo": case.item.zoo,
        "kind": case.item.kind,
        "ops": None,
        "units": None,
        "choices": None,
        "tensors": None,
        "devices": ",".join(case.devices),
        "granularity": case.granularity,
        "cost_model": case.cost_model,
        "fusion": case.fusion if case.item.kind != "problem" else "-",
        "fusions": None,
        "unfused": None,
        "cost_unit": None,
        "picker": None,
        "status": None,
        "objective": None,
        "breakdown": None,
        "bound": None,
        "gap": None,
        "exact_objective": None,
        "ratio_to_exact": None,
        "gap_to_exact": None,
        "seconds": None,
        "build_seconds": None,
        "transfers": None,
        "conversions": None,
        "seed": case.seed,
        "params": {"time_limit_s": case.time_limit_s, "backend": case.backend},
        "versions": versions(),
        "error": None,
    }


def _for_picker(base: dict, case: Case, picker: str) -> dict:
    return {**base, "key": case.record_key(picker), "picker": picker}


def _failed(record: dict, exc: BaseException) -> dict:
    out = dict(record)
    if isinstance(exc, TacoptError):
        out["status"], out["error"] = "ERROR", f"{type(exc).__name__}: {exc}"
    else:
        where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" at {Path(where[0].filename).name}:{where[0].lineno}" if where else ""
        out["status"], out["error"] = "CRASH", f"{type(exc).__name__}{at}: {exc}"
    return out


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(dict(params), default=str))


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Versions of tacopt, its solver stack and Python, as recorded in every record."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("tacopt", "ortools", "numpy", "networkx", "scipy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "absent"
    out["python"] = platform.python_version()
    return out


# ---------------------------------------------------------------------------------------------
# the results file


def read_records(path: str | os.PathLike[str]) -> list[dict]:
    """Records of a results file; a torn (unterminated, unparsable) last line is ignored.

    Raises
    ------
    BenchmarkError
        If another line is not a JSON object (the file is not a results file).
    """
    path = Path(path)
    if not path.exists():
        return []
    records = []
    lines = path.read_bytes().split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines):  # the unterminated last line of an interrupted run
                break
            raise BenchmarkError(f"{path}: line {number} is not a JSON record") from None
        if not isinstance(record, dict) or "key" not in record:
            raise BenchmarkError(f"{path}: line {number} is not a benchmark record")
        records.append(record)
    return records


def _drop_torn_tail(path: Path) -> None:
    """Cut an unterminated last line so that appended records start on a line of their own."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


class _Appender:
    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _drop_torn_tail(path)
            self._f = path.open("a", encoding="utf-8")
        except OSError as exc:
            raise BenchmarkError(f"results file '{path}': {exc.strerror or exc}") from None

    def write(self, records: Iterable[dict]) -> None:
        # one write per case, so Ctrl-C between records cannot leave half a line
        self._f.write("".join(json.dumps(r, allow_nan=True) + "\n" for r in records))
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


# ---------------------------------------------------------------------------------------------
# the study


class StudyInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a study; the records of ``done`` of its ``total`` cases are in the file.

    A :class:`KeyboardInterrupt`, so code that stops on Ctrl-C still stops; running the same
    study again resumes it.
    """

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"{done} of {total} cases done")
        self.done = done
        self.total = total


def run_study(
    study: Study,
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    scheduler: str | Any | None = None,
    progress: bool = False,
    retry_failed: bool = False,
    on_case: Callable[[Case], None] | None = None,
    in_process: bool | None = None,
    load: Sequence[str] = (),
) -> list[dict]:
    """Run every case of ``study`` not yet in ``out`` and return all of the study's records.

    Everything that can be checked is checked before any work, and before ``out`` is touched
    (:func:`check_study`, and every model the run will read). Ctrl-C stops the run at once:
    worker processes are killed without waiting for their solves, the records of every
    finished case stay in ``out``, and :class:`StudyInterrupted` is raised.

    Parameters
    ----------
    study : Study
    out : path
        The JSONL results file; created if absent, resumed if present.
    jobs : int, optional
        Worker processes (default: the number of cores, or none, running in this process, when
        the study names a picker, cost model or device that workers cannot import, such as one
        defined in ``__main__``).
    scheduler : str or dask.distributed.Client, optional
        Run on a Dask cluster (``"tcp://HOST:PORT"``) instead of local processes.
    progress : bool
        Show a progress bar with ETA on stderr.
    retry_failed : bool
        Run again the records that failed (ERROR / CRASH) instead of keeping them.
    on_case : callable, optional
        Called with each case as its records are written (tests use it to count work).
    in_process : bool, optional
        Run the cases in this process (default: when ``jobs`` is 1). Ctrl-C then waits for the
        solver call in progress; the command line always uses worker processes.
    load : sequence of str
        Modules or ``.py`` files (``--load``) that each worker process imports first; this
        process must have imported them already.

    Returns
    -------
    list of dict
        The study's records in case order (records of other studies in ``out`` are kept in the
        file but not returned).

    Raises
    ------
    BenchmarkError
        For a bad study, a model that cannot be read, an unreadable results file, an extension
        that worker processes do not know, or a missing Dask installation.
    StudyInterrupted
        On Ctrl-C.
    """
    out = Path(out)
    check_study(study)
    cases = expand_cases(study)
    if jobs is not None and jobs < 1:
        raise BenchmarkError(f"jobs must be at least 1, got {jobs}")
    existing = read_records(out)
    by_key = {r["key"]: r for r in existing if not (retry_failed and r.get("status") in FAILED)}
    todo: list[tuple[Case, dict[str, dict]]] = []
    for case in cases:
        done = {p: by_key[case.record_key(p)] for p in case.pickers if case.record_key(p) in by_key}
        if len(done) < len(case.pickers):
            todo.append((case, done))
    check_models(case for case, _ in todo)

    results = _execute(todo, study, jobs, scheduler, in_process, load)
    bar = appender = None
    try:
        next(results)  # workers started and checked: nothing is written before this
        appender = _Appender(out)
        bar = _progress_bar(len(cases), len(cases) - len(todo)) if progress and todo else None
        for result in results:
            assert result is not None  # only the first item is None
            case, records = result
            appender.write(records)
            by_key.update((r["key"], r) for r in records)
            if on_case is not None:
                on_case(case)
            if bar is not None:
                bar.set_postfix_str(case.item.name[:30], refresh=False)
                bar.update(1)
    except KeyboardInterrupt:
        written = {r["key"] for r in read_records(out)} if appender is not None else set()
        n_done = sum(all(c.record_key(p) in written for p in c.pickers) for c in cases)
        raise StudyInterrupted(n_done, len(cases)) from None
    finally:
        results.close()
        if appender is not None:
            appender.close()
        if bar is not None:
            bar.close()

    wanted = [case.record_key(p) for case in cases for p in case.pickers]
    ordered = [by_key[k] for k in wanted if k in by_key]
    ours = set(wanted)
    others = [r for r in read_records(out) if r["key"] not in ours]
    if todo or len(existing) != len(ordered) + len(others):
        atomic_write(out, "".join(json.dumps(r) + "\n" for r in ordered + others))
    return ordered


def check_study(study: Study) -> None:
    """Refuse a study that cannot run, before any work: one line naming the option and value.

    Checks every device set (no empty name, known devices, none twice), granularity, cost model
    (it builds), picker (it resolves; none twice) and the time limit (positive and finite).
    Zoos are checked by :func:`expand_cases`.

    Raises
    ------
    BenchmarkError

    Examples
    --------
    >>> check_study(Study(device_sets=(("GPU", "", "CPU"),)))
    Traceback (most recent call last):
    ...
    tacopt.benchmarks.zoos.BenchmarkError: devices 'GPU,,CPU': empty device name
    >>> check_study(Study(pickers=("exact", "exact")))
    Traceback (most recent call last):
    ...
    tacopt.benchmarks.zoos.BenchmarkError: pickers: 'exact' is listed twice
    """
    from tacopt.cost_models.base import get_cost_model
    from tacopt.partitioner.pickers import get_picker
    from tacopt.partitioner.pipeline import GRANULARITIES
    from tacopt.partitioner.targets import get_target

    for devices in study.device_sets:
        where = f"devices {','.join(devices)!r}"
        if not devices or devices == ("",):
            raise BenchmarkError(f"{where}: empty device list")
        if any(not d.strip() for d in devices):
            raise BenchmarkError(f"{where}: empty device name")
        for d in devices:
            try:
                get_target(d)
            except TacoptError as exc:
                raise BenchmarkError(f"{where}: {exc}") from None
        _no_twice(where, [d.strip().upper() for d in devices])
    options = {
        "pickers": study.pickers,
        "cost models": study.cost_models,
        "granularities": study.granularities,
        "fusion": study.fusion,
    }
    for option, values in options.items():
        _no_twice(option, values)
    for mode in study.fusion:
        if mode not in FUSION_MODES:
            raise BenchmarkError(f"unknown fusion mode {mode!r}; known: {', '.join(FUSION_MODES)}")
    for granularity in study.granularities:
        if granularity not in GRANULARITIES:
            raise BenchmarkError(
                f"unknown granularity {granularity!r}; known: {', '.join(GRANULARITIES)}"
            )
    for spec in study.cost_models:
        get_cost_model(spec)  # a CostModelError names the spec
    for picker in study.pickers:
        get_picker(picker)  # a PickerError names the picker
    limit = study.time_limit_s
    if limit is not None and not (math.isfinite(limit) and limit > 0):
        raise BenchmarkError(f"time limit must be a positive number of seconds, got {limit}")


def _no_twice(where: str, values: Sequence[str]) -> None:
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise BenchmarkError(f"{where}: {twice!r} is listed twice")


def check_models(cases: Iterable[Case]) -> None:
    """Read every ``.tflite`` model of ``cases`` once; a broken one raises, naming its file."""
    from tacopt.fusion.reader import read_tflite

    seen = set()
    for case in cases:
        if case.item.kind == "tflite" and case.item.source not in seen:
            seen.add(case.item.source)
            try:
                read_tflite(case.item.source)
            except TacoptError as exc:
                raise BenchmarkError(f"zoo {case.item.zoo!r}: {exc}") from None


def warm_up(pickers: Iterable[str]) -> None:
    """Solve a small problem with each of ``pickers`` so that the first timed solve of a process
    does not include solver start-up (imports, OR-Tools / HiGHS initialisation). Failures are
    ignored: the real cases report them."""
    from tacopt.benchmarks.synthetic import layered_dag_problem
    from tacopt.partitioner.pickers import pick

    for picker in pickers:
        for size in (1, 12):
            try:
                pick(layered_dag_problem(size, seed=size), picker)
            except Exception:  # noqa: BLE001, S112 - warming up only
                continue


def _execute(
    todo: Sequence[tuple[Case, dict[str, dict]]],
    study: Study,
    jobs: int | None,
    scheduler: str | Any | None,
    in_process: bool | None,
    load: Sequence[str],
) -> Generator[tuple[Case, list[dict]] | None, None, None]:
    """Yield None once everything has started and been checked, then (case, new records) as
    cases finish. Closing the generator stops the work at once."""
    if not todo:
        yield None
        return
    if scheduler is not None:
        yield None
        yield from _execute_dask(todo, scheduler)
        return
    setup = _worker_setup(study, load)
    from_main = _defined_in_main(study)
    automatic = jobs is None and in_process is None
    if in_process or (in_process is None and jobs == 1) or (from_main and automatic):
        yield from _execute_here(todo, setup)
        return
    if from_main:
        raise BenchmarkError(
            f"{from_main[0]} is defined in __main__ (a notebook or a script), which worker "
            "processes cannot import: define it in a module (or pass pkg.mod:Name), or use jobs=1"
        )
    results = _execute_processes(todo, study, min(jobs or os.cpu_count() or 1, len(todo)), setup)
    try:
        next(results)
    except _WorkersLack:
        if not automatic:
            raise
        results = _execute_here(todo, setup)  # e.g. a device registered in a notebook
        next(results)
    yield None
    yield from results


class _WorkersLack(BenchmarkError):
    """Worker processes do not know a picker, device or cost model that the study names."""


def _execute_here(
    todo: Sequence[tuple[Case, dict[str, dict]]], setup: WorkerSetup
) -> Generator[tuple[Case, list[dict]] | None, None, None]:
    yield None
    warm_up(setup.warm_up)
    for case, done in todo:
        yield case, run_case(case, done)


def _execute_processes(
    todo: Sequence[tuple[Case, dict[str, dict]]], study: Study, jobs: int, setup: WorkerSetup
) -> Generator[tuple[Case, list[dict]] | None, None, None]:
    """Run ``todo`` on ``jobs`` worker processes, one case each at a time; a worker that dies
    gives CRASH records for its case and is replaced."""
    from tacopt.benchmarks.workers import Worker, receive, started

    queue = list(range(len(todo)))[::-1]  # case indices, next one last
    running = 0
    with started(jobs, setup) as workers:
        first = True
        while queue or running:
            for worker, message in receive(workers):
                if message is None:  # the worker died
                    if not worker.ready:
                        code = worker.process.wait()
                        raise BenchmarkError(f"a worker process exited on start (code {code})")
                    workers.remove(worker)
                    worker.kill()
                    index, worker.case = worker.case, None
                    if index is not None:
                        running -= 1
                        yield _crashed(*todo[index])
                    if queue:
                        workers.append(Worker(setup))
                    continue
                if message[0] == "error":
                    raise BenchmarkError(message[1])
                if message[0] == "hello":
                    worker.ready = True
                    if first:
                        _check_workers_know(study, message[1])
                        first = False
                        yield None
                else:
                    _, index, records = message
                    worker.case = None
                    running -= 1
                    yield todo[index][0], records
                if queue:
                    worker.case = queue.pop()
                    worker.conn.send((worker.case, *todo[worker.case]))
                    running += 1


def _crashed(case: Case, done: Mapping[str, Any]) -> tuple[Case, list[dict]]:
    crash = RuntimeError("worker process died while running this case (native crash?)")
    base = _base_record(case)
    return case, [_failed(_for_picker(base, case, p), crash) for p in case.pickers if p not in done]


def _worker_setup(study: Study, load: Sequence[str]) -> WorkerSetup:
    """What workers import first: ``load``, and the user modules that registered the study's
    pickers, cost models and devices in this process; which pickers they warm up."""
    from tacopt.benchmarks.workers import WorkerSetup

    modules = {}
    for _, obj in _extensions(study):
        name = _module_of(obj)
        if name and name != "__main__" and not name.startswith("tacopt."):
            modules[name] = getattr(sys.modules.get(name), "__file__", None)
    warm = tuple(p for p in study.pickers if _module_of(_picker(p)).startswith("tacopt."))
    return WorkerSetup(tuple(load), tuple(sorted(modules.items())), warm)


def _defined_in_main(study: Study) -> list[str]:
    return [what for what, obj in _extensions(study) if _module_of(obj) == "__main__"]


def _extensions(study: Study) -> list[tuple[str, Any]]:
    """(what, object) of each registered picker, cost model and device the study names."""
    from tacopt.cost_models.base import get_cost_model
    from tacopt.partitioner.pickers import is_picker_spec
    from tacopt.partitioner.targets import get_target

    out: list[tuple[str, Any]] = [
        (f"picker {p!r}", _picker(p)) for p in study.pickers if not is_picker_spec(p)
    ]
    out += [(f"cost model {m!r}", get_cost_model(m, checked=False)) for m in study.cost_models]
    devices = sorted({d for ds in study.device_sets for d in ds})
    out += [(f"device {d!r}", get_target(d)) for d in devices]
    return out


def _picker(name: str) -> Any:
    from tacopt.partitioner.pickers import get_picker

    return get_picker(name)


def _module_of(obj: Any) -> str:
    name = getattr(obj, "__module__", None) or type(obj).__module__
    return str(name)


def _check_workers_know(study: Study, known: Mapping[str, Sequence[str]]) -> None:
    """Refuse a study naming a picker, device or cost model that worker processes lack."""
    from tacopt.cost_models.base import registered_cost_models
    from tacopt.partitioner.pickers import is_picker_spec

    wanted = {
        "picker": [p for p in study.pickers if not is_picker_spec(p)],
        "device": sorted({d.strip().upper() for ds in study.device_sets for d in ds}),
        "cost model": [m for m in study.cost_models if m in registered_cost_models()],
    }
    for kind, names in wanted.items():
        missing = [n for n in names if n not in known[kind]]
        if missing:
            raise _WorkersLack(
                f"{kind} {missing[0]!r} is registered here but not in worker processes: "
                "register it in a module (or pass --load FILE.py), or use jobs=1"
            )


def _execute_dask(
    todo: Sequence[tuple[Case, dict[str, dict]]], scheduler: str | Any
) -> Iterable[tuple[Case, list[dict]]]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise BenchmarkError(
            "--scheduler needs dask.distributed: pip install 'tacopt[dask]'"
        ) from None
    own = isinstance(scheduler, str)
    try:
        client = Client(scheduler, timeout=30) if isinstance(scheduler, str) else scheduler
    except OSError as exc:
        raise BenchmarkError(f"cannot reach Dask scheduler {scheduler!r}: {exc}") from None
    try:
        futures = {
            client.submit(run_case, case, done, pure=False, key=f"tacopt-{i}-{case.key}"): case
            for i, (case, done) in enumerate(todo)
        }
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        if own:
            client.close()


def _progress_bar(total: int, initial: int) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, unit="case", file=sys.stderr, dynamic_ncols=True)

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
    status, objective, breakdown {compute, transfer, quant, pairwise}, bound, gap,
    exact_objective, ratio_to_exact, gap_to_exact, seconds, build_seconds, transfers,
    conversions, capacity {device: bytes}, pins [PATTERN=DEVICE], peak_memory {device: bytes},
    fits, seed, params {time_limit_s, backend, ...}, versions {...}, error

``gap`` is the picker's own proven relative gap (exact only); ``gap_to_exact`` is
``objective / exact_objective - 1`` on the same problem. ``status`` is the plan's status
(OPTIMAL, FEASIBLE, HEURISTIC, ...), INFEASIBLE or UNKNOWN when the picker found no plan
within the capacities (:class:`~tacopt.partitioner.plan.NoPlanError`), or ERROR when the picker
or the problem build raised a
:class:`~tacopt.errors.TacoptError` (the message is in ``error``), or CRASH for any other
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
import os
import sys
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tacopt.benchmarks.cases import (  # noqa: F401  (re-exported: the harness's API)
    BuiltProblem,
    build_problem,
    count_moves,
    failed_records,
    run_case,
    versions,
)
from tacopt.benchmarks.study import (  # noqa: F401  (re-exported)
    DEFAULT_DEVICE_SETS,
    DEFAULT_PICKERS,
    FAILED,
    FUSION_MODES,
    Case,
    Study,
    check_models,
    check_study,
    expand_cases,
)
from tacopt.benchmarks.workers import Worker, WorkerSetup, receive, started
from tacopt.benchmarks.zoos import BenchmarkError
from tacopt.cost_models.base import get_cost_model, registered_cost_models
from tacopt.io import atomic_write, read_json_lines
from tacopt.partitioner.pickers import get_picker, is_picker_spec, pick
from tacopt.partitioner.problem.synthetic import layered_dag_problem
from tacopt.partitioner.targets import get_target

# ---------------------------------------------------------------------------------------------
# the results file


def read_records(path: str | os.PathLike[str]) -> list[dict]:
    """Records of a results file (none when it does not exist yet); a torn (unterminated,
    unparsable) last line is ignored.

    Raises
    ------
    BenchmarkError
        If another line is not a JSON object, or an object without a ``key`` (the file is not
        a results file).
    """
    if not Path(path).exists():
        return []
    records = read_json_lines(path, what="results file", error=BenchmarkError)
    for number, record in enumerate(records, 1):
        if "key" not in record:
            raise BenchmarkError(f"{path}: record {number} is not a benchmark record")
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


@dataclass(frozen=True, slots=True)
class Resumed:
    """A resumed study: ``kept`` of its ``total`` records were already in the file (``failed``
    of them ERROR / CRASH), covering ``cases_done`` of its ``cases`` cases in full."""

    kept: int
    total: int
    failed: int
    cases_done: int
    cases: int

    def message(self, out: str | os.PathLike[str]) -> str:
        """The line ``tacopt bench`` prints on stderr.

        >>> Resumed(6, 10, 0, 3, 5).message("r.jsonl")[:60]
        'resuming r.jsonl: 6 of 10 records are already there and are '
        """
        failed = (
            f"; {self.failed} failed: --retry-failed runs them again" if self.failed else ""
        )
        return (
            f"resuming {out}: {self.kept} of {self.total} records are already there and are not "
            f"run again ({self.cases_done} of {self.cases} cases complete{failed}); "
            f"{self.total - self.kept} to run"
        )


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
    on_resume: Callable[[Resumed], None] | None = None,
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
    on_resume : callable, optional
        Called once, before any work, with a :class:`Resumed` when ``out`` already holds some
        of the study's records (which are kept, not run again); ``tacopt bench`` says so.

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
    _refuse_other_zoos(out, existing, cases)
    by_key = {r["key"]: r for r in existing if not (retry_failed and r.get("status") in FAILED)}
    todo: list[tuple[Case, dict[str, dict]]] = []
    for case in cases:
        done = {p: by_key[case.record_key(p)] for p in case.pickers if case.record_key(p) in by_key}
        if len(done) < len(case.pickers):
            todo.append((case, done))
    check_models(case for case, _ in todo)
    kept = sum(len(case.pickers) for case in cases) - sum(
        len(case.pickers) - len(done) for case, done in todo
    )
    if kept and on_resume is not None:
        on_resume(
            Resumed(
                kept=kept,
                total=sum(len(case.pickers) for case in cases),
                failed=sum(
                    by_key[k].get("status") in FAILED
                    for case in cases
                    for k in map(case.record_key, case.pickers)
                    if k in by_key
                ),
                cases_done=len(cases) - len(todo),
                cases=len(cases),
            )
        )

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



def _refuse_other_zoos(out: Path, existing: Sequence[dict], cases: Sequence[Case]) -> None:
    """A results file belongs to one study: refuse to add a zoo to a file that holds another
    one's records (its report would mix both), before any work."""
    ours = {case.item.zoo for case in cases}
    theirs = sorted({str(r["zoo"]) for r in existing if r.get("zoo") not in ours | {None}})
    if theirs:
        raise BenchmarkError(
            f"results file '{out}' holds the records of another study (zoo "
            f"{', '.join(theirs)}), not of {', '.join(sorted(ours))}: give --out a new file"
        )


def warm_up(pickers: Iterable[str]) -> None:
    """Solve a small problem with each of ``pickers`` so that the first timed solve of a process
    does not include solver start-up (imports, OR-Tools / HiGHS initialisation). Failures are
    ignored: the real cases report them."""
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
    return case, failed_records(case, [p for p in case.pickers if p not in done], crash)


def _worker_setup(study: Study, load: Sequence[str]) -> WorkerSetup:
    """What workers import first: ``load``, and the user modules that registered the study's
    pickers, cost models and devices in this process; which pickers they warm up."""
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
    out: list[tuple[str, Any]] = [
        (f"picker {p!r}", _picker(p)) for p in study.pickers if not is_picker_spec(p)
    ]
    out += [(f"cost model {m!r}", get_cost_model(m, checked=False)) for m in study.cost_models]
    devices = sorted({d for ds in study.device_sets for d in ds})
    out += [(f"device {d!r}", get_target(d)) for d in devices]
    return out


def _picker(name: str) -> Any:
    return get_picker(name)


def _module_of(obj: Any) -> str:
    name = getattr(obj, "__module__", None) or type(obj).__module__
    return str(name)


def _check_workers_know(study: Study, known: Mapping[str, Sequence[str]]) -> None:
    """Refuse a study naming a picker, device or cost model that worker processes lack."""
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
        # Deferred: dask is optional (the [dask] extra), needed only with --scheduler.
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
    return tqdm(total=total, initial=initial, unit="case", file=sys.stderr, dynamic_ncols=True)

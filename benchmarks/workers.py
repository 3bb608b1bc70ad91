"""Worker processes of a study: each runs one case at a time and can be stopped at once.

A worker is ``python -m tacopt.benchmarks.worker_main FD`` (:mod:`~tacopt.benchmarks.worker_main`),
started with :mod:`subprocess` in a process group of its own, talking to the study over a socket
(``FD``) with :class:`multiprocessing.connection.Connection` messages. Compared with a
:class:`~concurrent.futures.ProcessPoolExecutor`:

- Ctrl-C reaches only the study's process (workers are not in the terminal's process group, and
  ignore SIGINT anyway); the study kills its workers without waiting for their solves, so it
  stops at once and keeps every finished record;
- a worker never re-imports the user's ``__main__``: a study started from an unguarded script
  does not start again in each worker;
- a worker that dies (a native crash) loses exactly the case it was running.

A worker first imports what the study needs (:class:`WorkerSetup`: ``--load`` modules and the
modules that registered the study's pickers, cost models and devices), answers with the names
it knows (so the study can refuse up front what workers cannot run), warms up the solvers, then
runs cases until the study closes the connection.

Messages, worker to study: ``("hello", known)``, ``("error", message)``, ``("done", index,
records)``; study to worker: a :class:`WorkerSetup`, then ``(index, case, done)`` per case.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from tacopt.benchmarks.zoos import BenchmarkError
from tacopt.cost_models.base import registered_cost_models
from tacopt.partitioner.cli import load_module
from tacopt.partitioner.pickers import picker_names
from tacopt.partitioner.targets import target_names


@dataclass(frozen=True, slots=True)
class WorkerSetup:
    """What a worker does before its first case.

    ``load`` are ``--load`` specs (module names or ``.py`` files); ``modules`` are (name, file)
    of modules that registered extensions in the study's process, imported by name, or from
    their file under the same name; ``warm_up`` are pickers solved once on a small problem so
    that solver start-up is not timed in the first case.
    """

    load: tuple[str, ...] = ()
    modules: tuple[tuple[str, str | None], ...] = ()
    warm_up: tuple[str, ...] = ()


def known_names() -> dict[str, tuple[str, ...]]:
    """Names of the registered pickers, devices and cost models in this process."""
    return {
        "picker": picker_names(),
        "device": target_names(),
        "cost model": tuple(registered_cost_models()),
    }


def prepare(setup: WorkerSetup) -> None:
    """Import what ``setup`` names (``--load`` first); raises a TacoptError naming the module."""
    for spec in setup.load:
        load_module(spec)
    for name, file in setup.modules:
        if name not in sys.modules:
            _import(name, file)


def _import(name: str, file: str | None) -> None:
    try:
        if importlib.util.find_spec(name) is not None or file is None:
            importlib.import_module(name)
            return
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's module failing in a worker, reported on one line
        raise BenchmarkError(
            f"worker process: cannot import module {name!r}: {type(exc).__name__}: {exc}"
        ) from None


# ---------------------------------------------------------------------------------------------
# the study's side


class Worker:
    """One worker process and the study's end of its connection."""

    def __init__(self, setup: WorkerSetup) -> None:
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        # the worker imports what this process can import (as multiprocessing's spawn does)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tacopt.benchmarks.worker_main", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # Ctrl-C in the terminal reaches the study, not workers
            )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.conn.send(setup)
        self.case: int | None = None  # index of the case it runs
        self.ready = False  # said hello

    def kill(self) -> None:
        """Stop the worker now, whatever it is doing."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.conn.close()


@contextmanager
def started(jobs: int, setup: WorkerSetup) -> Iterator[list[Worker]]:
    """``jobs`` workers, all killed on leaving (also on Ctrl-C: a second one is ignored then)."""
    workers: list[Worker] = []
    try:
        for _ in range(jobs):
            workers.append(Worker(setup))
        yield workers
    finally:
        with _sigint_ignored():
            for worker in workers:
                worker.kill()


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        # None: a handler not installed from Python, which cannot be put back
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


def receive(workers: Sequence[Worker]) -> Iterator[tuple[Worker, Any]]:
    """Wait for the next messages of ``workers``; a dead worker's message is ``None``."""
    by_conn = {w.conn: w for w in workers}
    for conn in wait(list(by_conn)):
        worker = by_conn[conn]  # type: ignore[index]
        try:
            yield worker, worker.conn.recv()
        except (EOFError, OSError):
            yield worker, None


# ---------------------------------------------------------------------------------------------
# the worker's side

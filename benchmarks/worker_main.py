"""The worker side of a study: ``python -m tacopt.benchmarks.worker_main FD`` runs cases sent by
the study (:mod:`tacopt.benchmarks.workers` starts it and talks to it) until the study closes
the connection. It ignores Ctrl-C (the study stops it) and dies with the study's process.
"""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Sequence
from multiprocessing.connection import Connection

from tacopt.benchmarks.harness import run_case, warm_up
from tacopt.benchmarks.workers import known_names, prepare
from tacopt.errors import TacoptError


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the study's process dies (no orphan solves)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def serve(conn: Connection) -> None:
    """Run the worker protocol on ``conn`` until the study closes it."""
    setup = conn.recv()
    try:
        prepare(setup)
    except TacoptError as exc:
        conn.send(("error", str(exc)))
        return
    conn.send(("hello", known_names()))
    warm_up(setup.warm_up)
    while True:
        try:
            index, case, done = conn.recv()
        except EOFError:
            return
        conn.send(("done", index, run_case(case, done)))


def main(argv: Sequence[str]) -> None:
    """``python -m tacopt.benchmarks.worker_main FD``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the study handles Ctrl-C and stops us
    _die_with_parent()
    serve(Connection(int(argv[0])))


if __name__ == "__main__":
    main(sys.argv[1:])

"""Generators for harness tests: one that kills its worker process, one that raises a bug."""

from __future__ import annotations

import os

from tacopt.partitioner.problem.synthetic import layered_dag_problem


def die(size: int, seed: int):
    """Kill the process that runs it, as a segfault in native code would."""
    os._exit(3)


def buggy(size: int, seed: int):
    raise ZeroDivisionError("a bug in a generator")


def small(size: int, seed: int):
    return layered_dag_problem(size, seed=seed)

"""Errors of the partitioner package: bad pick problems and plans that do not check out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tacopt.errors import TacoptError, one_line


class ProblemError(TacoptError):
    """A pick problem that cannot be used: malformed JSON, unknown names, NaN costs, a cycle."""


class PlanError(TacoptError):
    """A plan that does not fit its problem, or whose reported objective does not recompute."""


class PickerError(TacoptError):
    """A picker misused: unknown name, duplicate registration, a problem outside its scope."""


@dataclass(frozen=True, slots=True)
class WorkerFailure:
    """What a picker's forked worker sends in place of its result when it failed: the error on
    one line, for the parent to raise (:func:`worker_result`) instead of the worker printing a
    traceback while the command goes on to exit 0."""

    message: str

    @classmethod
    def of(cls, exc: BaseException) -> WorkerFailure:
        return cls(one_line(f"{type(exc).__name__}: {exc}"))


def send_result(send: Any, compute: Callable[[], Any]) -> None:
    """In a worker: send ``compute()`` through the pipe end ``send``, or its failure."""
    try:
        result = compute()
    except Exception as exc:  # sent to the parent, which raises it (no traceback here)
        result = WorkerFailure.of(exc)
    send.send(result)


def worker_result(message: Any) -> Any:
    """``message`` received from a worker, or a :class:`PickerError` when it is a failure.

    >>> worker_result(3)
    3
    >>> worker_result(WorkerFailure("ValueError: x"))
    Traceback (most recent call last):
    ...
    tacopt.partitioner.errors.PickerError: a picker's worker process failed: ValueError: x
    """
    if isinstance(message, WorkerFailure):
        raise PickerError(f"a picker's worker process failed: {message.message}")
    return message

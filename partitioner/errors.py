"""Errors of the partitioner package: bad pick problems and plans that do not check out."""

from __future__ import annotations

from tacopt.errors import TacoptError


class ProblemError(TacoptError):
    """A pick problem that cannot be used: malformed JSON, unknown names, NaN costs, a cycle."""


class PlanError(TacoptError):
    """A plan that does not fit its problem, or whose reported objective does not recompute."""


class PickerError(TacoptError):
    """A picker misused: unknown name, duplicate registration, a problem outside its scope."""

"""The project's exception types.

Every error a user can cause (a broken file, an unknown device, a malformed problem, NaN costs)
is a :class:`TacoptError` whose message is one line naming what went wrong and where. The CLI
prints that line and exits with code 2; anything else is a bug in tacopt.
"""

from __future__ import annotations


class TacoptError(Exception):
    """Base class of every error tacopt raises on bad input."""


class ModelFormatError(TacoptError):
    """A .tflite file (or buffer) that cannot be read: missing, truncated, corrupt, out of range."""


class GraphError(TacoptError):
    """A graph that breaks an IR invariant checked by :func:`tacopt.fusion.ir.validate_graph`."""


class FusionError(TacoptError):
    """A composite whose signature does not verify, or a fusion registry misuse."""


class ExecutionError(TacoptError):
    """The reference executor met an op it cannot run or inputs it cannot use."""


class OutputError(TacoptError):
    """An output path that cannot be written: a folder, a missing parent, no permission."""


class ResourceLimitError(TacoptError):
    """An input that would need more memory than a documented, overridable cap allows."""

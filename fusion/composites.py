"""Composite operations and the fusion registry.

A **composite** is a set of primitive ops with a declared interface: an ``implements`` name,
attributes, ordered inputs and outputs (TensorFlow's ``tf.function(experimental_implements=...)``).
Composites are recorded on a graph as ``G.graph["composites"]``, a tuple of :class:`Composite`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Composite:
    """A region of ops that implements a named operation.

    ``inputs`` are the tensors the region reads from outside (constants included) in first-use
    order; ``outputs`` the tensors it produces that are read outside it or are graph outputs, in
    production order; ``ops`` the op names of the region in execution order.
    """

    implements: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()

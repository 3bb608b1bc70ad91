"""Why a device refuses an op: its kind, its inference type, a condition of its support table,
its memory, or a pin; as it is (:func:`refusal`) and after lowering (:func:`runnable_refusal`).

The one answer that pins (:mod:`tacopt.partitioner.annotate`) and the explanations
(:mod:`tacopt.partitioner.explain`) both give.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from tacopt.fusion.ir.vocabulary import QUANTIZED_TYPES
from tacopt.partitioner.subgraphs import Subgraph, extract_subgraph
from tacopt.partitioner.targets import Target
from tacopt.partitioner.views import float_view, lowered_view

#: The reasons a device refuses an op, in the order they are checked.
REASONS = ("pin", "kind", "type", "predicate", "memory")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why ``device`` cannot run an op: one of :data:`REASONS` and a sentence naming what."""

    device: str
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.device} refuses it ({self.reason}): {self.detail}"

    def to_dict(self) -> dict[str, str]:
        """JSON form: ``{"reason": ..., "detail": ...}``."""
        return {"reason": self.reason, "detail": self.detail}


def refusal(target: Target, G: nx.MultiDiGraph, node: str, itype: str) -> Refusal | None:
    """Why ``target`` cannot run op ``node`` of ``G`` as ``itype`` as it is (no lowering).

    A target with a ``refusal`` method (the built-in table targets) names the reason; any other
    target is asked ``supports`` and a refusal is its ``predicate``.

    Examples
    --------
    >>> from tacopt.fusion.ir import Op, Tensor, make_graph
    >>> from tacopt.partitioner.targets import get_target
    >>> G = make_graph("g", [Tensor("x", (4,), "float32"), Tensor("y", (4,), "float32")],
    ...                [Op("s", "SLICE", ("x",), ("y",))], ["x"], ["y"])
    >>> refusal(get_target("GPU"), G, "s", "FLOAT").detail
    'GPU runs SLICE only when its output has 4 dimensions'
    """
    method = getattr(target, "refusal", None)
    if method is not None:
        found = method(G, node, itype)
        return None if found is None else Refusal(target.name, *found)
    if target.supports(G, node, itype):
        return None
    kind = G.nodes[node]["op"].kind
    return Refusal(target.name, "predicate", f"{target.name}'s support check refuses {kind}")


def runnable_refusal(
    G: nx.MultiDiGraph, node: str, target: Target, itype: str, *, float_form: bool = False
) -> Refusal | None:
    """Why ``target`` cannot run op ``node`` even after lowering it (None: it can).

    Tries the op as it is, then lowered for the device (as a view would be), and with
    ``float_form`` a quantized op's float form too. The refusal returned is the op's own one,
    in its own type.
    """
    direct = refusal(target, G, node, itype)
    if direct is None:
        return None
    unit = Subgraph(node, target.name, itype, (node,))
    S = extract_subgraph(G, unit)
    if lowered_view(unit, S, target, itype) is not None:
        return None
    if float_form and itype in QUANTIZED_TYPES:
        F = float_view(S)
        if F is not None and lowered_view(unit, F, target, "FLOAT") is not None:
            return None
    return direct

"""The rewrite machinery of the fusion rules: a read-only view, proposals, and their application.

A rule is a plain ``(name, kinds, match)`` record, tinygrad-style: ``match(view, op)`` looks at
the graph around an op of one of ``kinds`` and returns a :class:`Rewrite` proposal (data) or
``None``. :class:`Editor` applies proposals to its own working copy of one graph and checks the
guards every rule shares:

- every intermediate (an output of a replaced op that the new ops do not produce) is read only by
  the replaced ops and is not a graph output (so "single consumer" holds for chains);
- replaced ops are not inside an unfused composite;
- ops stay in one graph (control-flow bodies are rewritten separately, never merged).

New ops take the place of the last replaced op, which keeps node order an execution order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from tacopt.errors import GraphError
from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph, numpy_dtype, ops_of


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Proposal: replace the ops named ``remove`` by ``ops``, adding or replacing ``tensors``."""

    remove: tuple[str, ...]
    ops: tuple[Op, ...]
    tensors: tuple[Tensor, ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    """A named pattern: ``match(view, op)`` is called for every op whose kind is in ``kinds``."""

    name: str
    kinds: frozenset[str]
    match: Callable[[Editor, Op], Rewrite | None]
    #: True when the rule only produces builtin ops (its output loads in ai-edge-litert).
    builtin: bool = True


@dataclass(slots=True)
class Editor:
    """A mutable working copy of one graph that rules read and rewrites are applied to."""

    name: str
    tensors: dict[str, Tensor]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    ops: dict[str, Op] = field(default_factory=dict)
    pos: dict[str, float] = field(default_factory=dict)
    producer: dict[str, str] = field(default_factory=dict)
    readers: dict[str, dict[str, None]] = field(default_factory=dict)
    frozen: frozenset[str] = frozenset()
    root: nx.MultiDiGraph | None = None
    _fresh: int = 0

    @classmethod
    def of(
        cls, G: nx.MultiDiGraph, *, frozen: Iterable[str] = (), root: nx.MultiDiGraph | None = None
    ) -> Editor:
        ed = cls(G.graph["name"], dict(G.graph["tensors"]), G.graph["inputs"], G.graph["outputs"])
        ed.frozen = frozenset(frozen)
        ed.root = G if root is None else root
        for i, (_, op) in enumerate(ops_of(G)):
            ed._insert(op, float(i))
        return ed

    # ---- reading -------------------------------------------------------------------------

    def tensor(self, t: str) -> Tensor:
        return self.tensors[t]

    def producer_of(self, t: str | None) -> Op | None:
        n = self.producer.get(t) if t is not None else None
        return self.ops[n] if n is not None else None

    def readers_of(self, t: str) -> list[Op]:
        return [self.ops[n] for n in self.readers.get(t, ())]

    def is_output(self, t: str) -> bool:
        return t in self.outputs

    def sole_reader(self, t: str) -> Op | None:
        """The one op reading ``t`` when ``t`` has exactly one reader and is not a graph output."""
        r = self.readers.get(t, {})
        if len(r) != 1 or t in self.outputs:
            return None
        return self.ops[next(iter(r))]

    def is_const(self, t: str | None) -> bool:
        return t is not None and self.tensors[t].is_constant

    def value(self, t: str | None) -> np.ndarray | None:
        """The constant's values, or None for an activation or a dropped (placeholder) constant."""
        if t is None:
            return None
        rec = self.tensors[t]
        if rec.buffer is None or rec.buffer.is_placeholder:
            return None
        return rec.data()

    def scalar(self, t: str | None) -> float | None:
        """The value of a constant whose elements are all equal, else None."""
        v = self.value(t)
        if v is None or v.size == 0 or v.dtype.kind not in "fiu":
            return None
        flat = v.reshape(-1)
        return float(flat[0]) if np.all(flat == flat[0]) else None

    def subgraph(self, name: str) -> nx.MultiDiGraph:
        if self.root is None:
            raise GraphError(f"graph '{self.name}': no root graph to find subgraph '{name}' in")
        return self.root.graph["subgraphs"][name]

    # ---- writing -------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        """A tensor or op name not used yet, derived from ``base``."""
        name = base
        while name in self.tensors or name in self.ops:
            self._fresh += 1
            name = f"{base}_{self._fresh}"
        return name

    def const(
        self,
        base: str,
        value: np.ndarray | None,
        shape: tuple[int, ...],
        dtype: str,
        like: Tensor | None = None,
    ) -> Tensor:
        """A new constant record (a placeholder of the right size when ``value`` is None)."""
        name = self.fresh(base)
        if value is None:
            nbytes = int(np.prod(shape, dtype=np.int64)) * numpy_dtype(dtype).itemsize
            buf = Buffer.placeholder(nbytes)
        else:
            buf = Buffer.from_bytes(np.ascontiguousarray(value, dtype=numpy_dtype(dtype)))
        quant = like.quantization if like is not None else None
        return Tensor(name, tuple(shape), dtype, quantization=quant, buffer=buf)

    def apply(self, rw: Rewrite) -> bool:
        """Apply ``rw`` if the shared guards hold; returns whether it was applied."""
        remove = set(rw.remove)
        if not remove or remove & self.frozen or not remove <= self.ops.keys():
            return False
        new_outputs = {t for op in rw.ops for t in op.outputs} | {t.name for t in rw.tensors}
        for n in rw.remove:
            for t in self.ops[n].outputs:
                if t in new_outputs:
                    continue
                if t in self.outputs or any(r not in remove for r in self.readers.get(t, ())):
                    return False
        anchor = max(self.pos[n] for n in rw.remove)
        origin = tuple(sorted({i for n in rw.remove for i in self.ops[n].origin}))
        for n in rw.remove:
            self._delete(n)
        for rec in rw.tensors:
            self.tensors[rec.name] = rec
        step = 1.0 / (len(rw.ops) + 1)
        for i, op in enumerate(rw.ops):
            if op.name in self.ops:
                op = dataclasses.replace(op, name=self.fresh(op.name))
            op = dataclasses.replace(op, origin=tuple(sorted({*origin, *op.origin})))
            self._insert(op, anchor - 1.0 + step * (i + 1) if i < len(rw.ops) - 1 else anchor)
        return True

    def _insert(self, op: Op, pos: float) -> None:
        self.ops[op.name] = op
        self.pos[op.name] = pos
        for t in op.inputs:
            if t is not None:
                self.readers.setdefault(t, {})[op.name] = None
        for t in op.outputs:
            self.producer[t] = op.name

    def _delete(self, n: str) -> None:
        op = self.ops.pop(n)
        del self.pos[n]
        for t in op.inputs:
            if t is not None:
                self.readers.get(t, {}).pop(n, None)
        for t in op.outputs:
            if self.producer.get(t) == n:
                del self.producer[t]

    def ordered_ops(self) -> list[Op]:
        return [self.ops[n] for n in sorted(self.ops, key=self.pos.__getitem__)]

    def to_graph(self) -> nx.MultiDiGraph:
        """The graph of the current ops, keeping only the tensors that are still referenced."""
        ops = self.ordered_ops()
        used = set(self.inputs) | set(self.outputs)
        for op in ops:
            used.update(t for t in op.inputs if t is not None)
            used.update(op.outputs)
            used.update(op.intermediates)
        tensors = [t for name, t in self.tensors.items() if name in used]
        return make_graph(self.name, tensors, ops, self.inputs, self.outputs)


def replace(op: Op, **changes: Any) -> Op:
    """A copy of ``op`` with some fields changed (``options`` are merged, not replaced)."""
    if "options" in changes:
        changes["options"] = {**op.options, **changes["options"]}
    return dataclasses.replace(op, **changes)


def op_name(ed: Editor, kind: str, like: Op) -> str:
    """Name of a fused op: its kind and the index of the op it stands in for."""
    suffix = like.name.rsplit("_", 1)[-1]
    base = "".join(c if c.isalnum() else "_" for c in kind.lower())
    return ed.fresh(f"{base}_{suffix}" if suffix.isdigit() else f"{base}_{like.name}")

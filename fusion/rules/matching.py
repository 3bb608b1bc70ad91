"""A tiny pattern language for recognizers: op trees matched backwards from an anchor tensor.

``P("MUL", "x", P("LOGISTIC", "x"))`` matches a MUL of some tensor ``x`` with LOGISTIC(``x``).
Arguments are sub-patterns, capture names (``"x"``: any tensor, equal wherever the name repeats),
numbers (a constant whose elements all equal the number in float32, to 1e-6 relative) or
``C("name")`` (any constant, captured). ADD, MUL, MAXIMUM, MINIMUM and SQUARED_DIFFERENCE
match either argument order.
An op with a ``fused_activation_function`` matches only when it equals ``act``.

>>> from tacopt.fusion.ir.builder import GraphBuilder
>>> from tacopt.fusion.rules.base import Editor
>>> b = GraphBuilder()
>>> x = b.input("x", (4,))
>>> G = b.build(outputs=[b.op("MUL", b.op("LOGISTIC", x), x)])
>>> m = match(Editor.of(G), P("MUL", "x", P("LOGISTIC", "x")), "mul_1")
>>> m.env["x"], m.ops
('x', ('logistic_0', 'mul_1'))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from tacopt.fusion.rules.base import Editor

COMMUTATIVE = frozenset({"ADD", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"})


@dataclass(frozen=True, slots=True)
class C:
    """Any constant tensor, captured under ``name``."""

    name: str


@dataclass(frozen=True, slots=True)
class P:
    """An op of kind ``kind`` (or any of a tuple of kinds) whose inputs match ``args``."""

    kind: str | tuple[str, ...]
    args: tuple[Arg, ...]
    act: str = "NONE"
    opts: Mapping[str, Any] = field(default_factory=dict)
    bind: str | None = None

    def __init__(self, kind, *args, act="NONE", opts=None, bind=None):  # noqa: D107
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "act", act)
        object.__setattr__(self, "opts", opts or {})
        object.__setattr__(self, "bind", bind)


Arg = Union[P, C, str, float]  # noqa: UP007 (a runtime alias; py3.10 has no `|` on classes here)


@dataclass(frozen=True, slots=True)
class Match:
    """Captured tensors by name and the matched ops in execution order."""

    env: dict[str, str]
    ops: tuple[str, ...]


def match(ed: Editor, pat: P, t: str) -> Match | None:
    """Match ``pat`` against the op producing tensor ``t``; None when it does not match."""
    found = _match(ed, pat, t, {}, [])
    if found is None:
        return None
    env, ops = found
    return Match(env, tuple(sorted(set(ops), key=ed.pos.__getitem__)))


def _match(ed, arg, t, env, ops):
    if t is None:
        return None
    if isinstance(arg, str):
        if arg in env:
            return (env, ops) if env[arg] == t else None
        return {**env, arg: t}, ops
    if isinstance(arg, C):
        if not ed.is_const(t) or env.get(arg.name, t) != t:
            return None
        return {**env, arg.name: t}, ops
    if isinstance(arg, (int, float)):
        v = ed.value(t)
        if v is None or v.dtype.kind != "f" or v.size == 0:
            return None
        return (env, ops) if np.allclose(v, np.float32(arg), rtol=1e-6, atol=0) else None
    op = ed.producer_of(t)
    kinds = (arg.kind,) if isinstance(arg.kind, str) else arg.kind
    if op is None or op.kind not in kinds or op.outputs[0] != t:
        return None
    if op.options.get("fused_activation_function", "NONE") != arg.act:
        return None
    if any(op.options.get(k) != v for k, v in arg.opts.items()):
        return None
    if arg.bind is not None:
        if env.get(arg.bind, t) != t:
            return None
        env = {**env, arg.bind: t}
    ins = [i for i in op.inputs]
    if len(ins) < len(arg.args):
        return None
    orders = [ins]
    if op.kind in COMMUTATIVE and len(arg.args) == 2:
        orders.append([ins[1], ins[0]])
    for order in orders:
        state = (env, [*ops, op.name])
        for a, ti in zip(arg.args, order):
            state = _match(ed, a, ti, *state)
            if state is None:
                break
        if state is not None:
            return state
    return None

"""``fuse``: composites, then pattern rules, to a fixed point; the fused networkx DAG.

The pipeline, in named stages:

1. **composites**: every composite recorded by the builder (``G.graph["composites"]``) and every
   STABLEHLO_COMPOSITE op goes through the fusion registry (:mod:`tacopt.fusion.rules.composites`);
2. **rules**: the rule list (default :data:`DEFAULT_RULES`: the LSTM loop fusion and the pattern
   rules of :mod:`tacopt.fusion.rules.patterns`) is applied to the main graph, then to every nested
   graph still called, repeating until nothing changes;
3. **assemble**: a new graph (the input is never mutated) keeping only referenced tensors and
   nested graphs; each fused op's ``origin`` lists the original ops it replaced.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import networkx as nx

from tacopt.fusion.ir import ops_of
from tacopt.fusion.rnn import composites as _rnn_composites  # noqa: F401  (registers the RNN fusions)
from tacopt.fusion.rnn.lstm import RULES as LSTM_RULES
from tacopt.fusion.rules.base import Editor, Rule
from tacopt.fusion.rules.composites import Composite, fuse_composites, stablehlo_composites
from tacopt.fusion.rules.patterns import BUILTIN_RULES
from tacopt.fusion.rules.patterns import RULES as PATTERN_RULES

#: Every built-in rule, in the order they are tried.
DEFAULT_RULES: list[Rule] = [*LSTM_RULES, *PATTERN_RULES]
#: The built-in rules whose fused ops are all TFLite builtins (the output loads in ai-edge-litert).
BUILTIN_ONLY_RULES: list[Rule] = [*LSTM_RULES, *BUILTIN_RULES]

MAX_ROUNDS = 8


@dataclass(frozen=True, slots=True)
class FuseResult:
    """The fused graph, fusions applied per rule (and per composite name), and warnings."""

    graph: nx.MultiDiGraph
    counts: dict[str, int]
    warnings: tuple[str, ...]
    ops_before: int
    ops_after: int


def fuse(
    G: nx.MultiDiGraph, *, rules: Sequence[Rule] | None = None, strict: bool = False
) -> FuseResult:
    """Fuse composites and patterns of ``G`` into fused ops; returns a new graph.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        A graph in the IR of :mod:`tacopt.fusion.ir` (not modified).
    rules : sequence of Rule, optional
        The pattern rules to apply (default :data:`DEFAULT_RULES`; ``[]`` fuses composites only).
    strict : bool
        Raise :class:`~tacopt.errors.FusionError` for a composite that cannot be fused
        instead of returning a warning.

    Returns
    -------
    FuseResult
        ``graph`` (``validate_graph`` holds), ``counts`` (rule or composite name -> fusions),
        ``warnings`` (one line per composite left unfused), op counts before and after (all
        graphs).

    Examples
    --------
    >>> import numpy as np
    >>> from tacopt.fusion.ir.builder import GraphBuilder
    >>> b = GraphBuilder()
    >>> x = b.input("x", (1, 4, 4, 2))
    >>> y = b.op("RELU", b.op("CONV_2D", x, np.ones((3, 1, 1, 2)), np.zeros(3)))
    >>> r = fuse(b.build(outputs=[y]))
    >>> r.counts, [op.kind for _, op in ops_of(r.graph)], r.graph.nodes["conv_2d_0"]["op"].origin
    ({'fold_activation': 1}, ['CONV_2D'], (0, 1))
    """
    rules = DEFAULT_RULES if rules is None else list(rules)
    counts: Counter[str] = Counter()
    subgraphs = G.graph.get("subgraphs", {})

    # 1. composites (main graph; builder composites and STABLEHLO_COMPOSITE ops)
    main = Editor.of(_with_origins(G), root=G)
    composites: list[Composite] = [*G.graph.get("composites", ()), *stablehlo_composites(main)]
    outcome = fuse_composites(main, composites, strict=strict)
    counts.update(outcome.counts)
    main.frozen = frozenset(n for c in outcome.unfused for n in c.ops)

    # 2. rules, main graph first (loop fusions drop their bodies), then the bodies still called
    _apply_rules(main, rules, counts)
    called = _called(main, subgraphs)
    editors = {name: Editor.of(_with_origins(subgraphs[name]), root=G) for name in called}
    for ed in editors.values():
        _apply_rules(ed, rules, counts)

    # 3. assemble
    out = main.to_graph()
    for key in ("model",):
        if key in G.graph:
            out.graph[key] = G.graph[key]
    out.graph["subgraphs"] = {name: ed.to_graph() for name, ed in editors.items()}
    out.graph["composites"] = tuple(outcome.unfused)
    ops_before = sum(g.number_of_nodes() for g in [G, *subgraphs.values()])
    ops_after = sum(g.number_of_nodes() for g in [out, *out.graph["subgraphs"].values()])
    return FuseResult(out, dict(sorted(counts.items())), outcome.warnings, ops_before, ops_after)


def _apply_rules(ed: Editor, rules: Sequence[Rule], counts: Counter[str]) -> None:
    for _ in range(MAX_ROUNDS):
        changed = False
        for rule in rules:
            for op in ed.ordered_ops():
                if op.kind not in rule.kinds or ed.ops.get(op.name) is not op:
                    continue
                rw = rule.match(ed, op)
                if rw is not None and ed.apply(rw):
                    counts[rule.name] += 1
                    changed = True
        if not changed:
            return


def _called(main: Editor, subgraphs: dict[str, nx.MultiDiGraph]) -> list[str]:
    """Nested graphs reachable from the main graph's ops, in their stored order."""
    seen: set[str] = set()
    todo = [s for op in main.ordered_ops() for s in op.called_subgraphs]
    while todo:
        name = todo.pop()
        if name in seen or name not in subgraphs:
            continue
        seen.add(name)
        todo.extend(s for _, op in ops_of(subgraphs[name]) for s in op.called_subgraphs)
    return [name for name in subgraphs if name in seen]


def _with_origins(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """``G`` itself when every op has an origin, else a copy giving op i the origin (i,)."""
    if all(op.origin for _, op in ops_of(G)):
        return G
    H = G.copy()
    for i, (n, op) in enumerate(ops_of(G)):
        if not op.origin:
            H.nodes[n]["op"] = replace(op, origin=(i,))
    return H


def op_histogram(G: nx.MultiDiGraph) -> dict[str, int]:
    """Op kind -> count over the main and nested graphs, sorted by kind.

    >>> from tacopt.fusion.ir.builder import GraphBuilder
    >>> b = GraphBuilder()
    >>> op_histogram(b.build(outputs=[b.op("RELU", b.op("RELU", b.input("x", (2,))))]))
    {'RELU': 2}
    """
    hist: Counter[str] = Counter()
    for g in [G, *G.graph.get("subgraphs", {}).values()]:
        hist.update(op.kind for _, op in ops_of(g))
    return dict(sorted(hist.items()))

"""Pickers: functions that assign one choice to every unit of a pick problem.

A picker is any callable ``picker(problem, **options) -> Plan`` (the :class:`Picker` protocol),
registered by name with :func:`register_picker`. The built-ins are registered by name and
imported on first use (:data:`~tacopt.partitioner.pickers.registry.BUILTIN_PICKERS`):

========== =====================================================================
exact      one solver in stages: reductions, primal search, bounds, proof (engine.py on
           problems in pairwise form, e.g. IOPDDL files; formulation.py + decompose.py with
           tensors); proves optimality (or reports the bound and gap)
mincut     s-t minimum cut; exact and polynomial when units use two choices
tac        TAC's greedy pick-subgraphs pass, quirks included (the baseline)
greedy     topological greedy: each unit minimises its cost plus its inputs' moves
first-fit  the initial plan as it is
brute      exhaustive search over at most 12 units (the test oracle)
========== =====================================================================

Every picker reports the objective of :func:`tacopt.partitioner.plan.evaluate`, so plans compare.

Examples
--------
>>> from tacopt.partitioner.problem.synthetic import layered_dag_problem
>>> p = layered_dag_problem(8, seed=0)
>>> pick(p, "exact").objective <= pick(p, "tac").objective
True
"""

from __future__ import annotations

from tacopt.partitioner.pickers.registry import (  # noqa: F401  (the package's API)
    BUILTIN_PICKERS,
    Picker,
    get_picker,
    is_picker_spec,
    pick,
    picker_names,
    picker_options,
    register_picker,
)

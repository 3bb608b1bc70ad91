"""tacopt: target-aware partitioning of TFLite models across heterogeneous devices.

The main API in one place (see ``docs/api.md`` for a walk-through)::

    import tacopt
    G = tacopt.read_tflite("model.tflite")
    result = tacopt.partition(G, "GPU,CPU", picker="exact")
    print(result.plan)

The code lives in four sub-packages, imported one way only:
``tacopt.fusion`` -> ``tacopt.cost_models`` -> ``tacopt.partitioner`` -> ``tacopt.benchmarks``.
Names below are loaded on first access, so ``import tacopt`` stays cheap (the ``tacopt``
command starts through this package).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it
_API: dict[str, str] = {
    # fusion: read, fuse, check, write
    "read_tflite": "tacopt.fusion.tflite.reader",
    "write_tflite": "tacopt.fusion.tflite.writer",
    "validate_graph": "tacopt.fusion.ir",
    "fuse": "tacopt.fusion.fuse",
    "rehydrate": "tacopt.fusion.tflite.rehydrate",
    "register_fusion": "tacopt.fusion.rules.composites",
    "TacoptError": "tacopt.errors",
    # cost models
    "CostModel": "tacopt.cost_models.base",
    "CostModelBase": "tacopt.cost_models.base",
    "get_cost_model": "tacopt.cost_models.base",
    "register_cost_model": "tacopt.cost_models.base",
    # partitioner: devices, the pipeline, pick problems, pickers, plans
    "SimpleTarget": "tacopt.partitioner.targets",
    "register_target": "tacopt.partitioner.targets",
    "target_names": "tacopt.partitioner.targets",
    "partition": "tacopt.partitioner.pipeline",
    "build_pick_problem": "tacopt.partitioner.pipeline",
    "PickProblem": "tacopt.partitioner.problem",
    "load_problem": "tacopt.partitioner.problem",
    "save_problem": "tacopt.partitioner.problem",
    "pick": "tacopt.partitioner.pickers",
    "register_picker": "tacopt.partitioner.pickers",
    "picker_names": "tacopt.partitioner.pickers",
    "Plan": "tacopt.partitioner.plan",
    "evaluate": "tacopt.partitioner.plan",
    "validate_plan": "tacopt.partitioner.plan",
    "apply_plan": "tacopt.partitioner.apply",
    "export_tflite": "tacopt.partitioner.export",
    # benchmarks
    "run_study": "tacopt.benchmarks.harness",
}

__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'tacopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

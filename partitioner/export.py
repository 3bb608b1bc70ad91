"""Export a partitioned graph as a .tflite with its per-op device plan in the metadata.

The plan is stored as a JSON metadata entry named :data:`PLAN_METADATA` in the model's
``ModelInfo.metadata``: one record per op of the main graph, in execution order (the order the
ops are written in), with its device and inference type, plus the plan's summary.

Examples
--------
>>> import tempfile, pathlib
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> from tacopt.fusion.tflite.reader import read_tflite
>>> from tacopt.partitioner.pipeline import partition
>>> G = make_graph("g", [Tensor(n, (1, 8), "float32") for n in "xy"],
...                [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])
>>> path = export_tflite(partition(G, "GPU,CPU"), pathlib.Path(tempfile.mkdtemp()) / "m.tflite")
>>> read_plan(read_tflite(path))["ops"][0]["device"]
'GPU'
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import networkx as nx

from tacopt.fusion.ir import ModelInfo
from tacopt.fusion.tflite.writer import write_tflite
from tacopt.partitioner.targets import PartitionError

PLAN_METADATA = "tacopt_plan"


def plan_record(G: nx.MultiDiGraph, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """The metadata record of a partitioned graph: per-op device and type, and the summary."""
    ops = []
    for i, (n, data) in enumerate(G.nodes(data=True)):
        if "device" not in data:
            raise PartitionError(f"op '{n}' has no device: apply a plan before exporting")
        ops.append(
            {
                "index": i,
                "op": n,
                "kind": data["op"].kind,
                "device": data["device"],
                "inference_type": data["inference_type"],
            }
        )
    record: dict[str, Any] = {"format": 1, "ops": ops}
    if summary:
        record["plan"] = {
            k: summary[k]
            for k in (
                "picker",
                "status",
                "objective",
                "breakdown",
                "devices",
                "granularity",
                "cost_model",
            )
            if k in summary
        }
    return record


def with_plan_metadata(G: nx.MultiDiGraph, record: dict[str, Any]) -> nx.MultiDiGraph:
    """A shallow copy of ``G`` whose model metadata holds ``record`` (replacing an older one)."""
    model = G.graph.get("model") or ModelInfo()
    kept = tuple((k, v) for k, v in model.metadata if k != PLAN_METADATA)
    payload = json.dumps(record, sort_keys=True).encode()
    H = G.copy()
    H.graph["model"] = dataclasses.replace(model, metadata=(*kept, (PLAN_METADATA, payload)))
    return H


def export_tflite(result: Any, path: str | os.PathLike[str]) -> Path:
    """Write a :class:`~tacopt.partitioner.pipeline.PartitionResult`'s graph with its plan
    metadata."""
    H = with_plan_metadata(result.graph, plan_record(result.graph, result.summary()))
    return write_tflite(H, path)


def read_plan(G: nx.MultiDiGraph) -> dict[str, Any]:
    """The plan record stored in a model read back with
    :func:`~tacopt.fusion.tflite.reader.read_tflite`.
    """
    model = G.graph.get("model")
    for key, value in model.metadata if model else ():
        if key == PLAN_METADATA:
            return json.loads(bytes(value))
    raise PartitionError(f"model '{G.graph.get('name')}' has no '{PLAN_METADATA}' metadata")

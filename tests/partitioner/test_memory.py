"""The memory model: a plan's bytes per device, step by step, including degenerate problems."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.fusion.ir import make_graph
from tacopt.partitioner.cli import main
from tacopt.partitioner.pickers import picker_names
from tacopt.partitioner.pipeline import partition


def no_ops_model(path):
    """A model with no tensors and no ops (``../shared/repro/no_ops.tflite``)."""
    from tacopt.fusion.tflite.writer import write_tflite

    write_tflite(make_graph("empty", [], [], [], []), path)
    return path


@pytest.mark.parametrize("granularity", ["subgraph", "op"])
@pytest.mark.parametrize("picker", picker_names())
def test_a_model_with_no_ops_partitions_under_every_picker(tmp_path, capsys, picker, granularity):
    model = no_ops_model(tmp_path / "no_ops.tflite")
    args = ["partition", str(model), "--devices", "GPU,CPU", "--picker", picker]
    assert main([*args, "--granularity", granularity]) == 0
    out = capsys.readouterr().out
    assert "0 units" in out and "ops per device: none (no ops)" in out


def test_the_memory_of_an_empty_plan_is_zero():
    from tacopt.partitioner.memory import fits_batch, peak_batch
    from tacopt.partitioner.problem import index_problem

    result = partition(make_graph("empty", [], [], [], []), "GPU,CPU")
    index = index_problem(result.problem)
    assert peak_batch(index, np.zeros(0, np.int64)).shape == (1, len(index.devices))
    assert peak_batch(index, np.zeros((3, 0), np.int64)).shape == (3, len(index.devices))
    assert fits_batch(index, np.zeros((3, 0), np.int64)).tolist() == [True] * 3
    assert result.plan.peak_memory == {"CPU": 0.0}


@pytest.mark.parametrize("devices", ["CPU", "GPU,CPU", "NNAPI,CPU"])
def test_the_same_plan_reports_the_same_peak_at_both_granularities(bundled_models, devices):
    """Issue 23: an all-CPU MobileNetV2 reported 14,502,152 B (subgraph) and 19,968,392 B (op)."""
    from tacopt.fusion.tflite.reader import read_tflite
    from tacopt.partitioner.memory import graph_peak_memory

    G = read_tflite(bundled_models["keras__mobilenet_v2_float32.tflite"])
    sub = partition(G, devices, granularity="subgraph", picker="first-fit")
    op = partition(G, devices, granularity="op", picker="first-fit")
    placed = {n: d["device"] for n, d in sub.graph.nodes(data=True)}
    if placed == {n: d["device"] for n, d in op.graph.nodes(data=True)}:  # the same plan
        assert sub.summary()["peak_memory"] == op.summary()["peak_memory"]
    if devices == "CPU":
        assert sub.summary()["peak_memory"] == {"CPU": 19_917_160.0}
    for r in (sub, op):  # the pick problem's count bounds the reported one from above
        reported, unit = graph_peak_memory(r.graph), r.plan.peak_memory
        assert all(unit[d] >= reported[d] * (1 - 1e-9) for d in reported if d in unit), devices


def test_a_plan_picked_within_capacity_fits_at_op_scale(bundled_models):
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(bundled_models["keras__mobilenet_v2_float32.tflite"])
    free = partition(G, "GPU,CPU", picker="greedy")
    limit = 0.9 * free.summary()["peak_memory"]["GPU"]
    limited = partition(G, "GPU,CPU", capacity={"GPU": limit}, picker="exact")
    summary = limited.summary()
    assert summary["fits"] and summary["peak_memory"]["GPU"] <= limit

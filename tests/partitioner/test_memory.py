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

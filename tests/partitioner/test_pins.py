"""Pins all the way through (issue 23): every picker's plan keeps them, on the bundled models and
the shared zoo; a pinned plan never costs less than the free optimum; a pin that cannot hold is
one line naming why."""

from __future__ import annotations

import functools

import pytest

from tacopt.partitioner.pickers import get_picker, pick, picker_names
from tacopt.partitioner.pickers.registry import out_of_scope
from tacopt.partitioner.pipeline import build_pick_problem, partition
from tacopt.partitioner.plan import validate_plan
from tacopt.partitioner.targets import PartitionError
from tests.conftest import bundled_files, zoo_files

#: Convolutions to the CPU, fully connected layers to the GPU (in float: a quantized one runs
#: there in its float form), wherever a model has them.
PINS = (("kind:CONV_2D", "CPU"), ("kind:FULLY_CONNECTED", "GPU"))
DEVICES = "GPU,NNAPI,CPU"
#: exact stops here on the zoo's largest problems (its plan is then FEASIBLE, still pinned).
OPTIONS = {"exact": {"time_limit_s": 10.0}}


def _matching(G, pins):
    from tacopt.fusion.fuse import fuse
    from tacopt.partitioner.annotate import pinned_ops

    hit = set(pinned_ops(fuse(G).graph, pins).values())
    return [pin for i, pin in enumerate(pins) if i in hit]


@functools.lru_cache(maxsize=4)
def _pinned_proposal(path, devices):
    """The pick problem of ``path`` with :data:`PINS` that match (and hold) on ``devices``."""
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(path)
    pins = _matching(G, PINS)
    if not pins:
        return None, pins
    try:
        return build_pick_problem(G, devices, pins=pins), pins
    except PartitionError as exc:  # a pin that cannot hold names why; keep the others
        assert "cannot run on GPU" in str(exc) and "\n" not in str(exc)
        pins = [p for p in pins if p[1] != "GPU"]
        return (build_pick_problem(G, devices, pins=pins) if pins else None), pins


MODELS = [*bundled_files(), *zoo_files()]


@pytest.mark.parametrize("picker", picker_names())
@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_every_picker_keeps_the_pins(path, picker):
    options = OPTIONS.get(picker, {})
    for devices in (DEVICES, "GPU,CPU"):  # mincut takes two choices per unit at most
        proposal, _ = _pinned_proposal(path, devices)
        if proposal is None:
            pytest.skip(f"{path.name} has no op of the pinned kinds")
        reason = out_of_scope(proposal.problem, picker, **options)
        if reason is None:
            break
    else:
        pytest.skip(f"{picker}: {reason}")  # brute: at most 12 units
    pinned = {s.name: s.device for s in proposal.partition.subgraphs if s.pinned}
    assert pinned, path.name
    plan = pick(proposal.problem, picker, **options)
    validate_plan(proposal.problem, plan)
    moved = {u: (d, plan.assignment[u].device) for u, d in pinned.items()
             if plan.assignment[u].device != d}  # fmt: skip
    assert not moved, f"{picker} moved pinned units of {path.name}: {moved}"


def test_every_registered_picker_was_asked():
    # the test above runs every picker registered when it runs; these are the built-ins
    assert {"exact", "tac", "greedy", "first-fit", "mincut", "brute"} <= set(picker_names())
    assert all(callable(get_picker(p)) for p in picker_names())


SMALL = [p for p in MODELS if p.stat().st_size < 2_000_000][:12]


@pytest.mark.parametrize("path", SMALL, ids=[p.name for p in SMALL])
def test_a_pinned_plan_never_costs_less_than_the_free_optimum(path):
    """At op granularity a pin only removes choices, so the pinned optimum is never lower."""
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(path)
    free = partition(G, DEVICES, granularity="op", time_limit_s=30.0)
    assert free.plan.status == "OPTIMAL"
    pins = _matching(G, PINS)
    for pin in pins:
        try:
            pinned = partition(G, DEVICES, granularity="op", pins=[pin], time_limit_s=30.0)
        except PartitionError as exc:
            assert "cannot run on" in str(exc)
            continue
        assert pinned.plan.objective >= free.plan.objective * (1 - 1e-9), (path.name, pin)
        ops = {op for entry in pinned.summary()["pins"] for op in entry["ops"]}
        assert ops and all(pinned.graph.nodes[op]["device"] == pin[1] for op in ops
                           if op in pinned.graph)  # fmt: skip


@pytest.mark.parametrize(
    ("pin", "message"),
    [
        ("kind:CUMSUM=GPU", "pin 'kind:CUMSUM=GPU' matches no op or output tensor"),
        ("conv_2d_0=NPU", "pin 'conv_2d_0=NPU': device NPU is not in the device list GPU,CPU"),
        ("kind:MEAN=TPU", "unknown device 'TPU'"),
    ],
)
def test_a_pin_that_cannot_hold_is_one_line_exit_2(bundled_models, capsys, pin, message):
    from tacopt.partitioner.cli import main

    model = str(bundled_models["keras__mobilenet_v2_float32.tflite"])
    assert main(["partition", model, "--devices", "GPU,CPU", "--pin", pin]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_pin_to_a_device_that_cannot_run_the_op_is_one_line_exit_2(bundled_models, capsys):
    from tacopt.partitioner.cli import main

    model = str(bundled_models["keras__text_lstm_float32.tflite"])
    assert main(["partition", model, "--devices", "GPU,CPU", "--pin", "kind:GATHER=GPU"]) == 2
    err = capsys.readouterr().err
    assert "pin 'kind:GATHER=GPU': op 'gather_" in err and err.count("\n") == 1
    assert "cannot run on GPU: GPU does not run GATHER" in err


def test_bench_takes_pins_and_every_picker_keeps_them(tmp_path, capsys):
    import json

    from tacopt.partitioner.cli import main

    out = tmp_path / "r.jsonl"
    argv = ["bench", "--zoo", "bundled", "--devices", "GPU,CPU", "--granularity", "op",
            "--pickers", "exact,tac,greedy,first-fit", "--pin", "kind:CONV_2D=CPU", "--jobs",
            "1", "--no-progress", "--no-report", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and all(r["pins"] == ["kind:CONV_2D=CPU"] for r in records)
    assert all(r["status"] in ("OPTIMAL", "HEURISTIC") for r in records), records
    assert all(r["key"].endswith(f"|pins=kind:CONV_2D=CPU|{r['picker']}") for r in records)
    capsys.readouterr()
    argv[argv.index("kind:CONV_2D=CPU")] = "kind:CONV_2D=NPU"
    assert main(argv) == 2
    assert "pin 'kind:CONV_2D=NPU': device NPU is in no device set" in capsys.readouterr().err

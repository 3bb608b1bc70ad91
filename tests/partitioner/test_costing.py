"""Costing: the pick problem is valid and its numbers are the cost model's."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.cost_models.base import CostModelError, get_cost_model
from tacopt.fusion.ir import Quantization
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.partitioner.annotate import annotate_targets
from tacopt.partitioner.costing import build_problem, price_view
from tacopt.partitioner.problem import Link, load_problem, save_problem, validate_problem
from tacopt.partitioner.subgraphs import op_units, raise_subgraphs
from tacopt.partitioner.targets import resolve_devices
from tacopt.partitioner.views import enumerate_views

TAC = get_cost_model("tac")


def float_net():
    """x ─ conv_2d_0 ─ relu_1 ─┬─ mean_2 ─ fully_connected_4 ─ y1
    └─ sub_3 ─ y2    (SUB: not on GPU as such; lowered)
    """
    b = GraphBuilder("float_net")
    x = b.input("x", (1, 8, 8, 4))
    h = b.op("RELU", b.op("CONV_2D", x, np.ones((8, 3, 3, 4)), np.zeros(8)))
    m = b.op("MEAN", h, np.array([1, 2], np.int32), keep_dims=False)
    s = b.op("SUB", h, h)
    y1 = b.op("FULLY_CONNECTED", m, np.ones((3, 8)), np.zeros(3))
    return b.build(outputs=[y1, s])


def int8_net():
    """x (int8) ─ conv_2d_0 ─ max_pool_2d_1 ─ y (int8)"""
    q = Quantization((0.05,), (0,))
    b = GraphBuilder("int8_net")
    x = b.input("x", (1, 8, 8, 4), "int8", quantization=q)
    w = b.const(np.ones((4, 3, 3, 4)), dtype="int8", quantization=Quantization((0.01,), (0,)))
    bias = b.const(np.zeros(4), dtype="int32", quantization=Quantization((0.0005,), (0,)))
    h = b.op("CONV_2D", x, w, bias, quantization=q, dtype="int8", shape=(1, 8, 8, 4))
    y = b.op(
        "MAX_POOL_2D",
        h,
        filter_height=2,
        filter_width=2,
        stride_h=2,
        stride_w=2,
        padding="VALID",
        quantization=q,
    )
    return b.build(outputs=[y])


def costed(G, devices, granularity="subgraph", model=TAC):
    targets = resolve_devices(devices)
    raise_units = raise_subgraphs if granularity == "subgraph" else op_units
    part = raise_units(G, annotate_targets(G, targets))
    units = enumerate_views(G, part, targets)
    problem, views = build_problem(G, units, targets, model)
    return part, units, problem, views


@pytest.mark.parametrize("granularity", ["subgraph", "op"])
@pytest.mark.parametrize("devices", ["GPU,CPU", "NNAPI,CPU", "GPU,NNAPI,CPU"])
@pytest.mark.parametrize("net", [float_net, int8_net])
def test_problem_is_valid_and_costs_are_the_cost_models(net, devices, granularity):
    G = net()
    part, units, problem, views = costed(G, devices, granularity)
    validate_problem(problem)
    assert [u.name for u in problem.units] == [s.name for s in part.subgraphs]
    for unit in problem.units:
        assert len(unit.choices) == len(views[unit.name]) >= 1
        assert any(c.device == "CPU" for c in unit.choices)  # the fallback is never dropped
        for choice, view in zip(unit.choices, views[unit.name]):
            assert (choice.device, choice.type) == (view.device, view.inference_type)
            nodes = list(view.graph)
            # TAC's own view cost (GetFuncCost: the float32 per-function sum), bit for bit
            assert choice.cost == TAC.view_cost(view.graph, nodes, view.device, view.inference_type)
            assert choice.cost >= 0  # tac prices some GPU ops at 0, as TAC does


def test_initial_choice_is_the_annotated_one():
    G = float_net()
    part, _, problem, _ = costed(G, "GPU,CPU", "op")
    by_name = {s.name: s for s in part.subgraphs}
    for unit in problem.units:
        s = by_name[unit.name]
        assert unit.choices[unit.initial].label == f"{s.device}/{s.inference_type}"
    sub = next(u for u in problem.units if u.name == "sub_3")
    assert sub.choices[sub.initial].device == "CPU"
    assert {c.device for c in sub.choices} == {"CPU", "GPU"}  # GPU view: ADD + MUL(-1)


def test_int8_units_get_float_choices_priced_as_float():
    G = int8_net()
    _, _, problem, views = costed(G, "GPU,NNAPI,CPU")
    (unit,) = problem.units
    assert {c.label for c in unit.choices} == {
        "NNAPI/QUANTIZED_INT8",
        "CPU/QUANTIZED_INT8",
        "GPU/FLOAT",
        "NNAPI/FLOAT",
        "CPU/FLOAT",
    }
    cost = {c.label: c.cost for c in unit.choices}
    assert cost["CPU/FLOAT"] != cost["CPU/QUANTIZED_INT8"]
    assert problem.quant_per_element == TAC.conversion_cost_per_element("FLOAT", "QUANTIZED_INT8")


def test_tensors_between_units_carry_producer_consumers_shape_and_dtype():
    G = float_net()
    _, _, problem, _ = costed(G, "GPU,CPU", "op")
    t = {e.name: e for e in problem.tensors}
    assert t["x"].producer is None and t["x"].consumers == ("conv_2d_0",)
    assert t["relu_1"].producer == "relu_1"
    assert sorted(t["relu_1"].consumers) == ["mean_2", "sub_3"]
    assert t["relu_1"].shape == (1, 8, 8, 8) and t["relu_1"].dtype == "float32"
    outputs = {e.name for e in problem.tensors if e.output}
    assert outputs == {"fully_connected_4", "sub_3"}
    assert "const_0" not in t  # constants stay with their unit


def test_links_come_from_the_cost_model():
    _, _, problem, _ = costed(float_net(), "GPU,NNAPI,CPU")
    for src, dst in [("CPU", "GPU"), ("GPU", "CPU"), ("NNAPI", "GPU"), ("CPU", "NNAPI")]:
        link = TAC.link_cost(src, dst)
        assert problem.link(src, dst) == Link(float(link.per_byte), float(link.fixed))


def test_problem_round_trips_through_json(tmp_path):
    _, _, problem, _ = costed(int8_net(), "GPU,NNAPI,CPU", "op")
    path = save_problem(problem, tmp_path / "p.json")
    assert load_problem(path) == problem


class NoNumberFor:
    """The tac cost model, saying explicitly that it cannot price ``kind`` on ``device``
    (or returning ``bad`` for it instead, when given)."""

    view_cost = None  # price views by summing op_costs

    def __init__(self, kind: str, device: str, bad: float | None = None) -> None:
        self.kind, self.device, self.bad = kind, device, bad

    def __getattr__(self, name):
        return getattr(TAC, name)

    def op_costs(self, G, nodes, device, inference_type):
        costs = TAC.op_costs(G, nodes, device, inference_type).copy()
        if device == self.device:
            hit = np.array([G.nodes[n]["op"].kind == self.kind for n in nodes])
            if self.bad is None:
                costs[hit] = np.ma.masked
            else:
                costs[hit] = self.bad
        return costs


def test_accelerator_view_without_a_number_is_dropped():
    _, _, problem, views = costed(float_net(), "GPU,CPU", "op", NoNumberFor("MEAN", "GPU"))
    mean = next(u for u in problem.units if u.name == "mean_2")
    assert [c.device for c in mean.choices] == ["CPU"]
    assert [v.device for v in views["mean_2"]] == ["CPU"]
    relu = next(u for u in problem.units if u.name == "relu_1")
    assert {c.device for c in relu.choices} == {"GPU", "CPU"}


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf")])
@pytest.mark.parametrize("device", ["GPU", "CPU"])
def test_nan_negative_or_infinite_cost_is_an_error_naming_model_op_device(bad, device):
    match = rf"cost model 'tac' returned {bad} for op 'mean_2' on {device}"
    with pytest.raises(CostModelError, match=match):
        costed(float_net(), "GPU,CPU", "op", NoNumberFor("MEAN", device, bad))


def test_cpu_view_without_a_number_is_an_error():
    with pytest.raises(CostModelError, match=r"no cost for op 'mean_2' \(MEAN\) on CPU/FLOAT"):
        costed(float_net(), "GPU,CPU", "op", NoNumberFor("MEAN", "CPU"))


def test_view_cost_sums_the_view_ops():
    G = float_net()
    targets = resolve_devices("GPU,CPU")
    units = enumerate_views(G, op_units(G, annotate_targets(G, targets)), targets)
    sub_gpu = next(v for u in units for v in u.views if v.unit == "sub_3" and v.device == "GPU")
    assert sub_gpu.graph.number_of_nodes() == 2  # ADD + MUL(-1)
    expected = sum(TAC.op_cost(sub_gpu.graph, n, "GPU", "FLOAT") for n in sub_gpu.graph)
    assert price_view(sub_gpu, targets[0], TAC) == pytest.approx(expected)


def test_a_learned_model_prices_each_unit_at_the_whole_models_in_model_scale():
    # the learned model's in-model scale grows with the bytes a model moves (its spill); a unit
    # is a part of the model it runs in, so each unit's ops are priced at the whole model's
    # scale, not at that of the few bytes the unit moves alone
    from tacopt.cost_models.learned.fitting.model import DEFAULT_MODEL, LearnedCostModel
    from tacopt.cost_models.model_file import read_model_doc

    doc = read_model_doc(DEFAULT_MODEL)
    spills = LearnedCostModel({**doc, "in_model_spill": 0.5, "cache_bytes": [2**8, 2**13]})
    G = float_net()
    whole = spills.for_model(G)
    assert whole._bound_scale == pytest.approx(doc["in_model_scale"] + 0.5)  # G moves 14 KB
    part, units, problem, views = costed(G, "CPU", "op", model=get_cost_model(spills))
    assert len(part.subgraphs) == 5
    for unit in problem.units:
        (cpu,) = [c for c in unit.choices if c.device == "CPU"]
        assert cpu.cost == pytest.approx(whole.op_cost(G, unit.name, "CPU", "FLOAT"))
    # alone, the SUB moves 4 KB, less than the model: a lower scale
    (sub,) = [u for u in units if u.subgraph.name == "sub_3"]
    alone = spills.op_cost(sub.views[0].graph, "sub_3", "CPU", "FLOAT")
    assert alone < whole.op_cost(G, "sub_3", "CPU", "FLOAT")
    # a model file without a spill is bound to itself
    assert LearnedCostModel(doc).for_model(G)._bound_scale is None

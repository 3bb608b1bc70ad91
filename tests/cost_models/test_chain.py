"""Cost-model chains (``a+b``): each device priced by the first model that knows it."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.cost_models.base import (
    CostModelBase,
    CostModelError,
    FallbackCostModel,
    LinkCost,
    get_cost_model,
)
from tacopt.fusion.ir import Op, Tensor, make_graph


class Fixed(CostModelBase):
    """Every op costs ``value`` on each of ``devices``; links cost ``link``."""

    def __init__(self, name: str, devices: tuple[str, ...], value: float, link: float = 1.0):
        self.name, self.devices, self.value, self.link = name, devices, value, link
        self.unit = "us"

    def op_cost(self, G, node, device, inference_type):  # type: ignore[no-untyped-def]
        self.check_device(device)
        return self.value

    def link_cost(self, src_device: str, dst_device: str) -> LinkCost:
        return LinkCost(self.link, 0.0)

    def conversion_cost_per_element(self, src_type: str, dst_type: str) -> float:
        return self.value / 100


def relu_graph():  # type: ignore[no-untyped-def]
    #  x -> [RELU] -> y
    ts = [Tensor("x", (1, 4), "float32"), Tensor("y", (1, 4), "float32")]
    return make_graph("g", ts, [Op("relu_0", "RELU", ("x",), ("y",))], ["x"], ["y"])


def test_each_device_goes_to_the_first_model_that_knows_it() -> None:
    cpu_only = Fixed("measured", ("CPU",), 3.0, link=0.0)
    profiles = Fixed("profiles", ("CPU", "GPU"), 7.0, link=2.0)
    chain = FallbackCostModel([cpu_only, profiles])
    G = relu_graph()
    assert chain.name == "measured+profiles" and chain.devices == ("CPU", "GPU")
    assert chain.op_cost(G, "relu_0", "CPU", "FLOAT") == 3.0
    assert chain.op_cost(G, "relu_0", "GPU", "FLOAT") == 7.0
    assert np.array_equal(chain.op_costs(G, ["relu_0"], "GPU", "FLOAT"), [7.0])
    assert chain.link_cost("CPU", "GPU") == LinkCost(2.0, 0.0)  # only 'profiles' knows both
    assert chain.link_cost("CPU", "CPU") == LinkCost(0.0, 0.0)  # the first model knows both
    assert chain.conversion_cost_per_element("FLOAT", "QUANTIZED_INT8") == 0.03
    with pytest.raises(CostModelError, match="no model in the chain knows device 'NPU'"):
        chain.op_cost(G, "relu_0", "NPU", "FLOAT")


def test_spec_with_plus_builds_a_chain_and_refuses_mixed_units() -> None:
    chain = get_cost_model("roofline+roofline")
    assert chain.name == "roofline+roofline" and chain.unit == "us"
    with pytest.raises(CostModelError, match="different units"):
        get_cost_model("tac+roofline")
    with pytest.raises(CostModelError, match="unknown cost model 'nope'"):
        get_cost_model("roofline+nope")


def test_a_chain_prices_a_real_partition() -> None:
    from tacopt.partitioner.pipeline import build_pick_problem

    G = relu_graph()
    measured, profiles = Fixed("measured", ("CPU",), 3.0, 0.0), Fixed("p", ("CPU", "GPU"), 1.0)
    chain = FallbackCostModel([measured, profiles])
    problem = build_pick_problem(G, "GPU,CPU", cost_model=chain).problem
    costs = {c.device: c.cost for c in problem.units[0].choices}
    assert costs == {"GPU": 1.0, "CPU": 3.0}

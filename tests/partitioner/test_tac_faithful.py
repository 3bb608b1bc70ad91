"""Under ``--cost-model tac`` a plan's compute and transfer are TAC's own numbers, bit for bit.

The graphs mirror functions of TAC's FileCheck tests (tac/tests/compute-cost.mlir,
get-op-cost.mlir); the expected values are the ``tac.cost`` attributes they check. Transfers are
TAC's ``GetHardwareSwitchingCost`` on ``GetTransferredTensorBytes`` (:func:`tac_switching_cost`).
"""

from __future__ import annotations

import numpy as np

from tacopt.cost_models.tac import TacCostModel, tac_switching_cost, tac_transfer_bits
from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph, validate_graph
from tacopt.partitioner.pipeline import partition
from tests.cost_models.test_tac import hexf, quantize_ops_func


def const(name: str, shape: tuple[int, ...], dtype: str, q=None) -> Tensor:
    n = int(np.prod(shape)) * (4 if dtype in ("float32", "int32") else 1)
    return Tensor(name, shape, dtype, quantization=q, buffer=Buffer.placeholder(n))


def test_cpu_func_cost_is_compute_cost_mlir_float() -> None:
    #  a, b -> [ADD] -> t -> [MUL] (b) -> y      compute-cost.mlir @func_0_CPU: tac.cost = 2000
    shapes = {"a": (10, 10, 10), "b": (10,), "t": (10, 10, 10), "y": (10, 10, 10)}
    ts = [Tensor(n, s, "float32") for n, s in shapes.items()]
    ops = [Op("add_0", "ADD", ("a", "b"), ("t",)), Op("mul_1", "MUL", ("t", "b"), ("y",))]
    G = make_graph("g", ts, ops, ["a", "b"], ["y"])
    result = partition(G, "CPU", cost_model="tac")
    assert result.plan.breakdown.compute == 2000.0 and result.plan.breakdown.transfer == 0.0


def test_cpu_func_cost_is_compute_cost_mlir_int8() -> None:
    G = quantize_ops_func()  # compute-cost.mlir @quantize_ops_CPU_QUANTIZED_INT8
    result = partition(G, "CPU", cost_model="tac")
    assert len(result.plan.assignment) == 1  # one CPU function, as TAC raises it
    assert result.plan.breakdown.compute == hexf("4B673001")


def test_gpu_then_cpu_costs_tac_func_costs_plus_tac_switching_cost() -> None:
    #  x -> [CONV_2D] -> c -> [PACK] (c) -> y      CONV_2D runs on the GPU, PACK only on the CPU
    ts = [
        Tensor("x", (1, 8, 8, 3), "float32"),
        const("w", (4, 3, 3, 3), "float32"),
        Tensor("c", (1, 8, 8, 4), "float32"),
        Tensor("y", (2, 1, 8, 8, 4), "float32"),
    ]
    ops = [
        Op("conv_2d_0", "CONV_2D", ("x", "w", None), ("c",), {"padding": "SAME"}),
        Op("pack_1", "PACK", ("c", "c"), ("y",), {"axis": 0, "values_count": 2}),
    ]
    G = make_graph("g", ts, ops, ["x"], ["y"])
    validate_graph(G)
    result = partition(G, "GPU,CPU", cost_model="tac", fuse=False)
    plan, tac = result.plan, TacCostModel()
    chosen = {plan.assignment["subgraph_0"].device, plan.assignment["subgraph_1"].device}
    assert chosen == {"GPU", "CPU"}
    gpu = tac.view_cost(G, ["conv_2d_0"], "GPU", "FLOAT")
    cpu = tac.view_cost(G, ["pack_1"], "CPU", "FLOAT")
    assert plan.breakdown.compute == gpu + cpu
    # graph input x moves CPU -> GPU, c moves GPU -> CPU, the output stays on the CPU
    moved = [tac_switching_cost(tac_transfer_bits(G.graph["tensors"][t]), a, b)
             for t, a, b in (("x", "CPU", "GPU"), ("c", "GPU", "CPU"))]  # fmt: skip
    assert plan.breakdown.transfer == sum(moved)

"""TAC's own expected costs (tac/tests/get-op-cost.mlir, compute-cost.mlir) reproduced exactly.

Each graph mirrors one MLIR function of those FileCheck tests; expected values are the
``tac.cost`` attributes they check (f32, some given as hex bit patterns).
"""

from __future__ import annotations

import struct

import networkx as nx
import numpy as np
import pytest

from tacopt.cost_models.base import CostModelError, get_cost_model, view_cost
from tacopt.cost_models.tac import TacCostModel, tac_switching_cost, tac_transfer_bits
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph, validate_graph

TAC = TacCostModel()


def f32(x: float) -> np.float32:
    return np.float32(x)


def hexf(h: str) -> float:
    return struct.unpack(">f", bytes.fromhex(h))[0]


def const(name: str, shape: tuple[int, ...], dtype: str = "float32", q=None) -> Tensor:
    n = int(np.prod(shape)) * (4 if dtype in ("float32", "int32") else 1)
    return Tensor(name, shape, dtype, quantization=q, buffer=Buffer.placeholder(n))


def binary(kind: str, a: tuple, b: tuple, out: tuple) -> tuple:
    #  a, b -> [kind] -> y
    ts = [Tensor("a", a, "float32"), Tensor("b", b, "float32"), Tensor("y", out, "float32")]
    G = make_graph("g", ts, [Op("op_0", kind, ("a", "b"), ("y",))], ["a", "b"], ["y"])
    validate_graph(G)
    return G


def conv(n: int, cin: int, cout: int, *, bias: bool) -> tuple:
    #  x, w[, b] -> [CONV_2D SAME] -> y
    ts = [
        Tensor("x", (n, 32, 32, cin), "float32"),
        const("w", (cout, 3, 3, cin)),
        Tensor("y", (n, 32, 32, cout), "float32"),
    ]
    ins: tuple = ("x", "w", None)
    if bias:
        ts.append(const("b", (cout,)))
        ins = ("x", "w", "b")
    op = Op("conv_2d_0", "CONV_2D", ins, ("y",), {"padding": "SAME", "stride_h": 1})
    return make_graph("g", ts, [op], ["x"], ["y"])


@pytest.mark.parametrize(
    ("device", "expected"), [("CPU", 7.864320e05), ("GPU", 157286.4), ("NNAPI", 157286.4)]
)
def test_add_256x32x32x3(device: str, expected: float) -> None:
    G = binary("ADD", (256, 32, 32, 3), (256, 32, 32, 3), (256, 32, 32, 3))
    assert f32(TAC.op_cost(G, "op_0", device, "FLOAT")) == f32(expected)
    assert f32(TAC.view_cost(G, ["op_0"], device, "FLOAT")) == f32(expected)


def test_broadcast_add_counts_output_elements() -> None:
    assert (
        TAC.op_cost(binary("ADD", (10, 10, 10), (10,), (10, 10, 10)), "op_0", "CPU", "FLOAT")
        == 1000.0
    )
    assert (
        TAC.op_cost(binary("ADD", (10, 10, 10), (), (10, 10, 10)), "op_0", "GPU", "FLOAT") == 200.0
    )


def test_add_then_mul_func_cost() -> None:
    #  a, b -> [ADD] -> t -> [MUL] (b) -> y      compute-cost.mlir: tac.cost = 2000
    ts = [
        Tensor("a", (10, 10, 10), "float32"),
        Tensor("b", (10,), "float32"),
        Tensor("t", (10, 10, 10), "float32"),
        Tensor("y", (10, 10, 10), "float32"),
    ]
    G = make_graph(
        "g",
        ts,
        [Op("add_0", "ADD", ("a", "b"), ("t",)), Op("mul_1", "MUL", ("t", "b"), ("y",))],
        ["a", "b"],
        ["y"],
    )
    assert TAC.view_cost(G, ["add_0", "mul_1"], "CPU", "FLOAT") == 2000.0
    assert list(TAC.op_costs(G, ["add_0", "mul_1"], "CPU", "FLOAT")) == [1000.0, 1000.0]


def test_pack_concat_reshape() -> None:
    #  a, b -> [CONCATENATION] -> c -> [RESHAPE] (shape const [2]) -> y
    ts = [
        Tensor("a", (100,), "float32"),
        Tensor("b", (100,), "float32"),
        Tensor("c", (200,), "float32"),
        const("s", (2,), "int64"),
        Tensor("y", (2, 100), "float32"),
        Tensor("p", (2, 100), "float32"),
    ]
    G = make_graph(
        "g",
        ts,
        [
            Op("concatenation_0", "CONCATENATION", ("a", "b"), ("c",)),
            Op("reshape_1", "RESHAPE", ("c", "s"), ("y",)),
            Op("pack_2", "PACK", ("a", "b"), ("p",)),
        ],
        ["a", "b"],
        ["y", "p"],
    )
    assert TAC.op_cost(G, "pack_2", "CPU", "FLOAT") == 100.0
    assert TAC.op_cost(G, "concatenation_0", "CPU", "FLOAT") == 100.0
    assert TAC.op_cost(G, "reshape_1", "CPU", "FLOAT") == 101.0
    assert f32(TAC.op_cost(G, "concatenation_0", "GPU", "FLOAT")) == f32(40.0)
    assert f32(TAC.op_cost(G, "reshape_1", "GPU", "FLOAT")) == f32(40.4)
    assert TAC.op_cost(G, "pack_2", "GPU", "FLOAT") is None  # PACK is not registered on GPU


@pytest.mark.parametrize(
    ("bias", "n", "cout", "cpu", "gpu"),
    [
        (True, 256, 16, 230686720.0, 46137344.0),
        (True, 256, 16, hexf("4D5C0000"), hexf("4C300000")),
        (False, 128, 64, hexf("4DD80000"), hexf("4CACCCCD")),
    ],
)
def test_conv(bias: bool, n: int, cout: int, cpu: float, gpu: float) -> None:
    G = conv(n, 3, cout, bias=bias)
    assert f32(TAC.op_cost(G, "conv_2d_0", "CPU", "FLOAT")) == f32(cpu)
    assert f32(TAC.op_cost(G, "conv_2d_0", "GPU", "FLOAT")) == f32(gpu)
    assert f32(TAC.op_cost(G, "conv_2d_0", "NNAPI", "FLOAT")) == f32(np.float64(cpu) / 5)


def quantize_ops_func() -> nx.MultiDiGraph:
    # FC(384x512 i8, 128x512 i8, bias i32) -> RESHAPE -> MUL(128 i8) -> ADD(128 i8)
    # compute-cost.mlir @quantize_ops_CPU_QUANTIZED_INT8: tac.cost = 0x4B673001
    q = Quantization((0.1,), (0,))
    ts = [
        Tensor("x", (384, 512), "int8", quantization=q),
        const("w", (128, 512), "int8", q),
        const("bias", (128,), "int32", q),
        Tensor("fc", (384, 128), "int8", quantization=q),
        const("shape", (3,), "int32"),
        Tensor("r", (1, 384, 128), "int8", quantization=q),
        Tensor("s", (128,), "int8", quantization=q),
        Tensor("m", (1, 384, 128), "int8", quantization=q),
        Tensor("o", (128,), "int8", quantization=q),
        Tensor("y", (1, 384, 128), "int8", quantization=q),
    ]
    ops = [
        Op("fully_connected_0", "FULLY_CONNECTED", ("x", "w", "bias"), ("fc",)),
        Op("reshape_1", "RESHAPE", ("fc", "shape"), ("r",)),
        Op("mul_2", "MUL", ("r", "s"), ("m",)),
        Op("add_3", "ADD", ("m", "o"), ("y",)),
    ]
    G = make_graph("g", ts, ops, ["x", "s", "o"], ["y"])
    validate_graph(G)
    return G


def test_quantized_func_cost_matches_compute_cost_mlir() -> None:
    G = quantize_ops_func()
    nodes = [n for n in G]
    assert TAC.view_cost(G, nodes, "CPU", "QUANTIZED_INT8") == hexf("4B673001")
    assert TAC.view_cost(G, nodes, "GPU", "QUANTIZED_INT8") is None  # GPU is float only


def test_unregistered_ops_flat_default_and_gpu_support() -> None:
    G = binary("SQUARED_DIFFERENCE", (4, 4), (4, 4), (4, 4))
    assert TAC.op_cost(G, "op_0", "CPU", "FLOAT") == 1e6  # kDefaultFixedValuedCost
    assert TAC.op_cost(G, "op_0", "CPU", "QUANTIZED_INT8") == 1e6  # no efficiency factor
    assert TAC.op_cost(G, "op_0", "NNAPI", "FLOAT") == 2e5
    assert TAC.op_cost(G, "op_0", "GPU", "FLOAT") == 0.0  # GpuBasicSupportedOpNoCost
    G = binary("SUB", (4, 4), (4, 4), (4, 4))
    assert TAC.op_cost(G, "op_0", "GPU", "FLOAT") is None
    assert TAC.op_cost(G, "op_0", "NNAPI", "QUANTIZED_INT8") == 2e5


def test_int8_factor_on_cpu() -> None:
    G = binary("MUL", (10, 10), (10, 10), (10, 10))
    assert f32(TAC.op_cost(G, "op_0", "CPU", "QUANTIZED_UINT8")) == f32(100) * f32(0.3)
    assert TAC.op_cost(G, "op_0", "CPU", "HYBRID") == 100.0


def test_dynamic_shape_uses_hardware_default() -> None:
    ts = [
        Tensor("a", (1, 4), "float32", shape_signature=(-1, 4)),
        Tensor("y", (1, 4), "float32", shape_signature=(-1, 4)),
    ]
    G = make_graph("g", ts, [Op("add_0", "ADD", ("a", "a"), ("y",))], ["a"], ["y"])
    assert TAC.op_cost(G, "add_0", "CPU", "FLOAT") == 10000.0
    assert TAC.op_cost(G, "add_0", "GPU", "FLOAT") == 10000.0


def test_quantize_dequantize_are_free_inside_a_view() -> None:
    ts = [
        Tensor("a", (8,), "float32"),
        Tensor("q", (8,), "int8", quantization=Quantization((0.1,), (0,))),
    ]
    G = make_graph("g", ts, [Op("quantize_0", "QUANTIZE", ("a",), ("q",))], ["a"], ["q"])
    assert TAC.op_cost(G, "quantize_0", "CPU", "FLOAT") == 0.0


def test_links_and_conversions() -> None:
    assert TAC.link_cost("CPU", "NNAPI").cost(100) == 510.0
    assert TAC.link_cost("CPU", "CPU").cost(100) == 0.0
    q = Quantization((0.1,), (0,))
    assert tac_transfer_bits(Tensor("t", (10, 10), "int8", quantization=q)) == 800
    assert tac_transfer_bits(Tensor("t", (10,), "float32")) == 320
    assert tac_switching_cost(320, "GPU", "CPU") == 320 * 5 / 8 + 10
    conv_ = TAC.conversion_cost_per_element
    assert conv_("FLOAT", "HYBRID") == 0.0 and conv_("HYBRID", "QUANTIZED_INT8") == 2.0
    assert conv_("QUANTIZED_INT8", "QUANTIZED_UINT8") == 2.0 and conv_("FLOAT", "FLOAT") == 0.0


def test_bad_device_and_type_raise_naming_the_model() -> None:
    G = binary("ADD", (2,), (2,), (2,))
    model = get_cost_model("tac")
    with pytest.raises(CostModelError, match="cost model 'tac': unknown device 'TPU'"):
        model.op_cost(G, "op_0", "TPU", "FLOAT")
    with pytest.raises(CostModelError, match="unknown inference type 'INT4'"):
        model.op_cost(G, "op_0", "CPU", "INT4")
    with pytest.raises(CostModelError, match="op 'nope'"):
        model.op_cost(G, "nope", "CPU", "FLOAT")
    assert view_cost(model, G, ["op_0"], "CPU", "FLOAT") == 2.0

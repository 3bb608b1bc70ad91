"""``tac``: TensorFlow Lite TAC's hardware cost models (CPU, GPU, NNAPI), reproduced exactly.

Sources (tensorflow/compiler/mlir/lite/, "tac/" = experimental/tac/):

==============================  =============================================================
number                          where it comes from
==============================  =============================================================
1e6 default op cost             tac/hardwares/target_hardware.h ``kDefaultFixedValuedCost``
                                (``TargetHardware::GetOpCost`` for an op the hardware does
                                not register)
5 per byte, 10 per crossing     target_hardware.h ``kCrossHardwareTransferPerByteCost`` /
                                ``kCrossHardwareTransferFixedCost``; every hardware's
                                ``GetHardwareSwitchingCost`` = bits * 5 / 8 + 10, 0 if same
CPU 1.0 per arithmetic op       tac/hardwares/cpu_hardware.cc ``kCPUArithmeticUnitCost``
CPU 0.5 per copied element      cpu_hardware.cc ``kCPUCopyUnitCost``
CPU 1e4 when shapes dynamic     cpu_hardware.cc ``kCPUDefaultFixedValuedCost``
CPU x0.3 for int8 / uint8       cpu_hardware.cc ``kQuantizedInferenceEfficiency``
GPU 0.2 arithmetic / copy       tac/hardwares/gpu_hardware.cc ``kGPUArithmeticUnitCost`` /
                                ``kGPUCopyUnitCost``; 1e4 ``kGPUDefaultFixedValuedCost``
GPU float only, "no cost" ops   gpu_hardware.cc: every registered op is supported only when
                                ``GetInferenceType(op) == FLOAT``; 31 ops cost 0
                                (``GpuBasicSupportedOpNoCost``)
NNAPI = CPU / 5, all ops        tac/hardwares/simple_hardware.cc ``SimpleHardware::GetOpCost``
                                = CPU cost / ``AdvantageOverCPU()``; nnapi_hardware.h returns
                                5.0 and denies no op (its own op registrations are never
                                consulted because SimpleHardware overrides ``GetOpCost``)
2 per quant/dequant element     tac/transforms/cost_model.cc ``kQuantCost`` /
                                ``kDequantCost`` / ``kRequantCost``; FLOAT <-> HYBRID is free
conv / FC arithmetic count      utils/arithmetic_count_util.h
                                ``GetArithmeticCountForConvAndFullyconnectedOp``:
                                2 x weight elements x prod(output dims but last)
                                (+ output elements when the bias operand is present)
add / mul count                 ``GetFirstOutputCount`` (output elements)
concat / reshape / pack count   ``GetInputTensorTotalSize`` (elements of every operand,
                                the shape operand of RESHAPE included)
==============================  =============================================================

TAC computes each op cost in float32 (``float cost = ...; cost * efficiency``) and a subgraph's
cost as a double sum stored as an f32 attribute (``tac.cost``); we round the same way, so the
numbers match TAC's FileCheck tests bit for bit (tests/cost_models/test_tac.py).

Quirks kept on purpose:

- QUANTIZE / DEQUANTIZE cost 0: ``TargetHardware::GetFuncCost`` skips them (``IsNonArithmeticOp``)
  because TAC charges conversions at subgraph boundaries instead (``GetQuantDequantCost``). TAC's
  debug pass ``-tfl-get-op-cost`` would print 1e6 for them on CPU.
- A shape that is not static (a ``-1`` in ``shape_signature``) or an omitted optional operand
  makes the count unavailable: the op gets the hardware's flat default (1e4 on CPU / GPU).
- An omitted bias (``None`` operand) adds nothing to a conv's count.
- The bytes of a transfer: 8 bits per element for (u)int8, ``getSizeInBits`` otherwise, so a
  ``bool`` element counts 1 bit (LinkCost.per_byte assumes whole bytes; the difference only
  matters for boolean tensors crossing devices).

Deviation: TAC applies device rewrites before costing a view (``GetTransformations``: SUB -> ADD,
FULLY_CONNECTED -> CONV_2D, SPLIT unrolled, ... for GPU); those are graph rewrites, not costs, so
here the ops are costed as given.

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph
>>> ts = [Tensor(n, (256, 32, 32, 3), "float32") for n in "abc"]
>>> G = make_graph("g", ts, [Op("add_0", "ADD", ("a", "b"), ("c",))], ["a", "b"], ["c"])
>>> m = TacCostModel()
>>> m.op_cost(G, "add_0", "CPU", "FLOAT"), m.op_cost(G, "add_0", "GPU", "FLOAT")
(786432.0, 157286.40625)
>>> m.op_cost(G, "add_0", "GPU", "QUANTIZED_INT8") is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import networkx as nx
import numpy as np

from tacopt.cost_models.base import (
    QUANTIZED_TYPES,
    CostModelBase,
    CostModelError,
    LinkCost,
    check_inference_type,
    priced,
)
from tacopt.fusion.ir import DTYPE_NBYTES, Tensor
from tacopt.fusion.ir.vocabulary import ACTIVATION_FORMAT

F32 = np.float32

# target_hardware.h
DEFAULT_FIXED_VALUED_COST = F32(1_000_000.0)
CROSS_HARDWARE_TRANSFER_PER_BYTE_COST = 5.0
CROSS_HARDWARE_TRANSFER_FIXED_COST = 10.0
# cpu_hardware.cc
CPU_ARITHMETIC_UNIT_COST = F32(1.0)
CPU_COPY_UNIT_COST = F32(0.5)
CPU_DEFAULT_FIXED_VALUED_COST = F32(10_000.0)
QUANTIZED_INFERENCE_EFFICIENCY = F32(0.3)
# gpu_hardware.cc
GPU_ARITHMETIC_UNIT_COST = F32(0.2)
GPU_COPY_UNIT_COST = F32(0.2)
GPU_DEFAULT_FIXED_VALUED_COST = F32(10_000.0)
# nnapi_hardware.h
NNAPI_ADVANTAGE_OVER_CPU = F32(5.0)
# cost_model.cc
QUANT_COST = DEQUANT_COST = REQUANT_COST = 2.0

#: Ops TAC does not cost inside a subgraph (``IsNonArithmeticOp``).
NON_ARITHMETIC = frozenset({"QUANTIZE", "DEQUANTIZE"})

# Op registrations: kind -> cost class (TAC_REGISTER_CPU_OP / TAC_REGISTER_GPU_OP).
CPU_OPS: dict[str, str] = {
    "CONV_2D": "conv",
    "DEPTHWISE_CONV_2D": "conv",
    "FULLY_CONNECTED": "conv",
    "ADD": "arithmetic",
    "MUL": "arithmetic",
    "CONCATENATION": "copy",
    "RESHAPE": "copy",
    "PACK": "copy",
}
_GPU_NO_COST = (
    "ABS AVERAGE_POOL_2D COS DIV EXP HARD_SWISH LOG LOGISTIC MAX_POOL_2D MIRROR_PAD MAXIMUM "
    "MINIMUM MEAN CUSTOM PAD POW PRELU RELU RELU6 RSQRT SIN SLICE SOFTMAX SPACE_TO_DEPTH SQRT "
    "SQUARE SQUARED_DIFFERENCE STRIDED_SLICE TANH TRANSPOSE TRANSPOSE_CONV"
).split()
GPU_OPS: dict[str, str] = {
    **{k: "none" for k in _GPU_NO_COST},
    "CONCATENATION": "copy",
    "RESHAPE": "copy",
    "CONV_2D": "conv",
    "DEPTHWISE_CONV_2D": "conv",
    "FULLY_CONNECTED": "conv",
    "ADD": "arithmetic",
    "MUL": "arithmetic",
}
DEVICES: tuple[str, ...] = ("CPU", "GPU", "NNAPI")


# --------------------------------------------------------------------------------------------
# counts (arithmetic_count_util.h); None = "the helper returned false"
# --------------------------------------------------------------------------------------------


def _static(t: Tensor) -> bool:
    return -1 not in (t.shape_signature or t.shape)


def _elements(t: Tensor) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n


def _operands(G: nx.MultiDiGraph, node: str) -> list[Tensor | None]:
    tensors = G.graph["tensors"]
    return [None if t is None else tensors[t] for t in G.nodes[node]["op"].inputs]


def first_output_count(G: nx.MultiDiGraph, node: str) -> int | None:
    """Elements of the op's first output (``GetFirstOutputCount``)."""
    out = G.graph["tensors"][G.nodes[node]["op"].outputs[0]]
    return _elements(out) if _static(out) else None


def input_total_size(G: nx.MultiDiGraph, node: str) -> int | None:
    """Elements of all operands (``GetInputTensorTotalSize``); None if one is omitted/dynamic."""
    total = 0
    for t in _operands(G, node):
        if t is None or not _static(t):
            return None
        total += _elements(t)
    return total


def conv_arithmetic_count(G: nx.MultiDiGraph, node: str) -> int | None:
    """``GetArithmeticCountForConvAndFullyconnectedOp`` (from TOCO's tooling_util.cc)."""
    ops = _operands(G, node)
    weight = ops[1] if len(ops) > 1 else None
    out = G.graph["tensors"][G.nodes[node]["op"].outputs[0]]
    if weight is None or not _static(weight) or not _static(out):
        return None
    cols = 1
    for d in out.shape[:-1]:
        cols *= d
    count = 2 * _elements(weight) * cols
    bias = ops[2] if len(ops) > 2 else None
    if bias is not None and _static(bias):
        count += _elements(out)
    return count


_COUNTS: dict[str, Callable[[nx.MultiDiGraph, str], int | None]] = {
    "conv": conv_arithmetic_count,
    "arithmetic": first_output_count,
    "copy": input_total_size,
}


# --------------------------------------------------------------------------------------------
# the hardwares
# --------------------------------------------------------------------------------------------


def cpu_op_cost(G: nx.MultiDiGraph, node: str, inference_type: str) -> float:
    """``CpuHardware``: registered ops by count x unit cost x int8 efficiency, else 1e6."""
    kind = G.nodes[node]["op"].kind
    if kind in NON_ARITHMETIC:
        return 0.0
    cls = CPU_OPS.get(kind)
    if cls is None:
        return float(DEFAULT_FIXED_VALUED_COST)
    count = _COUNTS[cls](G, node)
    unit = CPU_COPY_UNIT_COST if cls == "copy" else CPU_ARITHMETIC_UNIT_COST
    eff = QUANTIZED_INFERENCE_EFFICIENCY if inference_type in QUANTIZED_TYPES else F32(1.0)
    with np.errstate(over="ignore"):  # an overflow gives inf, which the costing layer refuses
        cost = CPU_DEFAULT_FIXED_VALUED_COST if count is None else _f32(count) * unit
        return float(F32(cost * eff))


def gpu_op_cost(G: nx.MultiDiGraph, node: str, inference_type: str) -> float | None:
    """``GpuHardware``: float only; registered ops only; "no cost" ops are free."""
    kind = _tac_kind(G.nodes[node]["op"].kind)
    cls = GPU_OPS.get(kind)
    if cls is None or inference_type != "FLOAT":
        return None
    if cls == "none":
        return 0.0
    count = _COUNTS[cls](G, node)
    if count is None:
        return float(GPU_DEFAULT_FIXED_VALUED_COST)
    unit = GPU_COPY_UNIT_COST if cls == "copy" else GPU_ARITHMETIC_UNIT_COST
    with np.errstate(over="ignore"):  # as in cpu_op_cost
        return float(F32(_f32(count) * unit))


def _f32(count: int) -> np.float32:
    """``count`` as float32, inf beyond float32's range (numpy would warn or raise)."""
    return F32(count) if count < 3.4e38 else F32(np.inf)


def nnapi_op_cost(G: nx.MultiDiGraph, node: str, inference_type: str) -> float:
    """``NNAPIHardware`` (a ``SimpleHardware``): every op, CPU cost / 5."""
    return float(F32(np.float64(cpu_op_cost(G, node, inference_type)) / NNAPI_ADVANTAGE_OVER_CPU))


def _tac_kind(kind: str) -> str:
    return "CUSTOM" if kind.startswith("CUSTOM") else kind


_HARDWARE = {"CPU": cpu_op_cost, "GPU": gpu_op_cost, "NNAPI": nnapi_op_cost}


class TacCostModel(CostModelBase):
    """TAC's CPU / GPU / NNAPI cost models in TAC's unit-less cost (see the module docstring)."""

    name = "tac"
    unit = "tac"
    devices = DEVICES

    def op_cost(
        self, G: nx.MultiDiGraph, node: str, device: str, inference_type: str
    ) -> float | None:
        """Cost of op ``node`` on ``device`` in ``inference_type``; None when unsupported.

        >>> from tacopt.fusion.ir import Op, Tensor, make_graph
        >>> ts = [Tensor("x", (100,), "float32"), Tensor("y", (2, 100), "float32")]
        >>> G = make_graph("g", ts, [Op("pack_0", "PACK", ("x", "x"), ("y",))], ["x"], ["y"])
        >>> TacCostModel().op_cost(G, "pack_0", "CPU", "FLOAT")
        100.0
        """
        self.check_device(device)
        check_inference_type(inference_type, model=self.name)
        if node not in G:
            raise CostModelError(
                f"cost model 'tac': op '{node}' is not in graph '{G.graph.get('name')}'"
            )
        return _HARDWARE[device](G, node, inference_type)

    def op_costs(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> np.ndarray:
        self.check_device(device)
        check_inference_type(inference_type, model=self.name)
        fn = _HARDWARE[device]
        costs = [fn(G, n, inference_type) for n in nodes]
        return priced([0.0 if c is None else c for c in costs], [c is None for c in costs])

    def view_cost(
        self, G: nx.MultiDiGraph, nodes: Sequence[str], device: str, inference_type: str
    ) -> float | None:
        """``GetFuncCost``: the double sum of op costs, stored as float32 (``tac.cost``)."""
        costs = self.op_costs(G, list(nodes), device, inference_type)
        if np.ma.getmaskarray(costs).any():
            return None
        return float(F32(np.ma.getdata(costs).sum()))

    def link_cost(self, src_device: str, dst_device: str) -> LinkCost:
        """``GetHardwareSwitchingCost``: 0 on the same device, else 5 per byte + 10 per crossing.

        >>> TacCostModel().link_cost("GPU", "GPU")
        LinkCost(per_byte=0.0, fixed=0.0)
        """
        self.check_device(src_device)
        self.check_device(dst_device)
        if src_device == dst_device:
            return LinkCost(0.0, 0.0)
        return LinkCost(CROSS_HARDWARE_TRANSFER_PER_BYTE_COST, CROSS_HARDWARE_TRANSFER_FIXED_COST)

    def conversion_cost_per_element(self, src_type: str, dst_type: str) -> float:
        """``GetQuantDequantCost`` per element: 0 within FLOAT/HYBRID or same type, else 2.

        >>> TacCostModel().conversion_cost_per_element("QUANTIZED_INT8", "FLOAT")
        2.0
        """
        check_inference_type(src_type, model=self.name)
        check_inference_type(dst_type, model=self.name)
        src, dst = ACTIVATION_FORMAT[src_type], ACTIVATION_FORMAT[dst_type]
        if src == dst:
            return 0.0
        if src == "FLOAT":
            return QUANT_COST
        return DEQUANT_COST if dst == "FLOAT" else REQUANT_COST


def tac_transfer_bits(t: Tensor) -> int:
    """Bits TAC counts for a transferred tensor (``GetTransferredTensorBytes``); 0 if dynamic."""
    if not _static(t):
        return 0
    if t.dtype in ("int8", "uint8") and t.is_quantized:
        return _elements(t) * 8
    bits = {"bool": 1, "int4": 4, "uint4": 4, "int2": 2}.get(t.dtype)
    if bits is None:
        bits = int(DTYPE_NBYTES.get(t.dtype, 0) * 8)
    return _elements(t) * bits


def tac_switching_cost(bits: int, src_device: str, dst_device: str) -> float:
    """``GetHardwareSwitchingCost`` for ``bits`` moved between two devices (TAC's exact form).

    >>> tac_switching_cost(8 * 1000, "CPU", "GPU")
    5010.0
    """
    if src_device == dst_device:
        return 0.0
    return float(
        F32(
            bits * np.float64(F32(CROSS_HARDWARE_TRANSFER_PER_BYTE_COST)) / 8.0
            + CROSS_HARDWARE_TRANSFER_FIXED_COST
        )
    )


"""Hardware targets: support tables, SimpleTarget, names, the registry and user targets."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tacopt.partitioner.targets as targets_mod
from tacopt.cost_models.base import get_cost_model
from tacopt.errors import TacoptError
from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.partitioner.cli import load_module
from tacopt.partitioner.pipeline import partition
from tacopt.partitioner.problem import Link
from tacopt.partitioner.targets import (
    CPU,
    GPU,
    NNAPI,
    NPU,
    SimpleTarget,
    TableTarget,
    TargetError,
    get_target,
    pricing_device,
    register_target,
    resolve_devices,
    target_names,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "targets.md"
Q = Quantization((0.05,), (0,))


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the target registry, so user targets vanish after the test."""
    monkeypatch.setattr(targets_mod, "_TARGETS", targets_mod._TARGETS.copy())
    return targets_mod._TARGETS


def one_op(kind, shapes=((1, 8, 8, 4),), out_shape=None, dtype="float32", options=None, extra=()):
    """``x0 .. xn ─ KIND(+ constant extras) ─ y``: one op on activations of ``dtype``."""
    q = Q if dtype in ("int8", "uint8") else None
    ins = [Tensor(f"x{i}", s, dtype, quantization=q) for i, s in enumerate(shapes)]
    y = Tensor("y", out_shape or shapes[0], dtype, quantization=q)
    names = (*(t.name for t in ins), *(t.name for t in extra))
    op = Op(f"{kind.lower()}_0", kind, names, ("y",), options or {})
    return make_graph("g", [*ins, *extra, y], [op], [t.name for t in ins], ["y"])


def axes(*values):
    arr = np.asarray(values, np.int32)
    return Tensor("axes", arr.shape, "int32", buffer=Buffer.from_bytes(arr))


# --------------------------------------------------------------------------------------------
# support tables
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_gpu_runs_float_only(dtype):
    F, Qg = one_op("ADD", [(1, 4, 4, 2)] * 2), one_op("ADD", [(1, 4, 4, 2)] * 2, dtype=dtype)
    assert GPU.supports(F, "add_0", "FLOAT")
    itype = "QUANTIZED_INT8" if dtype == "int8" else "QUANTIZED_UINT8"
    assert not GPU.supports(Qg, "add_0", itype)
    assert not GPU.supports(Qg, "add_0", "FLOAT")  # int8 activations are not float ones
    assert NNAPI.supports(Qg, "add_0", itype)


def test_nnapi_lacks_mean_which_gpu_has():
    G = one_op(
        "MEAN", [(1, 8, 8, 4)], (1, 1, 1, 4), options={"keep_dims": True}, extra=(axes(1, 2),)
    )
    assert GPU.supports(G, "mean_0", "FLOAT")
    assert not NNAPI.supports(G, "mean_0", "FLOAT")
    assert CPU.supports(G, "mean_0", "FLOAT")


def test_nnapi_div_is_float_only_and_npu_is_int8_only():
    Fd, Qd = one_op("DIV", [(1, 4)] * 2), one_op("DIV", [(1, 4)] * 2, dtype="int8")
    assert NNAPI.supports(Fd, "div_0", "FLOAT")
    assert not NNAPI.supports(Qd, "div_0", "QUANTIZED_INT8")
    conv_q = one_op("RELU", dtype="int8")
    assert NPU.supports(conv_q, "relu_0", "QUANTIZED_INT8")
    assert not NPU.supports(one_op("RELU"), "relu_0", "FLOAT")
    assert not NPU.supports(
        one_op("FULLY_CONNECTED", [(1, 4)], dtype="int8"), "fully_connected_0", "QUANTIZED_INT8"
    )


def test_gpu_concatenation_needs_rank_4():
    opts = {"axis": 0, "fused_activation_function": "NONE"}
    four = one_op("CONCATENATION", [(1, 2, 2, 3)] * 2, (2, 2, 2, 3), options=opts)
    two = one_op("CONCATENATION", [(1, 3)] * 2, (2, 3), options=opts)
    assert GPU.supports(four, "concatenation_0", "FLOAT")
    assert not GPU.supports(two, "concatenation_0", "FLOAT")


def test_cpu_runs_everything_even_unknown_custom_ops():
    G = one_op("CUSTOM:Frobnicate", [(3,)])
    for itype in ("FLOAT", "QUANTIZED_INT8", "HYBRID"):
        assert CPU.supports(G, "custom:frobnicate_0", itype)


def test_table_target_prices_through_its_cost_device_and_speedup():
    w = Tensor("w", (4, 3, 3, 4), "int8", quantization=Q, buffer=Buffer.placeholder(144))
    G = one_op("CONV_2D", [(1, 8, 8, 4)], (1, 8, 8, 4), dtype="int8", extra=(w,))
    model = get_cost_model("tac")
    assert pricing_device(NPU, model) == ("NNAPI", 2.0)
    assert pricing_device(NNAPI, model) == ("NNAPI", 1.0)
    result = partition(G, "NPU,NNAPI,CPU", granularity="op", cost_model=model, fuse=False)
    costs = {(c.device, c.type): c.cost for c in result.problem.units[0].choices}
    assert costs[("NPU", "QUANTIZED_INT8")] == costs[("NNAPI", "QUANTIZED_INT8")] / 2
    assert NPU.switching_cost("CPU") is None


def test_table_target_uses_its_own_device_when_the_cost_model_knows_it():
    model = get_cost_model("roofline")  # has an NPU profile, no NNAPI one
    assert pricing_device(NPU, model) == ("NPU", 1.0)
    assert pricing_device(NNAPI, model) == ("NPU", 1.0)  # NNAPI's record: priced as the NPU
    with pytest.raises(TargetError, match="cost model 'cpu-only' prices none of NNAPI, NPU"):
        pricing_device(NNAPI, type("M", (), {"name": "cpu-only", "devices": ("CPU",)})())


# --------------------------------------------------------------------------------------------
# SimpleTarget (TAC's SimpleHardware)
# --------------------------------------------------------------------------------------------


def test_simple_target_deny_list_and_never_offloaded_kinds():
    dsp = SimpleTarget("DSP", frozenset({"SOFTMAX"}), advantage_over_cpu=4.0)
    assert dsp.supports(one_op("RELU"), "relu_0", "FLOAT")
    assert not dsp.supports(one_op("SOFTMAX", [(1, 10)]), "softmax_0", "FLOAT")
    assert not dsp.supports(one_op("WHILE", [(1,)]), "while_0", "FLOAT")  # calls a body
    assert not dsp.supports(one_op("RELU", dtype="int8"), "relu_0", "QUANTIZED_INT8")
    int8_dsp = SimpleTarget("DSP8", frozenset(), 2.0, types=frozenset({"QUANTIZED_INT8"}))
    assert int8_dsp.supports(one_op("RELU", dtype="int8"), "relu_0", "QUANTIZED_INT8")


def test_simple_target_costs_cpu_cost_over_its_advantage():
    b = [Op("relu_0", "RELU", ("x",), ("h",)), Op("tanh_1", "TANH", ("h",), ("y",))]
    G = make_graph("g", [Tensor(n, (1, 16, 16, 8), "float32") for n in "xhy"], b, ["x"], ["y"])
    model = get_cost_model("tac")
    dsp = SimpleTarget("DSP", frozenset(), advantage_over_cpu=4.0, link=(0.5, 3.0))
    cpu = np.asarray(model.op_costs(G, ["relu_0", "tanh_1"], "CPU", "FLOAT"), float)
    assert np.all(cpu > 0) and dsp.pricing == (("CPU", 4.0),)
    result = partition(G, [dsp], granularity="op", cost_model=model, fuse=False)
    for unit, cost in zip(result.problem.units, cpu, strict=True):
        assert {c.device: c.cost for c in unit.choices} == {"DSP": cost / 4, "CPU": cost}
    assert dsp.switching_cost("CPU") == (0.5, 3.0)
    assert result.problem.link("CPU", "DSP") == Link(0.5, 3.0)
    linked_like_nnapi = partition(G, [SimpleTarget("DSP", frozenset(), 4.0)], granularity="op")
    tac_link = model.link_cost("CPU", "NNAPI")
    assert linked_like_nnapi.problem.link("CPU", "DSP") == Link(tac_link.per_byte, tac_link.fixed)


# --------------------------------------------------------------------------------------------
# names and the registry
# --------------------------------------------------------------------------------------------


def test_device_names_are_case_insensitive():
    assert get_target("gpu") is GPU and get_target(" Nnapi ") is NNAPI
    assert [t.name for t in resolve_devices(" nnapi , Gpu ")] == ["NNAPI", "GPU", "CPU"]
    assert [t.name for t in resolve_devices(["cpu", "gpu"])] == ["CPU", "GPU"]


def test_cpu_is_always_added_once():
    assert [t.name for t in resolve_devices("GPU")] == ["GPU", "CPU"]
    assert [t.name for t in resolve_devices("GPU,CPU,NNAPI")] == ["GPU", "CPU", "NNAPI"]


def test_unknown_device_lists_the_known_ones():
    with pytest.raises(TargetError) as err:
        resolve_devices("GPU,tpu")
    assert str(err.value) == "unknown device 'TPU'; known: CPU, GPU, NNAPI, NPU"
    assert isinstance(err.value, TacoptError) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        ("", "empty device list"),
        ("GPU,gpu", "listed twice"),
    ],
)
def test_bad_device_lists(devices, message):
    with pytest.raises(TargetError, match=message):
        resolve_devices(devices)


def test_register_refuses_duplicates_lower_case_and_non_targets(registry):
    with pytest.raises(TargetError, match="already registered"):
        register_target(TableTarget("NNAPI", {}))
    with pytest.raises(TargetError, match="upper-case"):
        register_target(SimpleTarget("dsp", frozenset(), 2.0))
    with pytest.raises(TargetError, match="is not a Target"):
        register_target(object())
    register_target(SimpleTarget("DSP", frozenset(), 2.0))
    assert "DSP" in target_names() and get_target("dsp").name == "DSP"


# --------------------------------------------------------------------------------------------
# user targets from their own module (the blocks of docs/targets.md)
# --------------------------------------------------------------------------------------------


def doc_block(first_line: str) -> str:
    """The python block of docs/targets.md that starts with ``first_line``."""
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)
    (block,) = [b for b in blocks if b.startswith(first_line)]
    return block


def conv_net():
    """x ─ CONV_2D ─ RELU ─ SOFTMAX ─ y   (SOFTMAX is outside ACCEL's op set)."""
    b = GraphBuilder("net")
    x = b.input("x", (1, 16, 16, 8))
    h = b.op("CONV_2D", x, np.ones((8, 3, 3, 8)), np.zeros(8), padding="SAME")
    y = b.op("SOFTMAX", b.op("RELU", h), beta=1.0)
    return b.build(outputs=[y])


def test_full_target_from_a_user_module(registry, tmp_path):
    block = doc_block("# my_accel.py")
    assert len(block.strip().splitlines()) <= 30
    (tmp_path / "my_accel.py").write_text(block)
    load_module(str(tmp_path / "my_accel.py"))
    accel = get_target("accel")
    assert isinstance(accel, targets_mod.Target)
    G = conv_net()
    result = partition(G, "ACCEL,CPU", granularity="op")
    devices = {n: result.graph.nodes[n]["device"] for n in result.graph}
    assert devices["conv_2d_0"] == "ACCEL" and devices["softmax_2"] == "CPU"
    model = get_cost_model("tac")
    conv = next(u for u in result.problem.units if u.name == "conv_2d_0")
    cpu = float(model.op_costs(G, ["conv_2d_0"], "CPU", "FLOAT")[0])
    assert {c.device: c.cost for c in conv.choices} == pytest.approx(
        {"ACCEL": cpu / 10, "CPU": cpu}
    )
    assert result.problem.link("CPU", "ACCEL") == Link(1.0, 50.0)


def test_simple_target_from_a_user_module(registry, tmp_path):
    (tmp_path / "my_dsp.py").write_text(doc_block("# my_dsp.py"))
    load_module(str(tmp_path / "my_dsp.py"))
    dsp = get_target("DSP")
    assert dsp.denied == frozenset({"SOFTMAX", "GATHER"}) and dsp.advantage_over_cpu == 3.0
    result = partition(conv_net(), "dsp", granularity="op")
    assert result.devices == ("DSP", "CPU")
    assert result.graph.nodes["softmax_2"]["device"] == "CPU"
    assert result.graph.nodes["conv_2d_0"]["device"] == "DSP"


def test_every_registry_replaces_on_request(private_registries: None) -> None:
    """Re-running a notebook cell that registers something must not fail (replace=True)."""
    from tacopt.benchmarks.zoos import register_zoo
    from tacopt.cost_models.base import register_cost_model
    from tacopt.fusion.rules.composites import get_fusion, register_fusion
    from tacopt.partitioner.pickers import get_picker, register_picker
    from tacopt.partitioner.targets import SimpleTarget, get_target, register_target

    for _ in range(2):
        dsp = register_target(SimpleTarget("DSPX", frozenset(), 3.0), replace=True)
        mine = register_picker("mine-x", lambda problem, **o: None, replace=True)
        fus = register_fusion("fus_x", lambda e, c: None, lambda e, c: None, replace=True)
        register_cost_model("cm-x", object, replace=True)
        register_zoo("zoo-x", lambda arg: [], replace=True)
    assert get_target("DSPX") is dsp and get_picker("mine-x") is mine
    assert get_fusion("fus_x") is fus
    with pytest.raises(TacoptError, match="already registered"):
        register_target(SimpleTarget("DSPX", frozenset(), 3.0))


# --------------------------------------------------------------------------------------------
# device lists: one checker for the string and the list form
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        ("GPU,,CPU", "empty device name in 'GPU,,CPU'"),
        (" , ", "empty device name in ' , '"),
        ("   ", "empty device list"),
        ([], "empty device list"),
        (["GPU", ""], "empty device name in 'GPU,'"),
        (["GPU", GPU], "device 'GPU' is listed twice in 'GPU,GPU'"),
        ([GPU, 3], "3 in the device list is neither a name nor a Target"),
    ],
)
def test_bad_device_lists_in_either_form(devices, message):
    with pytest.raises(TargetError) as err:
        resolve_devices(devices)
    assert str(err.value).startswith(message)


def test_the_list_form_behaves_like_the_string_form():
    as_string = [t.name for t in resolve_devices("npu,gpu")]
    assert [t.name for t in resolve_devices(["npu", "gpu"])] == as_string
    assert [t.name for t in resolve_devices([NPU, GPU])] == as_string == ["NPU", "GPU", "CPU"]
    G = conv_net()
    by_string = partition(G, "GPU", granularity="op")
    by_targets = partition(G, [GPU], granularity="op")
    assert by_targets.devices == by_string.devices == ("GPU", "CPU")
    assert by_targets.plan.assignment == by_string.plan.assignment


def test_an_unregistered_target_object_is_used_as_given():
    dsp = SimpleTarget("DSP9", frozenset({"SOFTMAX"}), 3.0)
    result = partition(conv_net(), [dsp], granularity="op")
    assert result.devices == ("DSP9", "CPU")
    assert result.graph.nodes["conv_2d_0"]["device"] == "DSP9"

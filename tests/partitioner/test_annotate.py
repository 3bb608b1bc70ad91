"""Target annotation: first supporting device in the user's order, inference types, pins."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.partitioner.annotate import (
    Annotation,
    annotate_targets,
    annotated_inference_type,
    parse_pin,
)
from tacopt.partitioner.targets import PartitionError, TargetError, resolve_devices

QI8 = Quantization((0.05,), (0,))
QU8 = Quantization((0.05,), (128,))


def mixed_net():
    """A float chain with a MEAN (not on NNAPI) and a PACK and a SUB (not on GPU)::

    x ─ conv_2d_0 ─ mean_1 ─┬─ pack_3 ─ p
                            └─ sub_2 ─┘
    """
    b = GraphBuilder("mixed")
    x = b.input("x", (1, 8, 8, 4))
    h = b.op("CONV_2D", x, np.ones((4, 3, 3, 4)), np.zeros(4))
    m = b.op("MEAN", h, np.array([1, 2], np.int32), keep_dims=False)
    s = b.op("SUB", m, m)
    p = b.op("PACK", m, s, axis=0, values_count=2, shape=(2, 1, 4))
    return b.build(outputs=[p])


def devices_of(ann):
    return {n: a.device for n, a in ann.items()}


def test_first_device_in_the_users_order_that_supports_the_op():
    G = mixed_net()
    gpu_first = devices_of(annotate_targets(G, resolve_devices("GPU,NNAPI")))
    assert gpu_first == {"conv_2d_0": "GPU", "mean_1": "GPU", "sub_2": "NNAPI", "pack_3": "NNAPI"}
    nnapi_first = devices_of(annotate_targets(G, resolve_devices("NNAPI,GPU")))
    # NNAPI has no MEAN: the next device in the list takes it
    assert nnapi_first == {
        "conv_2d_0": "NNAPI",
        "mean_1": "GPU",
        "sub_2": "NNAPI",
        "pack_3": "NNAPI",
    }
    cpu_only = devices_of(annotate_targets(G, resolve_devices("GPU")))
    assert cpu_only["pack_3"] == "CPU" and cpu_only["sub_2"] == "CPU"


def test_annotations_come_in_execution_order_and_leave_the_graph_alone():
    G = mixed_net()
    before = [(n, d["op"]) for n, d in G.nodes(data=True)]
    ann = annotate_targets(G, resolve_devices("GPU,CPU"))
    assert list(ann) == list(G)
    assert [(n, d["op"]) for n, d in G.nodes(data=True)] == before
    assert all("device" not in d for _, d in G.nodes(data=True))


def test_device_list_without_cpu_is_refused():
    G = mixed_net()
    gpu = resolve_devices("GPU")[0]
    with pytest.raises(PartitionError, match="must include CPU"):
        annotate_targets(G, [gpu])


# --------------------------------------------------------------------------------------------
# inference types
# --------------------------------------------------------------------------------------------


def typed_ops():
    """Four independent ops over float / int8 / uint8 / mixed operands::

    xf ─ add_f (float)       xq ─ add_q (int8)       xu ─ add_u (uint8)
    xf ─ fc_h (float x, int8 weights: HYBRID)        xq, xu ─ add_m (int8 + uint8)
    """
    ts = [
        Tensor("xf", (1, 4), "float32"),
        Tensor("xq", (1, 4), "int8", quantization=QI8),
        Tensor("xu", (1, 4), "uint8", quantization=QU8),
        Tensor("w", (3, 4), "int8", quantization=QI8, buffer=Buffer.placeholder(12)),
        Tensor("yf", (1, 4), "float32"),
        Tensor("yq", (1, 4), "int8", quantization=QI8),
        Tensor("yu", (1, 4), "uint8", quantization=QU8),
        Tensor("yh", (1, 3), "float32"),
        Tensor("ym", (1, 4), "int8", quantization=QI8),
    ]
    act = {"fused_activation_function": "NONE"}
    ops = [
        Op("add_f", "ADD", ("xf", "xf"), ("yf",), act),
        Op("add_q", "ADD", ("xq", "xq"), ("yq",), act),
        Op("add_u", "ADD", ("xu", "xu"), ("yu",), act),
        Op("fc_h", "FULLY_CONNECTED", ("xf", "w", None), ("yh",), act),
        Op("add_m", "ADD", ("xq", "xu"), ("ym",), act),
    ]
    return make_graph("typed", ts, ops, ["xf", "xq", "xu"], ["yf", "yq", "yu", "yh", "ym"])


def test_inference_types_from_operand_types():
    G = typed_ops()
    got = {n: annotated_inference_type(G, n) for n in G}
    assert got == {
        "add_f": "FLOAT",
        "add_q": "QUANTIZED_INT8",
        "add_u": "QUANTIZED_UINT8",
        "fc_h": "HYBRID",
        "add_m": "FLOAT",
    }  # TAC's UNKNOWN (int8 + uint8) -> FLOAT


def test_quantized_ops_skip_the_float_only_gpu():
    G = typed_ops()
    ann = annotate_targets(G, resolve_devices("GPU,NNAPI"))
    assert ann["add_f"] == Annotation("GPU", "FLOAT")
    assert ann["add_q"] == Annotation("NNAPI", "QUANTIZED_INT8")
    assert ann["add_u"] == Annotation("NNAPI", "QUANTIZED_UINT8")
    assert ann["fc_h"] == Annotation("CPU", "HYBRID")  # no accelerator runs hybrid ops
    assert ann["add_m"].device == "CPU"  # int8 activations are not float ones


# --------------------------------------------------------------------------------------------
# pins
# --------------------------------------------------------------------------------------------


def test_pins_move_ops_and_are_marked():
    G = mixed_net()
    targets = resolve_devices("GPU,NNAPI")
    ann = annotate_targets(G, targets, pins=[("conv_2d_0", "CPU"), ("*_[02]", "NNAPI")])
    assert ann["conv_2d_0"] == Annotation("CPU", "FLOAT", pinned=True)  # first pin wins
    assert ann["sub_2"] == Annotation("NNAPI", "FLOAT", pinned=True)
    assert ann["mean_1"] == Annotation("GPU", "FLOAT")
    sub = annotate_targets(G, targets, pins=[("sub_?", "cpu")])["sub_2"]
    assert sub == Annotation("CPU", "FLOAT", pinned=True)  # NNAPI would have taken it


def test_pin_by_output_tensor_name():
    ts = [Tensor(n, (1, 4), "float32") for n in ("x", "logits", "y")]
    G = make_graph(
        "g",
        ts,
        [Op("relu_0", "RELU", ("x",), ("logits",)), Op("tanh_1", "TANH", ("logits",), ("y",))],
        ["x"],
        ["y"],
    )
    ann = annotate_targets(G, resolve_devices("GPU,CPU"), pins=[("logit*", "CPU")])
    assert ann["relu_0"] == Annotation("CPU", "FLOAT", pinned=True)
    assert ann["tanh_1"] == Annotation("GPU", "FLOAT")


@pytest.mark.parametrize(
    ("pins", "error", "message"),
    [
        ([("nothing_*", "GPU")], PartitionError, "pin 'nothing_\\*=GPU' matches no op"),
        ([("conv_*", "NNAPI")], PartitionError, "not in the device list GPU,CPU"),
        ([("conv_*", "TPU")], TargetError, "unknown device 'TPU'"),
        ([("conv_*", "CPU"), ("conv_2d_0", "GPU")], PartitionError, "taken by an earlier pin"),
        (["kind:mean=GPU", "kind:PACK=NNAPI"], PartitionError, "not in the device list"),
        (["kind:TANH=CPU"], PartitionError, "pin 'kind:TANH=CPU' matches no op"),
    ],
)
def test_bad_pins_raise_one_line_errors(pins, error, message):
    with pytest.raises(error, match=message) as err:
        annotate_targets(mixed_net(), resolve_devices("GPU,CPU"), pins=pins)
    assert "\n" not in str(err.value)


def test_a_pin_holds_when_a_lowering_makes_the_op_runnable():
    # the GPU has no PACK, but lowers it to CONCATENATION + RESHAPE, as its views do
    ann = annotate_targets(mixed_net(), resolve_devices("GPU,CPU"), pins=["pack_3=GPU"])
    assert ann["pack_3"] == Annotation("GPU", "FLOAT", pinned=True)


def test_a_pin_to_a_device_that_cannot_run_the_op_names_why():
    q = Quantization((0.1,), (0,))
    G = make_graph(
        "g",
        [Tensor("x", (1, 4), "int8", quantization=q), Tensor("y", (1, 4), "int8", quantization=q)],
        [Op("quantize_0", "QUANTIZE", ("x",), ("y",))],
        ["x"],
        ["y"],
    )
    with pytest.raises(PartitionError) as err:
        annotate_targets(G, resolve_devices("GPU,CPU"), pins=["kind:QUANTIZE=GPU"])
    message = str(err.value)
    assert "\n" not in message
    assert "pin 'kind:QUANTIZE=GPU': op 'quantize_0' (QUANTIZE, QUANTIZED_INT8)" in message
    assert "cannot run on GPU: GPU does not run QUANTIZE" in message


def test_kind_pins_match_op_kinds_case_insensitively():
    G = mixed_net()
    ann = annotate_targets(G, resolve_devices("GPU,NNAPI"), pins=["kind:conv_2d=CPU"])
    assert ann["conv_2d_0"] == Annotation("CPU", "FLOAT", pinned=True)
    assert not any(a.pinned for n, a in ann.items() if n != "conv_2d_0")


def test_parse_pin():
    assert parse_pin("kind:conv_2d=gpu") == ("kind:CONV_2D", "GPU")
    assert parse_pin("conv_2d_*=gpu") == ("conv_2d_*", "GPU")
    assert parse_pin("a=b=cpu") == ("a=b", "CPU")  # the last '=' splits
    for bad in ("conv_2d_0", "=GPU", "conv="):
        with pytest.raises(PartitionError, match="PATTERN=DEVICE"):
            parse_pin(bad)

"""Why an op runs where it does: refusal reasons per device, and the price of overriding."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.fusion.ir import Op, Quantization, Tensor, make_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.partitioner.explain import REASONS, explain_op, op_refusals, refusal, result_refusals
from tacopt.partitioner.pipeline import partition
from tacopt.partitioner.targets import PartitionError, get_target, resolve_devices

Q = Quantization((0.1,), (0,))


def quantized_chain():
    """x(int8) - relu_0 - quantize_1 - y(int8): NNAPI runs both, the GPU neither as int8."""
    ts = [Tensor(n, (1, 8, 8, 4), "int8", quantization=Q) for n in "xhy"]
    ops = [Op("relu_0", "RELU", ("x",), ("h",)), Op("quantize_1", "QUANTIZE", ("h",), ("y",))]
    return make_graph("q", ts, ops, ["x"], ["y"])


def slice_net():
    """x(1,8) - slice_0 (rank 2: the GPU runs SLICE on 4-D tensors only) - y."""
    b = GraphBuilder("s")
    x = b.input("x", (1, 8))
    y = b.op("SLICE", x, np.array([0, 0], np.int32), np.array([1, 4], np.int32), shape=(1, 4))
    return b.build(outputs=[y])


def test_each_reason_is_named_with_what_refused():
    targets = resolve_devices("GPU,NNAPI,CPU")
    why = op_refusals(quantized_chain(), targets)
    # the GPU runs RELU in float: the int8 op's float form runs there, so it is not refused
    assert why["relu_0"] == {"GPU": None, "NNAPI": None, "CPU": None}
    gpu = why["quantize_1"]["GPU"]
    assert (gpu.reason, gpu.detail) == ("kind", "GPU does not run QUANTIZE")
    assert why["quantize_1"]["NNAPI"] is None  # an int8 -> int8 requantization
    assert why["quantize_1"]["CPU"] is None


def test_type_and_predicate_refusals():
    G = quantized_chain()
    npu = refusal(get_target("NPU"), G, "relu_0", "QUANTIZED_UINT8")
    assert npu.reason == "type" and "QUANTIZED_INT8 only, not QUANTIZED_UINT8" in npu.detail
    act = refusal(get_target("GPU"), G, "relu_0", "FLOAT")
    assert act.reason == "type" and "'h' is int8" in act.detail  # the activations are int8
    S = slice_net()
    (op,) = list(S)
    pred = refusal(get_target("GPU"), S, op, "FLOAT")
    assert pred.reason == "predicate" and "4 dimensions" in pred.detail
    # ... but the GPU's views pad the slice to 4-D (slice_to_4d): not refused in the end
    assert op_refusals(S, resolve_devices("GPU,CPU"))[op]["GPU"] is None


def test_a_pin_refuses_every_other_device():
    result = partition(quantized_chain(), "GPU,NNAPI,CPU", pins=["relu_0=CPU"])
    why = result_refusals(result)
    assert why["relu_0"]["CPU"] is None
    assert {why["relu_0"][d].reason for d in ("GPU", "NNAPI")} == {"pin"}


def test_a_memory_refusal_when_the_op_alone_overflows_the_device():
    result = partition(
        quantized_chain(), "NNAPI,CPU", granularity="op", capacity={"NNAPI": 300}
    )  # each op reads 256 B and writes 256 B
    why = result_refusals(result)
    assert why["relu_0"]["NNAPI"].reason == "memory"
    assert "512 B" in why["relu_0"]["NNAPI"].detail
    assert all(r is None or r.reason in REASONS for row in why.values() for r in row.values())


@pytest.mark.parametrize(
    "name", ["keras__mobilenet_v2_int8.tflite", "keras__text_lstm_float32.tflite"]
)
def test_refusals_agree_with_the_views(bundled_models, name):
    """A device refuses an op exactly when the op's own unit has no view there (op units)."""
    from tacopt.fusion.tflite.reader import read_tflite

    result = partition(read_tflite(bundled_models[name]), "GPU,NNAPI,CPU", granularity="op",
                       picker="greedy")  # fmt: skip
    why = result_refusals(result)
    for unit, views in result.views.items():
        devices = {v.device for v in views}
        assert {d for d, r in why[unit].items() if r is None} == devices, unit


def test_explain_prices_overriding_by_re_solving():
    G = quantized_chain()
    result = partition(G, "GPU,NNAPI,CPU", granularity="op")
    e = explain_op(G, result, "quantize_1", granularity="op")
    sides = {d.device: d for d in e.devices}
    assert sides["GPU"].refusal.reason == "kind" and sides["GPU"].pinned_objective is None
    chosen = sides[e.device]
    assert chosen.status == "chosen" and chosen.pinned_objective == result.plan.objective
    for d in e.devices:
        if d.refusal is None and d.device != e.device:
            pinned = partition(
                G, "GPU,NNAPI,CPU", granularity="op", pins=[f"quantize_1={d.device}"]
            )
            assert d.pinned_objective == pytest.approx(pinned.plan.objective)
            assert d.pinned_objective >= result.plan.objective - 1e-9  # overriding never pays


def test_explain_an_unknown_op_is_one_line():
    G = quantized_chain()
    result = partition(G, "GPU,CPU")
    with pytest.raises(PartitionError, match="no op 'relu_9'.*close: relu_0") as err:
        explain_op(G, result, "relu_9")
    assert "\n" not in str(err.value)


def test_the_plan_json_records_the_pins(bundled_models):
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(bundled_models["keras__mobilenet_v2_float32.tflite"])
    result = partition(G, "GPU,CPU", pins=["kind:DEPTHWISE_CONV_2D=CPU"], picker="greedy")
    summary = result.summary()
    (pin,) = summary["pins"]
    assert pin["pin"] == "kind:DEPTHWISE_CONV_2D=CPU" and pin["device"] == "CPU"
    kinds = {result.source.nodes[n]["op"].kind for n in pin["ops"]}
    assert kinds == {"DEPTHWISE_CONV_2D"} and len(pin["ops"]) == 17
    assert summary["pinned"] == dict.fromkeys(pin["ops"], "CPU")


def test_explain_shows_model_strings_escaped():
    from tacopt.benchmarks.fuzz.names import terminal_problems
    from tacopt.partitioner.explain import DeviceExplanation, Explanation, format_explanation
    from tacopt.partitioner.refusals import Refusal

    bad = "\x1b[2J\x07\r\u202e"
    e = Explanation(
        op=f"op{bad}", kind=f"CUSTOM:{bad}", unit=f"u{bad}", unit_ops=2, device="CPU",
        objective=1.0,
        devices=(
            DeviceExplanation(
                "GPU", Refusal("GPU", "kind", f"GPU does not run CUSTOM:{bad}"), None, None
            ),
            DeviceExplanation("CPU", None, 1.0, 1.0, "chosen"),
        ),
    )  # fmt: skip
    text = format_explanation(e)
    assert terminal_problems(text) == []
    assert "\\x1b[2J\\x07\\r\\u202e" in text

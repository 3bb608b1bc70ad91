"""Measure what the partitioner prices: ops of constants folded at init (float16 weights behind a
DEQUANTIZE, sparse ones behind a DENSIFY), the ops reading them cut with constant weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tacopt.benchmarks.scripts.zoo.zoo_variants import float16_weights, sparse_weights
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.singleop import (
    constant_inputs,
    fill_constants,
    fold_constants,
    folded_reason,
    op_features,
    op_key,
    priced_graph,
)
from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph, ops_of, validate_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.partitioner.cli import main


def float_net() -> object:
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    y = b.op("CONV_2D", x, np.ones((16, 3, 3, 8)), np.zeros(16), padding="SAME")
    y = b.op("DEPTHWISE_CONV_2D", y, np.ones((1, 3, 3, 16)), np.zeros(16), padding="SAME")
    y = b.op("CONV_2D", y, np.ones((32, 1, 1, 16)), np.zeros(32))
    y = b.op("RESHAPE", y, np.array([1, 16 * 16 * 32], np.int32))
    y = b.op("FULLY_CONNECTED", y, np.ones((10, 16 * 16 * 32)), np.zeros(10))
    return b.build(outputs=[y])


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from tacopt.fusion.tflite.writer import write_tflite

    folder = tmp_path_factory.mktemp("variants")
    G = float_net()
    return {
        name: write_tflite(H, folder / f"net_{name}.tflite")
        for name, H in (("float", G), ("fp16", float16_weights(G)), ("sparse", sparse_weights(G)))
    }


def weight_descs(records: list[dict]) -> list[list]:
    return [r["inputs"][1] for r in records if r["type"] == "op" and len(r["inputs"]) > 1
            and r["kind"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")]  # fmt: skip


def test_float16_and_sparse_weights_are_measured_constant_and_folded_not_skipped(
    variants: dict[str, Path], tmp_path: Path
) -> None:
    recs = {}
    for name, path in variants.items():
        out = tmp_path / f"{name}.jsonl"
        assert main(["measure", str(path), "--out", str(out), "--quiet", "--repeats", "3"]) == 0
        recs[name] = read_records(out)
    for name in ("fp16", "sparse"):
        rs = recs[name]
        assert not [r for r in rs if r["type"] == "skip"]
        folded = [r for r in rs if r["type"] == "folded"]
        kind = "DEQUANTIZE" if name == "fp16" else "DENSIFY"
        assert folded and {r["kind"] for r in folded} == {kind}
        reason = "folded at init: every input is constant"
        assert all(r["reason"].startswith(reason) for r in folded)
        # the ops reading them: featured (and keyed) with constant float32 weights, as stored
        assert all(d[1] == "float32" and d[2] is True for d in weight_descs(rs))
        model = next(r for r in rs if r["type"] == "model")
        assert len(model["folded"]) == len(folded)  # one record per configuration
        stored = read_tflite(variants[name])
        assert sum(n for _, n in model["folded"]) == sum(
            op.kind == kind for _, op in ops_of(stored)
        )
        assert model["latency_us"] > 0  # the model as stored runs whole
    ops = {name: {r["key"] for r in rs if r["type"] == "op"} for name, rs in recs.items()}
    assert ops["fp16"] == ops["float"]  # the same configurations as the float32 model
    assert ops["sparse"] == ops["float"]


def test_learned_model_prices_folded_ops_at_zero_and_knows_the_weights_constant() -> None:
    G = float16_weights(float_net())
    dq = [n for n, op in ops_of(G) if op.kind == "DEQUANTIZE"]
    conv = next(n for n, op in ops_of(G) if op.kind == "CONV_2D")
    assert dq and all(folded_reason(G, n) for n in dq)
    assert G.nodes[conv]["op"].inputs[1] in constant_inputs(G, conv)
    H, folded, note = priced_graph(G)
    validate_graph(H)
    assert note is None and {f["kind"] for _, f, _ in folded} == {"DEQUANTIZE"}
    # the stored graph and the priced one give the conv the same features, so the same key
    key = op_key(op_features(G, conv, root=G))
    assert key == op_key(op_features(H, conv, root=H))
    recs = [{"type": "op", "key": key, "kind": "CONV_2D", "inference_type": "FLOAT",
             "flops": 1e5, "bytes": 1e4, "outputs": [[[1, 16, 16, 16]]], "latency_us": 30.0,
             "overhead_us": 0.5}] * 3  # fmt: skip
    model = LearnedCostModel(fit(recs, kinds=False))
    assert model.op_cost(G, dq[0], "CPU", "FLOAT") == 0.0
    assert model.predict(op_features(G, conv, root=G), key=key).source == "exact"


def test_only_kinds_the_runtime_folds_are_folded() -> None:
    """SELECT_V2 of constants runs on every invoke (``python -m tacopt.benchmarks check_folding``:
    +33 us)."""
    shape = (1, 4)
    ts = [
        Tensor("m", shape, "bool", buffer=Buffer.from_bytes(np.ones(shape, bool))),
        Tensor("a", shape, "float32", buffer=Buffer.placeholder(16)),
        Tensor("b", shape, "float32", buffer=Buffer.placeholder(16)),
        Tensor("c", shape, "float32"),
        Tensor("x", shape, "float32"),
        Tensor("y", shape, "float32"),
    ]
    ops = [Op("sel", "SELECT_V2", ("m", "a", "b"), ("c",)),
           Op("add", "ADD", ("x", "c"), ("y",), {"fused_activation_function": "NONE"})]  # fmt: skip
    G = make_graph("g", ts, ops, ["x"], ["y"])
    assert folded_reason(G, "sel") is None and constant_inputs(G, "add") == set()
    assert fold_constants(G) == (G, [])


def test_folded_values_are_the_real_ones_when_the_weights_are_stored() -> None:
    G = fill_constants(float_net(), seed=3)
    H, folded = fold_constants(float16_weights(G))
    assert folded
    for name, t in G.graph["tensors"].items():
        if t.is_constant and t.dtype == "float32" and t.num_elements > 1:
            want = np.asarray(t.data()).astype(np.float16).astype(np.float32)
            assert np.array_equal(H.graph["tensors"][name].data(), want)
    S, sfolded = fold_constants(sparse_weights(G, density=0.5, seed=1))
    fc = next(op for _, op in ops_of(S) if op.kind == "FULLY_CONNECTED")
    dense = S.graph["tensors"][fc.inputs[1]].data()
    assert sfolded and np.mean(dense == 0) == pytest.approx(0.5)  # densified by the runtime


def test_int8_weights_dequantized_per_channel_fold_to_their_real_values() -> None:
    from tacopt.fusion.ir.records import Quantization

    q = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    quant = Quantization(scale=(0.5, 1.0, 2.0), zero_point=(0, 1, -1), axis=0)
    ts = [
        Tensor("q", (3, 4), "int8", quantization=quant, buffer=Buffer.from_bytes(q)),
        Tensor("w", (3, 4), "float32"),
        Tensor("x", (1, 4), "float32"),
        Tensor("y", (1, 3), "float32"),
    ]
    ops = [Op("dq", "DEQUANTIZE", ("q",), ("w",)),
           Op("fc", "FULLY_CONNECTED", ("x", "w", None), ("y",))]  # fmt: skip
    H, folded = fold_constants(make_graph("g", ts, ops, ["x"], ["y"]))
    want = (q - np.array([[0], [1], [-1]])) * np.array([[0.5], [1.0], [2.0]])
    assert np.array_equal(H.graph["tensors"]["w"].data(), want.astype(np.float32))
    assert folded[0][2] == "folded at init: every input is constant (DEQUANTIZE int8 -> float32)"


def test_evaluate_counts_folded_ops_apart_from_skips_with_their_reasons() -> None:
    from tacopt.cost_models.learned.fitting.accuracy import model_accuracy, report_lines

    ops = [{"type": "op", "key": f"k{i}", "kind": "ADD", "inference_type": "FLOAT",
            "flops": 10.0**i, "bytes": 10.0**i, "outputs": [[[10**i]]], "latency_us": 2.0 + i,
            "overhead_us": 1.0, "model": "m"} for i in range(5)]  # fmt: skip
    skip = {"type": "skip", "key": "s", "kind": "WHILE", "reason": "control flow"}
    folded = {"type": "folded", "key": "f", "kind": "DEQUANTIZE", "reason": "folded at init"}
    res = model_accuracy(LearnedCostModel(fit(ops)), [*ops, skip, folded, folded])
    assert res["skips"] == 1 and res["skip_share"] == pytest.approx(1 / 6)
    assert res["folded"] == 2 and res["skip_reasons"] == {"WHILE: control flow": 1}
    assert "  skipped 1 x WHILE: control flow" in report_lines(res)


def padded_net(padding: str = "VALID", pads: tuple = ((0, 0), (0, 1), (0, 1), (0, 0)),
               kind: str = "CONV_2D", second_reader: bool = False) -> object:  # fmt: skip
    """A PAD before a 3x3 convolution of stride 1; the default pads are not SAME's (fusion would
    make those a SAME convolution, :func:`tacopt.fusion.rules.patterns.fold_pad`)."""
    b = GraphBuilder()
    x = b.input("x", (1, 16, 16, 8))
    p = b.op("PAD", x, np.array(pads, np.int32))
    if kind == "CONV_2D":
        y = b.op("CONV_2D", p, np.ones((8, 3, 3, 8)), np.zeros(8), padding=padding)
    else:
        y = b.op(kind, p, np.ones((1, 3, 3, 8)), np.zeros(8), padding=padding, depth_multiplier=1)
    outs = [y, b.op("MEAN", p, np.array([1, 2], np.int32))] if second_reader else [y]
    return b.build(outputs=outs)


@pytest.mark.parametrize(
    "case, absorbed",
    [
        ({}, True),
        ({"kind": "DEPTHWISE_CONV_2D"}, True),
        ({"pads": ((0, 0), (2, 1), (2, 1), (0, 0))}, True),
        ({"padding": "SAME"}, False),  # XNNPACK then runs the PAD (measured: + its own time)
        ({"pads": ((0, 0), (0, 1), (0, 1), (0, 2))}, False),  # channels: not a conv's padding
        ({"second_reader": True}, False),  # another op needs the padded tensor
    ],
)
def test_a_zero_pad_of_h_and_w_before_a_valid_convolution_is_absorbed(
    case: dict, absorbed: bool
) -> None:
    from tacopt.cost_models.learned.measurement.singleop import absorbed_reason

    G = padded_net(**case)
    pad = next(n for n, op in ops_of(G) if op.kind == "PAD")
    assert (absorbed_reason(G, pad) is not None) is absorbed
    conv = next(n for n, op in ops_of(G) if "CONV" in op.kind)
    assert absorbed_reason(G, conv) is None


def viewed_net(kind: str = "RESHAPE", *, from_input: bool = False, last: bool = False) -> object:
    """x -> CONV_2D 1x1 -> view (RESHAPE / EXPAND_DIMS / SQUEEZE and back) -> ADD x -> y

    ``from_input``: the view reads the graph input; ``last``: the view's output is the
    graph's output (no reader)."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 8, 4))
    y = x if from_input else b.op("CONV_2D", x, np.ones((4, 1, 1, 4)), np.zeros(4))
    if kind == "RESHAPE":
        v = b.op("RESHAPE", y, np.array([1, 64, 4], np.int32))
        back = b.op("RESHAPE", v, np.array([1, 8, 8, 4], np.int32))
    else:
        v = b.op("EXPAND_DIMS", y, np.array(0, np.int32), shape=(1, 1, 8, 8, 4))
        back = b.op("SQUEEZE", v, squeeze_dims=[0], shape=(1, 8, 8, 4))
    return b.build(outputs=[back if last else b.op("ADD", back, x)])


@pytest.mark.parametrize(
    "case, elided",
    [
        ({}, [True, True]),
        ({"kind": "EXPAND_DIMS"}, [True, True]),
        ({"from_input": True}, [False, True]),  # the first reads the graph input
        ({"last": True}, [True, False]),  # the second is the graph output
    ],
)
def test_a_view_between_ops_xnnpack_runs_costs_nothing_in_the_model(
    case: dict, elided: list[bool]
) -> None:
    from tacopt.cost_models.learned.fitting.model import default_learned_model
    from tacopt.cost_models.learned.measurement.singleop import VIEW_KINDS, absorbed_reason

    G = viewed_net(**case)
    views = [n for n, op in ops_of(G) if op.kind in VIEW_KINDS]
    assert [absorbed_reason(G, n) is not None for n in views] == elided
    model = default_learned_model()
    costs = [model.op_cost(G, n, "CPU", "FLOAT") for n in views]
    assert [c == 0.0 for c in costs] == elided


def test_an_absorbed_pad_costs_nothing_in_a_model_under_xnnpack_only(tmp_path: Path) -> None:
    """``measure`` lists the PAD under the model record's ``absorbed`` (and still measures it
    alone); the learned model prices it at zero inside the model, and in the whole-model
    prediction, when its kernels are XNNPACK's, at its measured cost with the builtin ones."""
    from tacopt.fusion.tflite.writer import write_tflite

    path = write_tflite(padded_net(), tmp_path / "padded.tflite")
    out = tmp_path / "padded.jsonl"
    assert main(["measure", str(path), "--out", str(out), "--quiet", "--repeats", "3"]) == 0
    recs = read_records(out)
    pad = next(r for r in recs if r["type"] == "op" and r["kind"] == "PAD")
    model_rec = next(r for r in recs if r["type"] == "model")
    assert model_rec["absorbed"] == [[pad["key"], 1.0]]
    # records from before the field get the same list from the model (add_absorbed)
    from tacopt.benchmarks.scripts.learned.add_absorbed import main as add_absorbed

    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "absorbed"}) + "\n"
                           for r in recs))  # fmt: skip
    new = tmp_path / "new.jsonl"
    assert add_absorbed([str(old), "--zoo", str(tmp_path), "--out", str(new)]) == 0
    assert read_records(new) == recs
    doc = fit(recs * 3, kinds=False)
    xnn = LearnedCostModel(doc)
    builtin_fp = {**doc["fingerprint"], "resolver": "builtin"}
    builtin = LearnedCostModel({**doc, "fingerprint": builtin_fp})
    G = padded_net()
    assert xnn.op_cost(G, "pad_0", "CPU", "FLOAT") == 0.0
    assert builtin.op_cost(G, "pad_0", "CPU", "FLOAT") > 0.0  # type: ignore[operator]
    from tacopt.cost_models.learned.measurement.records import records_by_key

    by_key = records_by_key(recs)
    without = xnn.predict_model(model_rec, by_key, raw=True)
    with_pad = xnn.predict_model({**model_rec, "absorbed": []}, by_key, raw=True)
    assert with_pad - without == pytest.approx(xnn.predict_net(pad, key=pad["key"]))

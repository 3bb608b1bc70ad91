"""Issue 22: an op the delegate refuses runs in LiteRT's builtin kernels, often several times
slower; measurement records it, the learned model prices it as a kind of its own (version 10)
and asks LiteRT the same question of the ops it prices."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tacopt.cost_models.learned.fitting.features import as_kernel_kind
from tacopt.cost_models.learned.fitting.model import LearnedCostModel, fit
from tacopt.cost_models.learned.measurement.singleop import delegated_alone, op_features, op_key
from tacopt.cost_models.learned.measurement.speed import reference_models
from tacopt.cost_models.learned.measurement.timing import MeasureConfig, time_models
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.writer import serialize_tflite


def pool(k: int, stride: int):
    b = GraphBuilder(f"pool{k}")
    y = b.op("AVERAGE_POOL_2D", b.input("x", (1, 16, 16, 8)), padding="VALID",
             stride_h=stride, stride_w=stride, filter_height=k, filter_width=k)  # fmt: skip
    return b.build(outputs=[y])


def test_litert_says_which_ops_xnnpack_takes() -> None:
    """XNNPACK refuses a 1x1 average pool of stride 2 (a subsampling) and every LSTM; it takes a
    2x2 pool. Without a delegate (LiteRT's builtin kernels) there is no question to ask."""
    assert delegated_alone(pool(2, 2), "average_pool_2d_0") is True
    assert delegated_alone(pool(1, 2), "average_pool_2d_0") is False
    assert delegated_alone(pool(2, 2), "average_pool_2d_0", resolver="builtin") is None
    cfg = MeasureConfig(samples=2, rounds=1, quiet_target=0, retry_rounds=0)
    refs = reference_models()
    conv, lstm = time_models([refs["conv"], refs["lstm"]], cfg)
    assert not isinstance(conv, Exception) and not isinstance(lstm, Exception)
    assert (conv.delegated, lstm.delegated) == (True, False)
    off = time_models([refs["conv"]], MeasureConfig(samples=2, rounds=1, resolver="builtin"))[0]
    assert not isinstance(off, Exception) and off.delegated is None


def concat_record(i: float, delegated: bool) -> dict:
    """An int8 CONCATENATION: the same features whether XNNPACK takes it (operand scales equal)
    or not (they differ: a requantizing copy in the builtin kernels, 4x slower here)."""
    n = int(2000 + 40 * i)
    d = [[1, n], "int8", False, False]
    return {"type": "op", "key": f"c{i}{delegated}", "kind": "CONCATENATION",
            "inference_type": "QUANTIZED_INT8", "flops": 0.0, "bytes": 4.0 * n,
            "inputs": [d, d], "outputs": [[[1, 2 * n], "int8", False, False]],
            "options": {"axis": 1}, "overhead_us": 0.5, "delegated": delegated,
            "latency_us": 0.5 + n / 2000 * (4.0 if not delegated else 1.0)}  # fmt: skip


def test_a_refused_op_is_priced_as_a_kind_of_its_own_from_version_10() -> None:
    """Records whose features match but whose kernels differ: as ``KIND@builtin`` each side is
    priced within 10 %; read as version 9 (one kind), the refused ones are priced as the
    delegated ones."""
    recs = [concat_record(i, i % 2 == 0) for i in range(160)]
    assert as_kernel_kind(recs[1], builtin=True)["kind"] == "CONCATENATION@builtin"
    doc = json.loads(json.dumps(fit(recs)))
    assert "CONCATENATION@builtin|QUANTIZED_INT8" in doc["fits"]
    probes = [concat_record(i + 0.5, i % 2 == 0) for i in range(10, 150, 7)]  # between them
    for p in probes:
        p["key"] = "probe" + p["key"]
    model, v9 = LearnedCostModel(doc), LearnedCostModel({**doc, "version": 9})
    ratios = np.array([model.predict(p).latency_us / p["latency_us"] for p in probes])
    assert np.mean(np.abs(ratios - 1) <= 0.1) >= 0.9, ratios
    assert model.family("CONCATENATION@builtin", "QUANTIZED_INT8") == "builtin"
    refused = [p for p in probes if not p["delegated"]]
    v9_ratios = np.array([v9.predict(p).latency_us / p["latency_us"] for p in refused])
    assert np.all(v9_ratios < 0.5), v9_ratios  # priced as the delegated kind


def test_op_cost_asks_litert_whether_the_delegate_takes_the_op() -> None:
    """The partitioner's price of a 1x1 stride-2 pool is the builtin kind's, as measured."""
    G = pool(1, 2)
    feats = op_features(G, "average_pool_2d_0", root=G)
    recs = []
    for i in range(80):  # the builtin 1x1 pools: 8x slower than the same features delegated
        for delegated in (True, False):
            latency = 0.5 + (1.0 if delegated else 8.0)
            r = {**feats, "type": "op", "key": f"p{i}{delegated}", "overhead_us": 0.5,
                 "delegated": delegated, "latency_us": latency}  # fmt: skip
            r["inputs"] = [[[1, 16 + i, 16, 8], "float32", False, False]]
            recs.append(r)
    model = LearnedCostModel(fit(recs))
    key = op_key(feats)
    assert model.delegated(G, "average_pool_2d_0", key) is False
    cost = model.op_cost(G, "average_pool_2d_0", "CPU", "FLOAT")
    assert cost == pytest.approx(8.0, rel=0.1)
    assert serialize_tflite(G)  # the probe left the graph as it was

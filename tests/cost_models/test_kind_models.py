"""Per-kind models, the whole-model terms and gzipped model files of the learned model."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tacopt.cost_models.base import CostModelError, load_model_file
from tacopt.cost_models.learned.fitting.features import design_row, op_vector
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.kind_models import KindModels, fit_kind_models
from tacopt.cost_models.learned.fitting.model import DEFAULT_MODEL, LearnedCostModel
from tacopt.cost_models.learned.fitting.trees import predict_stacked
from tacopt.cost_models.learned.fitting.whole_model import whole_model_terms
from tacopt.cost_models.learned.measurement.records import (
    cold_level,
    ops_and_bytes,
    records_by_key,
    spill_level,
    weight_bytes,
)
from tacopt.cost_models.model_file import model_bytes, read_model_doc


def conv_record(rng: np.random.Generator, i: int) -> dict:
    """A CONV_2D-like record whose latency follows tiled work (7-row x 16-column tiles)."""
    h, cin, cout = (int(rng.choice(v)) for v in ((7, 14, 28, 56), (16, 32, 64, 96), (8, 24, 40)))
    m = h * h
    tiles = -(-m // 7) * -(-cout // 16) * 7 * 16 * cin
    return {
        "type": "op", "key": f"c{i}", "model": f"CONV_2D:0:{i}", "kind": "CONV_2D",
        "inference_type": "FLOAT", "flops": 2.0 * m * cin * cout,
        "bytes": 4.0 * (m * cin + cin * cout + m * cout),
        "inputs": [[[1, h, h, cin], "float32", False, False],
                   [[cout, 1, 1, cin], "float32", True, False], [[cout], "float32", True, False]],
        "outputs": [[[1, h, h, cout], "float32", False, False]],
        "options": {"stride_h": 1, "stride_w": 1, "padding": "SAME"},
        "latency_us": 0.5 + tiles / 4e4, "overhead_us": 0.5,
    }  # fmt: skip


def test_kind_model_learns_tiled_work_and_is_json() -> None:
    rng = np.random.default_rng(0)
    recs = [conv_record(rng, i) for i in range(200)]
    train, test = recs[:150], recs[150:]
    fits = fit_kind_models(train, "lightgbm", min_records=60)
    assert list(fits) == ["CONV_2D|FLOAT"]
    fits = json.loads(json.dumps(fits))  # plain JSON, nothing else
    m = KindModels(fits)
    ratios = [m.predict(r) / r["latency_us"] for r in test]
    assert np.mean(np.abs(np.array(ratios) - 1) <= 0.1) >= 0.9
    assert "MUL|FLOAT" not in m and fit_kind_models(train, "lightgbm", min_records=151) == {}


def test_kind_model_fits_the_work_and_adds_the_invoke_overhead_back() -> None:
    # an op's latency is the invoke overhead plus its work: from ops of mostly overhead (a few
    # output pixels) to ops 10^4 x larger, the work alone is log-linear in the tiled MACs
    rng = np.random.default_rng(3)
    recs = []
    for i in range(240):
        r = conv_record(rng, i)
        scale = 10.0 ** rng.uniform(-3, 1)
        r["latency_us"] = 0.7 + (r["latency_us"] - 0.5) * scale
        r["flops"] *= scale  # the work the features see scales with it
        r["overhead_us"] = 0.7
        recs.append(r)
    train, test = recs[:180], recs[180:]
    fits = fit_kind_models(train, "lightgbm", min_records=60)
    assert fits["CONV_2D|FLOAT"]["overhead_us"] == pytest.approx(0.7)
    m = KindModels(fits)
    predicted = np.array([m.predict(r) for r in test])
    measured = np.array([r["latency_us"] for r in test])
    assert np.sum(measured < 0.8) >= 5 and np.all(predicted > 0.7)  # never below the overhead
    assert np.mean(np.abs(predicted / measured - 1) <= 0.1) >= 0.9


def elementwise_record(kind: str, n: int, i: int, per_element_us: float) -> dict:
    t = [[n], "float32", False, False]
    return {
        "type": "op", "key": f"{kind}{i}", "model": f"{kind}:0:{i}", "kind": kind,
        "inference_type": "FLOAT", "flops": float(n), "bytes": 12.0 * n, "inputs": [t, t],
        "outputs": [t], "options": {}, "overhead_us": 0.7,
        "latency_us": 0.7 + n * per_element_us,
    }  # fmt: skip


def test_a_family_model_prices_a_kind_with_few_configurations() -> None:
    rng = np.random.default_rng(5)
    sizes = [int(v) for v in 10 ** rng.uniform(3, 6, 160)]
    recs = [elementwise_record("ADD", n, i, 1e-3) for i, n in enumerate(sizes[:140])]
    subs = [elementwise_record("SUB", n, i, 1.5e-3) for i, n in enumerate(sizes[140:])]
    fits = fit_kind_models(recs + subs[:12], "lightgbm", min_records=60)
    assert set(fits) == {"ADD|FLOAT", "family:elementwise|FLOAT"}
    assert fits["family:elementwise|FLOAT"]["kinds"] == ["ADD", "SUB"]
    m = KindModels(json.loads(json.dumps(fits)))
    held = subs[12:]
    assert all(m.predict(r) is None for r in held)  # no model of its own
    ratios = np.array([m.predict(r, by_family=True) / r["latency_us"] for r in held])
    assert np.all(np.abs(ratios - 1) <= 0.1), ratios  # SUB's 1.5x per element, learnt from 12


def test_fit_chooses_kind_models_on_held_out_configurations() -> None:
    rng = np.random.default_rng(1)
    recs = [conv_record(rng, i) for i in range(300)]
    doc = fit(recs)
    # kept only where they beat the shared trees on held-out configurations (here the shared
    # trees see one kind too, and tie)
    assert set(doc["kind_models"]) <= {"CONV_2D|FLOAT"}
    doc["kind_models"] = fit_kind_models(recs, "lightgbm")
    doc["kind_groups"] = ["CONV_2D|FLOAT", "FULLY_CONNECTED|FLOAT"]
    model = LearnedCostModel(json.loads(json.dumps(doc)))
    probe = conv_record(np.random.default_rng(9), 999)
    assert model.predict(probe).source == "kind"
    # a FULLY_CONNECTED without a model of its own is priced as the 1x1 CONV_2D it runs as
    x, w, b = probe["inputs"]
    h, cin, cout = x[0][1], x[0][3], w[0][0]
    fc = {**probe, "kind": "FULLY_CONNECTED", "options": {},
          "inputs": [[[h * h, cin], "float32", False, False],
                     [[cout, cin], "float32", True, False], b],
          "outputs": [[[h * h, cout], "float32", False, False]]}  # fmt: skip
    p = model.predict(fc)
    assert p.source == "kind" and p.latency_us == pytest.approx(probe["latency_us"], rel=0.2)
    model.kind_groups = set()  # none chosen: the shared trees answer
    assert model.predict(probe).source == "group"


def grouped_record(rng: np.random.Generator, i: int, per_group: int = 4) -> dict:
    """A CONV_2D whose filter sees ``per_group`` input channels per group: ~10x slower per MAC
    than the GEMM of :func:`conv_record`."""
    h, c = int(rng.choice((7, 14, 28, 56))), int(rng.choice((32, 64, 96, 128)))
    macs = h * h * c * 9 * per_group
    return {
        "type": "op", "key": f"g{i}", "model": f"CONV_2D_GROUPED:0:{i}", "kind": "CONV_2D",
        "inference_type": "FLOAT", "flops": 2.0 * macs,
        "bytes": 4.0 * (2 * h * h * c + 9 * c * per_group),
        "inputs": [[[1, h, h, c], "float32", False, False],
                   [[c, 3, 3, per_group], "float32", True, False], [[c], "float32", True, False]],
        "outputs": [[[1, h, h, c], "float32", False, False]],
        "options": {"stride_h": 1, "stride_w": 1, "padding": "SAME"},
        "latency_us": 0.5 + macs / 4e3, "overhead_us": 0.5,
    }  # fmt: skip


def depthwise_record(rng: np.random.Generator, i: int, one_per_group: bool = False) -> dict:
    """A 7x7 DEPTHWISE_CONV_2D (or, ``one_per_group``, the same convolution as a CONV_2D of one
    input channel per group, as Keras exports ConvNeXt's): ~10x slower per MAC than a GEMM."""
    h, c = int(rng.choice((7, 14, 28, 56))), int(rng.choice((32, 64, 96, 128)))
    macs = h * h * c * 49
    w = [c, 7, 7, 1] if one_per_group else [1, 7, 7, c]
    return {
        "type": "op", "key": f"d{i}", "model": f"DW:0:{i}",
        "kind": "CONV_2D" if one_per_group else "DEPTHWISE_CONV_2D",
        "inference_type": "FLOAT", "flops": 2.0 * macs, "bytes": 4.0 * (2 * h * h * c + 49 * c),
        "inputs": [[[1, h, h, c], "float32", False, False],
                   [w, "float32", True, False], [[c], "float32", True, False]],
        "outputs": [[[1, h, h, c], "float32", False, False]],
        "options": {"stride_h": 1, "stride_w": 1, "padding": "SAME"},
        "latency_us": 0.5 + macs / 4e3, "overhead_us": 0.5,
    }  # fmt: skip


def within_10pct(model: LearnedCostModel, probes: list[dict]) -> float:
    """The share of ``probes`` ``model`` prices within ±10 % of their latency."""
    ratios = np.array([model.predict(p).latency_us / p["latency_us"] for p in probes])
    return float(np.mean(np.abs(ratios - 1) <= 0.1))


def test_grouped_convolutions_are_a_kind_of_their_own_from_version_8() -> None:
    """A few grouped CONV_2Ds among many GEMM ones: learnt as ``CONV_2D_GROUPED`` they are priced
    within 10 %; under the CONV_2D fit (a version-7 reading of the same file) they are not."""
    rng = np.random.default_rng(2)
    recs = [conv_record(rng, i) for i in range(300)] + [grouped_record(rng, i) for i in range(30)]
    doc = json.loads(json.dumps(fit(recs)))
    assert doc["version"] >= 8 and "CONV_2D_GROUPED|FLOAT" in doc["fits"]
    probes = [grouped_record(np.random.default_rng(7), 900 + i) for i in range(20)]
    model = LearnedCostModel(doc)
    assert within_10pct(model, probes) >= 0.8
    old = LearnedCostModel({**doc, "version": 7})  # prices every CONV_2D by its kind
    assert not old.kernel_kinds
    assert old.predict(probes[0]).latency_us < 0.7 * probes[0]["latency_us"]


def _slice_record(i: int, n: int, *, stride: int = 1, shrink: int = 0) -> dict:
    """A STRIDED_SLICE of ``(1, n, 64)`` along axis 1; XNNPACK's copy runs at ~10 GB/s, the
    builtin kernel (strides, a shrunk axis) at ~2 ns an element."""
    out = [1, n // stride, 64] if not shrink else [1, 64]

    def t(s: list, c: bool = False, v: list | None = None) -> list:
        return [s, "int32" if c else "float32", c, False, *([v] if v else [])]

    elements = 64 * (n // stride if not shrink else 1)
    net = 0.002 * elements if (stride != 1 or shrink) else 0.0004 * elements
    return {"type": "op", "key": f"ss{i}", "kind": "STRIDED_SLICE", "inference_type": "FLOAT",
            "model": "m", "flops": 0.0, "bytes": 8.0 * elements,
            "inputs": [t([1, n, 64]), t([3], True, [0, 0, 0]), t([3], True, [1, n, 64]),
                       t([3], True, [1, stride, 1])],
            "outputs": [t(out)], "options": {"shrink_axis_mask": shrink},
            "latency_us": 0.5 + net, "overhead_us": 0.5}  # fmt: skip


def test_a_strided_slice_xnnpack_refuses_is_a_kind_of_its_own_from_version_14() -> None:
    from tacopt.cost_models.learned.fitting.features import kernel_kind

    sizes = [16 * 2**k for k in range(9)]
    recs = [_slice_record(i, n) for i, n in enumerate(sizes * 3)]
    recs += [_slice_record(100 + i, n, stride=2) for i, n in enumerate(sizes)]
    recs += [_slice_record(200 + i, n, shrink=2) for i, n in enumerate(sizes[:4])]
    assert [kernel_kind(r) for r in (recs[0], recs[-1], recs[-5])] == [
        "STRIDED_SLICE", "STRIDED_SLICE_BUILTIN", "STRIDED_SLICE_BUILTIN"
    ]  # fmt: skip
    doc = json.loads(json.dumps(fit(recs)))
    assert doc["version"] >= 14
    model = LearnedCostModel(doc)
    probe = _slice_record(999, 3000, stride=3)
    assert model.predict(probe).latency_us == pytest.approx(probe["latency_us"], rel=0.1)
    old = LearnedCostModel({**doc, "version": 13})  # every STRIDED_SLICE one kind
    assert not old.strided_slices
    assert old.predict(probe).latency_us < 0.7 * probe["latency_us"]


def test_kinds_the_delegate_refuses_are_priced_on_the_builtin_kernels_overhead() -> None:
    """SHAPEs the delegate refused ran in 0.28 us under a gate overhead of 0.35 us: priced on
    the builtin kernels' overhead (the fit's ``fallback``), not floored at the gate's."""
    def shape_op(i: int, n: int) -> dict:
        t = [[1, n, 8], "float32", False, False]
        return {"type": "op", "key": f"shape{i}", "kind": "SHAPE", "inference_type": "FLOAT",
                "model": "m", "flops": 0.0, "bytes": 12.0, "inputs": [t],
                "outputs": [[[3], "int32", False, False]], "options": {"out_type": "INT32"},
                "latency_us": 0.28, "overhead_us": 0.35, "delegated": False}  # fmt: skip

    recs = [shape_op(i, 2**i) for i in range(8)] + [_slice_record(100 + i, 16 * 2**i)
                                                   for i in range(8)]  # fmt: skip
    doc = fit(recs)
    assert doc["fallback"]["kinds"] == ["SHAPE"] and doc["fallback"]["overhead_us"] <= 0.28
    probe = shape_op(99, 24)
    assert LearnedCostModel(doc).predict(probe).latency_us == pytest.approx(0.28, rel=0.1)
    # a file before the field floors it at the gate's overhead
    old = LearnedCostModel({k: v for k, v in doc.items() if k != "fallback"})
    assert old.predict(probe).latency_us > 0.35


def test_a_conv_of_one_channel_per_group_is_priced_as_a_depthwise_one_from_version_9() -> None:
    """XNNPACK runs a CONV_2D of one input channel per group as a depthwise convolution: a model
    that saw only DEPTHWISE_CONV_2D records prices it within 10 %; read as version 8 (a
    ``CONV_2D_GROUPED``, which it never saw) it does not."""
    rng = np.random.default_rng(3)
    recs = [conv_record(rng, i) for i in range(300)] + [depthwise_record(rng, i) for i in range(60)]
    doc = json.loads(json.dumps(fit(recs)))
    assert doc["version"] >= 9 and "CONV_2D_GROUPED|FLOAT" not in doc["fits"]
    probes = [depthwise_record(np.random.default_rng(7), 900 + i, True) for i in range(20)]
    model = LearnedCostModel(doc)
    assert within_10pct(model, probes) >= 0.8
    v8 = LearnedCostModel({**doc, "version": 8})
    assert v8.kernel_kinds and not v8.depthwise_groups
    assert within_10pct(v8, probes) < 0.5


def fc_record(rng: np.random.Generator, i: int, rows: int = 1) -> dict:
    """A FULLY_CONNECTED record: one row streams its weights (a GEMV, priced by the weight
    bytes); more rows run :func:`conv_record`'s tiled GEMM."""
    cin, cout = int(rng.choice((16, 32, 64, 96))), int(rng.choice((8, 24, 40)))
    tiles = -(-rows // 7) * -(-cout // 16) * 7 * 16 * cin
    latency = 0.5 + (4.0 * cin * cout / 2e3 if rows == 1 else tiles / 4e4)
    return {
        "type": "op", "key": f"f{rows}.{i}", "model": f"FULLY_CONNECTED:0:{i}",
        "kind": "FULLY_CONNECTED", "inference_type": "FLOAT", "flops": 2.0 * rows * cin * cout,
        "bytes": 4.0 * (rows * cin + cin * cout + rows * cout),
        "inputs": [[[1, rows, cin], "float32", False, False],
                   [[cout, cin], "float32", True, False], [[cout], "float32", True, False]],
        "outputs": [[[1, rows, cout], "float32", False, False]],
        "options": {"keep_num_dims": True}, "latency_us": latency, "overhead_us": 0.5,
    }  # fmt: skip


def test_a_fully_connected_of_many_rows_is_priced_as_a_pointwise_conv_from_version_11() -> None:
    """XNNPACK runs a FULLY_CONNECTED of more than one row with a 1x1 convolution's GEMM: a
    model that saw one-row FULLY_CONNECTEDs (GEMVs) and pointwise CONV_2Ds prices ConvNeXt-like
    ones of 49-3,136 rows within 10 %; read as version 10 (by its FULLY_CONNECTED fit) not."""
    rng = np.random.default_rng(4)
    recs = [conv_record(rng, i) for i in range(300)] + [fc_record(rng, i) for i in range(80)]
    doc = json.loads(json.dumps(fit(recs)))
    assert doc["version"] >= 11
    probe_rng = np.random.default_rng(7)
    rows = probe_rng.choice((49, 196, 784, 3136), 20)
    probes = [fc_record(probe_rng, i, int(r)) for i, r in enumerate(rows)]
    model = LearnedCostModel(doc)
    assert within_10pct(model, probes) >= 0.8
    v10 = LearnedCostModel({**doc, "version": 10})
    assert v10.depthwise_groups and not v10.gemm_rows
    assert within_10pct(v10, probes) < 0.5
    one_row = fc_record(probe_rng, 99)  # a GEMV stays a FULLY_CONNECTED
    assert abs(model.predict(one_row).latency_us / one_row["latency_us"] - 1) <= 0.1


def test_the_shipped_model_prices_a_many_row_fully_connected_as_its_pointwise_conv() -> None:
    """The shipped model (version 11 on) prices ViT's 197 x 768 x 3,072 FULLY_CONNECTED as the 1x1
    CONV_2D XNNPACK runs it as."""
    from tacopt.cost_models.learned.fitting.features import fc_as_pointwise_conv

    model = LearnedCostModel(read_model_doc(DEFAULT_MODEL))
    assert model.gemm_rows
    fc = {"kind": "FULLY_CONNECTED", "inference_type": "FLOAT", "options": {},
          "flops": 2.0 * 197 * 768 * 3072, "bytes": 4.0 * (197 * 768 + 768 * 3072 + 197 * 3072),
          "inputs": [[[1, 197, 768], "float32", False, False],
                     [[3072, 768], "float32", True, False]],
          "outputs": [[[1, 197, 3072], "float32", False, False]]}  # fmt: skip
    conv = fc_as_pointwise_conv(fc)
    assert conv is not None
    assert model.predict(fc).latency_us == model.predict(conv).latency_us


def test_trees_correct_the_net_latency_and_older_files_the_gross_one() -> None:
    rng = np.random.default_rng(4)
    doc = fit([conv_record(rng, i) for i in range(120)], kinds=False)
    assert set(doc["family_trees"]) == {"gemm_float"} and "trees" not in doc  # version 7
    probe = conv_record(np.random.default_rng(8), 500)
    shared = {**doc, "trees": doc["family_trees"]["gemm_float"], "family_trees": {}}
    new = LearnedCostModel(doc)
    v6, v5 = LearnedCostModel({**shared, "version": 6}), LearnedCostModel({**shared, "version": 5})
    x = np.asarray([op_vector(probe, new.tree_kinds)])
    tree = float(predict_stacked(new.family_trees["gemm_float"], x)[0])
    log_net = float(np.asarray(design_row(probe)) @ new.fits["CONV_2D|FLOAT"])
    ov = new.base_overhead_us
    assert new.predict(probe).latency_us == pytest.approx(ov + np.exp(log_net + tree))
    assert v6.predict(probe).latency_us == pytest.approx(ov + np.exp(log_net + tree))
    assert v5.predict(probe).latency_us == pytest.approx((ov + np.exp(log_net)) * np.exp(tree))
    # a kind of another family gets no GEMM correction
    add = {**probe, "kind": "ADD", "key": "add-probe"}
    add_net = float(np.asarray(design_row(add)) @ new.fits["*"])
    floor = ov + add["flops"] / new.gemm_rate
    p = new.predict(add)
    assert (p.latency_us, p.source) == (pytest.approx(max(ov + np.exp(add_net), floor)), "fallback")


def test_whole_model_terms_recover_scale_and_per_op_cost() -> None:
    rng = np.random.default_rng(2)
    ops = [conv_record(rng, i) for i in range(120)]
    records: list[dict] = list(ops)
    for j in range(30):
        picked = rng.choice(len(ops), size=int(rng.integers(8, 40)), replace=False)
        net = sum(ops[k]["latency_us"] - 0.5 for k in picked)
        latency = 0.5 + 1.12 * net + 0.3 * len(picked)
        records.append({"type": "model", "model": f"m{j}", "latency_us": latency,
                        "ops": [[ops[k]["key"], 1] for k in picked]})  # fmt: skip
    doc = fit(records)
    assert doc["in_model_scale"] == pytest.approx(1.12, abs=0.01)
    assert doc["per_op_us"] == pytest.approx(0.3, abs=0.05)
    scale, spill, per_op, trip, cold = whole_model_terms(records, LearnedCostModel(doc))
    assert (scale, per_op, trip) == (doc["in_model_scale"], doc["per_op_us"], 0.0)
    assert cold == doc["cold_weight_us_per_mb"] == 0.0  # no caches: nothing overflows
    assert spill == doc["in_model_spill"] == 0.0  # records with no caches: no spill to fit
    assert doc["cache_bytes"] is None


def spill_records(rng: np.random.Generator, spill: float, cold: float = 0.0) -> list[dict]:
    """Conv records of a device with a 64 KB L2 and a 4 MB L3, and chains of 2-40 of them run
    at (1.01 + ``spill`` x their spill level) x their ops' sum, + ``cold`` us a weight megabyte
    x their cold level."""
    fp = {"cpu": "test", "l2_bytes": 2**16, "l3_bytes": 2**22, "resolver": "xnnpack"}
    ops = [{**conv_record(rng, i), "device": "d"} for i in range(120)]
    records: list[dict] = [{"type": "device", "device": "d", "fingerprint": fp}, *ops]
    for j in range(40):
        picked = rng.choice(len(ops), size=int(rng.integers(2, 40)), replace=False)
        net = sum(ops[k]["latency_us"] - 0.5 for k in picked)
        moved = sum(ops[k]["bytes"] for k in picked)
        weights = sum(weight_bytes(ops[k]) for k in picked)
        level = spill_level(moved, (2**16, 2**22))
        records.append({"type": "model", "model": f"m{j}", "device": "d",
                        "latency_us": 0.5 + (1.01 + spill * level) * net
                        + cold * weights / 1e6 * cold_level(moved, (2**16, 2**22)),
                        "ops": [[ops[k]["key"], 1] for k in picked]})  # fmt: skip
    return records


def test_whole_model_terms_fit_how_far_a_model_spills_from_the_l2() -> None:
    # models whose ops move more bytes than the L2 holds run slower per op than short chains
    # that stay in it (a learn's chains against real models, whole_model.whole_model_terms)
    records = spill_records(np.random.default_rng(7), 0.2)
    levels = [spill_level(ops_and_bytes(r, records_by_key(records))[1], (2**16, 2**22))
              for r in records if r["type"] == "model"]  # fmt: skip
    assert min(levels) < 0.5 < max(levels)  # the chains span the range
    doc = fit(records)
    assert doc["cache_bytes"] == [2**16, 2**22]
    assert doc["in_model_scale"] == pytest.approx(1.01, abs=0.01)
    assert doc["in_model_spill"] == pytest.approx(0.2, abs=0.02)
    m = LearnedCostModel(json.loads(json.dumps(doc)))
    assert m.in_model_scale(2**10) == doc["in_model_scale"]
    assert m.in_model_scale(2**30) == pytest.approx(doc["in_model_scale"] + doc["in_model_spill"])
    by_key = records_by_key(records)
    for r in records[-5:]:  # a whole model's price uses its own spill
        assert m.predict_model(r, by_key) == pytest.approx(r["latency_us"], rel=0.05)
    # a file before the spill prices every model at its one scale
    old = LearnedCostModel({k: v for k, v in doc.items() if k not in ("in_model_spill",)})
    raw = old.predict_model(records[-1], by_key, raw=True) - old.overhead_us
    assert old.predict_model(records[-1], by_key) == pytest.approx(
        old.overhead_us + doc["in_model_scale"] * raw + doc["per_op_us"] * ops_and_bytes(
            records[-1], by_key)[0])  # fmt: skip


def test_whole_model_terms_fit_the_weights_that_come_back_cold_past_the_l3() -> None:
    # past the L3 an op's weights, hot when it is timed alone, come from memory on every
    # invoke: chains cost 300 us a weight megabyte x their cold level more than their ops' sum
    records = spill_records(np.random.default_rng(11), 0.0, cold=300)
    levels = [cold_level(ops_and_bytes(r, records_by_key(records))[1], (2**16, 2**22))
              for r in records if r["type"] == "model"]  # fmt: skip
    assert min(levels) == 0.0 and max(levels) == 1.0  # some chains stay in the L3, some not
    doc = fit(records)
    assert doc["cold_weight_us_per_mb"] == pytest.approx(300, rel=0.1)
    m = LearnedCostModel(json.loads(json.dumps(doc)))
    by_key = records_by_key(records)
    errors = [m.predict_model(r, by_key) / r["latency_us"] - 1 for r in records[-10:]]
    assert max(map(abs, errors)) < 0.03
    # a file before the term prices no cold weights
    old = LearnedCostModel({k: v for k, v in doc.items() if k != "cold_weight_us_per_mb"})
    assert all(old.predict_model(r, by_key) < m.predict_model(r, by_key) + 1e-9
               for r in records[-10:])  # fmt: skip


def test_evaluate_lists_each_whole_models_price_error_and_in_model_scale() -> None:
    # which models a learned model misprices, and at what scale (tacopt evaluate)
    from tacopt.cost_models.learned.fitting.accuracy import model_accuracy, report_lines

    records = spill_records(np.random.default_rng(7), 0.2)
    doc = fit(records)
    m = LearnedCostModel(doc)
    slow = next(r for r in records if r["type"] == "model")
    records = [*records, {**slow, "model": "slow", "latency_us": 2 * slow["latency_us"]}]
    res = model_accuracy(m, records)
    by_key = records_by_key(records)
    rows = {row["model"]: row for row in res["per_model"]}
    assert len(rows) == res["models"] == 41
    assert [row["model"] for row in res["per_model"]] == sorted(rows)
    row = rows["slow"]
    assert row["predicted_us"] == pytest.approx(m.predict_model(slow, by_key))
    assert row["error"] == pytest.approx(row["predicted_us"] / row["measured_us"] - 1)
    assert row["error"] < -0.4  # measured at twice its price
    assert row["in_model_scale"] == m.in_model_scale(ops_and_bytes(slow, by_key)[1])
    assert row["memory_index"] == 1.0  # no memory read beside it
    assert res["model_bias_median"] == pytest.approx(
        100 * float(np.median([r["error"] for r in res["per_model"]])))  # fmt: skip
    text = report_lines(res)
    assert f"(signed median {res['model_bias_median']:+.1f} %)" in text[2]
    assert any(line.startswith("  slow ") and f"{row['error'] * 100:+7.1f} %" in line
               for line in text)  # fmt: skip


def test_no_spill_without_caches_or_models_that_spill() -> None:
    assert spill_level(2**40, None) == spill_level(2**40, (2**20, 0)) == 0.0
    assert spill_level(2**40, (2**22, 2**20)) == 0.0  # an L3 smaller than the L2: no range
    assert spill_level(2**21, (2**20, 2**22)) == pytest.approx(0.5)


def test_whole_model_terms_take_a_model_timed_below_the_invoke_overhead() -> None:
    rng = np.random.default_rng(5)
    ops = [conv_record(rng, i) for i in range(40)]
    records: list[dict] = list(ops)
    for j in range(6):  # CI once timed a tiny model below the median overhead: log(<= 0)
        picked = [ops[k]["key"] for k in range(j, j + 8)]
        records.append({"type": "model", "model": f"m{j}", "ops": [[k, 1] for k in picked],
                        "latency_us": 0.2 if j == 0 else 50.0 * (j + 1)})  # fmt: skip
    doc = fit(records)
    assert 0.25 <= doc["in_model_scale"] <= 4.0 and np.isfinite(doc["per_op_us"])


def test_whole_model_terms_count_small_models_too() -> None:
    # ten 3-op chains run at their ops' sum, two 10-op ones at 1.5x: the scale follows the many
    # (before, only models of 8 ops or more counted, and a learn's few network chains set it)
    rng = np.random.default_rng(4)
    ops = [conv_record(rng, i) for i in range(60)]
    records: list[dict] = list(ops)
    for j in range(12):
        picked = [ops[k] for k in rng.choice(len(ops), size=3 if j < 10 else 10, replace=False)]
        net = sum(r["latency_us"] - 0.5 for r in picked)
        records.append({"type": "model", "model": f"m{j}", "ops": [[r["key"], 1] for r in picked],
                        "latency_us": 0.5 + (1.0 if j < 10 else 1.5) * net})  # fmt: skip
    doc = fit(records)
    assert doc["in_model_scale"] == pytest.approx(1.0, abs=0.03)


def test_net_latency_floor_is_the_model_files() -> None:
    # an op that costs the invoke overhead alone is priced at it + the floor: 0.02 us for files
    # that record theirs, 0.05 us for older ones
    rng = np.random.default_rng(6)
    recs = [conv_record(rng, i) for i in range(80)]
    recs.append({**recs[0], "key": "tiny", "latency_us": recs[0]["overhead_us"]})
    doc = fit(recs)
    assert doc["net_floor_us"] == 0.02
    new = LearnedCostModel(doc)
    old = LearnedCostModel({k: v for k, v in doc.items() if k != "net_floor_us"})
    assert (new.floor_us, old.floor_us) == (0.02, 0.05)
    assert new.predict_net(recs[-1], key="tiny") == pytest.approx(0.02)
    assert old.predict_net(recs[-1], key="tiny") == pytest.approx(0.05)


def test_model_files_gzip_deterministic_and_bounded(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    doc = fit([conv_record(rng, i) for i in range(80)])
    p = tmp_path / "m.json.gz"
    p.write_bytes(model_bytes(doc, p))
    assert model_bytes(doc, p) == p.read_bytes()  # no timestamp: same model, same bytes
    assert p.read_bytes()[:2] == b"\x1f\x8b" and read_model_doc(p) == json.loads(json.dumps(doc))
    assert isinstance(load_model_file(p), LearnedCostModel)
    plain = tmp_path / "m.json"
    plain.write_bytes(model_bytes(doc, plain))
    assert read_model_doc(plain) == read_model_doc(p)
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(b'{"format": ')[:-6])
    with pytest.raises(CostModelError, match="broken gzip data"):
        read_model_doc(tmp_path / "bad.json.gz")
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as f:  # 300 MB of spaces in ~300 kB
        for _ in range(300):
            f.write(b" " * (1 << 20))
    with pytest.raises(CostModelError, match="inflates beyond"):
        load_model_file(bomb)


def mean_record(rng: np.random.Generator, i: int) -> dict:
    """An int8 MEAN over H and W of a 4-D input, or over its channels, kept 4-D or not; a global
    pool kept 4-D runs 30x faster an element (LiteRT's builtin kernels on a Zen 4)."""
    h, c = int(rng.choice([4, 7, 14, 28, 56])), int(rng.choice([16, 64, 96, 256, 512]))
    plane, keep = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    axes = [1, 2] if plane else [3]
    out = ([1, 1, 1, c] if keep else [1, c]) if plane else ([1, h, h, 1] if keep else [1, h, h])
    n = h * h * c
    return {
        "type": "op", "key": f"m{i}", "kind": "MEAN", "inference_type": "QUANTIZED_INT8",
        "flops": float(n), "bytes": float(n + np.prod(out)),
        "inputs": [[[1, h, h, c], "int8", False, False],
                   [[len(axes)], "int32", True, False, axes]],
        "outputs": [[out, "int8", False, False]], "options": {"keep_dims": keep},
        "latency_us": 0.5 + n * (0.25 if plane and keep else 7.0) / 1000, "overhead_us": 0.5,
    }  # fmt: skip


def test_kind_model_prices_a_kept_global_pool_as_its_own_kernel() -> None:
    """A reduction's kernel path (version 12): a kind model of reductions steps in its base fit
    for a global pool kept 4-D, which its trees alone could not (Huber: 2.0 in log at most);
    without the step (5 base weights, version 11) the same model prices them at over 2x. A
    group of no reduction fits 5 weights, as before."""
    rng = np.random.default_rng(0)
    recs = [mean_record(rng, i) for i in range(160)]
    fits = fit_kind_models(recs[:120], "lightgbm", min_records=60)
    m = KindModels(json.loads(json.dumps(fits)))
    assert len(fits["MEAN|QUANTIZED_INT8"]["w"]) == 6
    ratios = np.array([m.predict(r) / r["latency_us"] for r in recs[120:]])
    assert np.mean(np.abs(ratios - 1) <= 0.1) >= 0.9
    flat = {k: {**v, "w": v["w"][:5]} for k, v in fits.items()}
    pools = [r for r in recs[120:] if r["options"]["keep_dims"] and len(r["outputs"][0][0]) == 4
             and r["inputs"][1][4] == [1, 2]]  # fmt: skip
    assert pools and min(KindModels(flat).predict(r) / r["latency_us"] for r in pools) > 2.0
    convs = fit_kind_models([conv_record(rng, i) for i in range(80)], "lightgbm", min_records=60)
    assert len(convs["CONV_2D|FLOAT"]["w"]) == 5


#: The model shipped until 2026-11-27 (fitted on a Zen 3, version 11), kept for the Zen 3 -> Zen 4
#: adaptation and as a file of an older version.
ZEN3_MODEL = (
    Path(__file__).parents[2] / "benchmarks" / "results" / "learned" / "learned_cpu_zen3.json.gz"
)


def test_a_model_file_of_version_12_sees_reductions_and_one_of_11_does_not() -> None:
    from tacopt.cost_models.learned.fitting.features import FEATURES, FEATURES_BEFORE_12
    from tacopt.cost_models.learned.fitting.model import VERSION

    rng = np.random.default_rng(1)
    doc = fit([mean_record(rng, i) for i in range(80)])
    assert doc["version"] == VERSION >= 12 and doc["tree_features"][: len(FEATURES)] == list(
        FEATURES
    )
    assert LearnedCostModel(doc).reductions and LearnedCostModel(doc).kind_models.reductions
    assert LearnedCostModel(read_model_doc(DEFAULT_MODEL)).reductions  # shipped: version >= 12
    zen3 = LearnedCostModel(read_model_doc(ZEN3_MODEL))
    assert zen3.doc["version"] == 11 and not zen3.reductions
    assert not zen3.kind_models.reductions
    assert all(len(w) == 5 for w in zen3.kind_models.w.values())
    pool = next(r for r in (mean_record(rng, i) for i in range(50)) if r["latency_us"] < 1.0)
    assert len(op_vector(pool)) == len(FEATURES)
    assert len(op_vector(pool, reductions=False)) == len(FEATURES_BEFORE_12)
    assert zen3.predict(pool).latency_us > 0
    assert LearnedCostModel(doc).predict(pool).latency_us > 0
    old_features = [*FEATURES_BEFORE_12, *doc["tree_features"][len(FEATURES) :]]
    with pytest.raises(CostModelError, match="its trees read tree input"):
        LearnedCostModel({**doc, "tree_features": old_features})  # trees of 2 more inputs


def test_a_model_file_of_version_15_sees_a_broadcasts_runs_and_one_of_14_does_not() -> None:
    """Version 15's trees see the innermost runs of a broadcast or a reduction (a detector's
    ``(1, N, 4) x (1, 1, 4)`` MUL is N runs of 4); the shipped model (version 13) is read with
    the features it was fitted on, and prices as before."""
    from tacopt.cost_models.learned.fitting.features import FEATURES, FEATURES_BEFORE_15

    rng = np.random.default_rng(1)
    doc = fit([mean_record(rng, i) for i in range(80)])
    assert doc["tree_features"][: len(FEATURES)] == list(FEATURES) and "log_runs" in FEATURES
    assert LearnedCostModel(doc).runs and LearnedCostModel(doc).kind_models.flags["runs"]
    shipped = LearnedCostModel(read_model_doc(DEFAULT_MODEL))
    assert shipped.doc["version"] < 15 and not shipped.runs and shipped.reductions
    t = [[1, 2048, 4], "float32", False, False]
    mul = {"kind": "MUL", "inference_type": "FLOAT", "flops": 8192.0, "bytes": 65552.0,
           "inputs": [t, [[1, 1, 4], "float32", True, False]], "outputs": [t], "options": {}}
    assert len(op_vector(mul, runs=False)) == len(FEATURES_BEFORE_15) == len(FEATURES) - 2
    assert op_vector(mul)[len(FEATURES_BEFORE_15):] == pytest.approx(
        [np.log1p(2048), np.log1p(4)]
    )
    assert shipped.predict(mul).latency_us > 0


def test_a_sharpened_softmax_is_a_kind_of_its_own_from_version_16() -> None:
    """A SOFTMAX of beta other than 1 runs in the builtin kernel (XNNPACK refuses it), ~6x the
    delegate's time an element: version 16 fits it as ``SOFTMAX_BUILTIN``; older files name it
    a SOFTMAX."""
    t = [[1, 33, 1024], "float32", False, False]

    def softmax(i: int, beta: float) -> dict:
        n = 33 * (256 + 64 * i)
        x = [[1, 33, 256 + 64 * i], "float32", False, False]
        per = 1.0 if beta != 1.0 else 0.16  # ns an element: builtin / XNNPACK
        return {"type": "op", "kind": "SOFTMAX", "inference_type": "FLOAT", "key": f"s{i}{beta}",
                "model": f"SOFTMAX:0:{i}{beta}", "flops": 10.0 * n, "bytes": 8.0 * n,
                "inputs": [x], "outputs": [x], "options": {"beta": beta},
                "latency_us": 0.3 + per * n / 1000, "overhead_us": 0.3}  # fmt: skip

    recs = [softmax(i, beta) for i in range(40) for beta in (1.0, 10.0)]
    doc = fit(recs)
    new = LearnedCostModel(doc)
    sharp = {"kind": "SOFTMAX", "inference_type": "FLOAT", "flops": 337920.0, "bytes": 270336.0,
             "inputs": [t], "outputs": [t], "options": {"beta": 10.0}}  # fmt: skip
    plain = {**sharp, "options": {"beta": 1.0}}
    assert doc["version"] >= 16 and new.softmax_beta
    assert new.predict(sharp).latency_us > 4 * new.predict(plain).latency_us
    old = LearnedCostModel({**doc, "version": 15})
    assert not old.softmax_beta and old.kernel_kind_flags["softmax_beta"] is False


def test_a_shared_base_memo_prices_as_without_it_once_a_record() -> None:
    """An adaptation shares its base's predictions by record key (``base_memo``): the same
    predictions, each made once."""
    rng = np.random.default_rng(2)
    recs = [mean_record(rng, i) for i in range(80)]
    doc = fit(recs)
    plain, memo = LearnedCostModel(doc), LearnedCostModel(doc)
    memo.base_memo = {}
    first = [memo.predict(r).latency_us for r in recs]
    assert first == [plain.predict(r).latency_us for r in recs]
    assert set(memo.base_memo) == {r["key"] for r in recs}
    memo.base_memo = {k: type(p)(p.latency_us * 2, p.source) for k, p in memo.base_memo.items()}
    assert [memo.predict(r).latency_us for r in recs] == [2 * p for p in first]  # read, not made


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("in_model_scale", float("nan"), "in_model_scale is nan, not a positive finite number"),
        ("in_model_scale", 0.0, "in_model_scale is 0.0, not a positive"),
        ("in_model_spill", float("inf"), "in_model_spill is inf, not a non-negative"),
        ("per_op_us", -1.0, "per_op_us is -1.0, not a non-negative"),
        ("cache_bytes", [2**20, 2**25, 1], r"cache_bytes is \[.*\], not \[L2 bytes, L3 bytes\]"),
        ("cache_bytes", [2**20, 0], r"cache_bytes is \[.*\], not \[L2 bytes, L3 bytes\]"),
    ],
)
def test_a_bad_whole_model_term_is_refused_in_one_line(field, value, message) -> None:
    doc = {**read_model_doc(DEFAULT_MODEL), field: value}
    with pytest.raises(CostModelError, match=rf"learned model 'm.json': {message}"):
        LearnedCostModel(doc, source="m.json")


def test_evaluate_on_its_own_training_records_prints_no_nan() -> None:
    """Issue 46: `tacopt evaluate model.json records.jsonl` on the records the model was fitted
    on printed "configurations not in training: nan %" (every configuration was seen)."""
    from tacopt.cost_models.learned.fitting.accuracy import model_accuracy, report_lines

    records = spill_records(np.random.default_rng(7), 0.2)
    m = LearnedCostModel(fit(records))
    ops_only = [r for r in records if r["type"] != "model"]
    seen = {r["key"] for r in records if r["type"] == "op"}  # as evaluate passes the table's
    for recs in (records, ops_only):
        res = model_accuracy(m, recs, train_keys=seen)
        assert math.isnan(res["within_10pct_unseen"])
        text = "\n".join(report_lines(res))
        assert "nan" not in text and "configurations not in training: none in these records" in text
    assert "no whole-model records" in text

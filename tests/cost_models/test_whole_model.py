"""How ops add up to a whole model (issue 47 session 5): an op the delegate refuses costs its work
inside a model, its single-op latency less the builtin kernels' shorter invoke path."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.fitting.whole_model import (
    in_model_net,
    measured_in_model_net,
    net_latency,
)
from tacopt.cost_models.learned.measurement.records import records_by_key
from tacopt.cost_models.learned.measurement.singleop import op_features, op_key
from tacopt.fusion.ir.builder import GraphBuilder

OVERHEAD, BUILTIN = 0.35, 0.28  # the delegate's invoke overhead, the builtin kernels' one


def gather_graph(rows: int, ids: int):
    """ids (ids,) int32 ──GATHER(table (rows, 16))──► (ids, 16)"""
    b = GraphBuilder(f"gather_{rows}_{ids}")
    x = b.op("GATHER", np.zeros((rows, 16), np.float32), b.input("ids", (ids,), "int32"))
    return b.build(outputs=[x])


def gather_record(rows: int, ids: int) -> dict:
    """A GATHER the delegate refused: the builtin path's overhead + 1 ns a gathered row."""
    G = gather_graph(rows, ids)
    feats = op_features(G, "gather_0", root=G)
    return {"type": "op", "key": op_key(feats), **feats, "overhead_us": OVERHEAD,
            "latency_us": BUILTIN + 0.06 + 0.001 * ids, "delegated": False}  # fmt: skip


def add_record(n: int) -> dict:
    t = [[1, n], "float32", False, False]
    return {"type": "op", "key": f"add{n}", "kind": "ADD", "inference_type": "FLOAT",
            "flops": float(n), "bytes": 12.0 * n, "inputs": [t, t], "outputs": [t],
            "options": {}, "overhead_us": OVERHEAD, "latency_us": OVERHEAD + n / 1000,
            "delegated": True}  # fmt: skip


def shape_record(n: int) -> dict:
    """A SHAPE the delegate refused: next to nothing on the builtin path (the fit's estimate
    of that path's overhead: ``whole_model.fallback_overhead``)."""
    t = [[1, n, 8], "float32", False, False]
    return {"type": "op", "key": f"shape{n}", "kind": "SHAPE", "inference_type": "FLOAT",
            "flops": 0.0, "bytes": 12.0, "inputs": [t], "outputs": [[[3], "int32", False, False]],
            "options": {"out_type": "INT32"}, "overhead_us": OVERHEAD, "latency_us": BUILTIN,
            "delegated": False}  # fmt: skip


def records() -> list[dict]:
    return [*(gather_record(1000 + 100 * i, 4 + 4 * i) for i in range(8)),
            *(add_record(2**i) for i in range(6, 14)), *(shape_record(2**i) for i in range(8))]


def test_a_refused_op_costs_its_work_inside_a_model_not_the_floor() -> None:
    recs = records()
    gathers, adds = recs[:8], recs[8:16]
    model = LearnedCostModel(fit(recs))
    assert model.fallback_kinds == {"GATHER", "SHAPE"}
    assert model.fallback_overhead_us == pytest.approx(BUILTIN)
    g = gathers[3]
    work = g["latency_us"] - model.fallback_overhead_us
    assert net_latency(g) == pytest.approx(0.02)  # less the delegate's overhead: the floor
    assert measured_in_model_net(g, model.fallback_overhead_us) == pytest.approx(work)
    assert in_model_net(model, g, key=g["key"]) == pytest.approx(work)
    assert model.predict_net(g, key=g["key"]) == pytest.approx(0.02)  # single-op nets as before
    # a delegated op is unchanged
    assert in_model_net(model, adds[4], key=adds[4]["key"]) == model.predict_net(adds[4],
                                                                                 key=adds[4]["key"])
    # a recommendation-like model: eight refused GATHERs and four ADDs, run as their work adds up
    ops = [*gathers, *adds[:4]]
    latency = OVERHEAD + sum(measured_in_model_net(r, BUILTIN) for r in ops)
    record = {"type": "model", "model": "recsys", "ops": [[r["key"], 1.0] for r in ops],
              "latency_us": latency}  # fmt: skip
    by_key = records_by_key([*ops, record])
    assert model.predict_model(record, by_key) == pytest.approx(latency, rel=0.05)
    floored = OVERHEAD + sum(model.predict_net(r, key=r["key"]) for r in ops)
    assert floored < 0.8 * latency  # priced over the delegate's overhead: 20 % and more fast
    # the partitioner's price of the op in a graph is the same work
    G = gather_graph(1300, 16)
    assert model.op_cost(G, "gather_0", "CPU", "FLOAT") == pytest.approx(
        model.scale * work + model.per_op_us, rel=1e-6)  # fmt: skip


def test_an_adapted_model_prices_every_kind_over_its_own_overhead() -> None:
    recs = records()
    adapted = LearnedCostModel({**fit(recs), "adapted": {"overhead_us": OVERHEAD}})
    g = recs[3]
    assert in_model_net(adapted, g, key=g["key"]) == adapted.predict_net(g, key=g["key"])

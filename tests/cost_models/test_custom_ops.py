"""Custom ops priced by registered rules: MediaPipe's stand-ins measured when the runtime cannot
run the op, a learned model pricing them by their rule, and a user's measured table."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from tacopt.cost_models.learned.fitting.model import default_learned_model
from tacopt.cost_models.learned.measurement.custom_ops import (
    CUSTOM_OP_RULES,
    CustomOpError,
    MeasuredTable,
    register_custom_op,
    stand_in,
)
from tacopt.cost_models.learned.measurement.measure import measure_models
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.singleop import op_features, op_key
from tacopt.cost_models.learned.measurement.timing import MeasureConfig
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.writer import write_tflite

FAST = MeasureConfig(
    samples=3, rounds=1, probe_reads=5, calibrate_s=0.0, max_wait_s=0.5, sample_s=0.0005
)


def _segmenter_head():
    """x (1,16,16,8) -> Convolution2DTransposeBias (stride 2) -> (1,32,32,4)
    -> TransformTensorBilinear (with a 4x4 matrix) -> (1,24,24,4) -> RELU -> y"""
    b = GraphBuilder("mp_head")
    x = b.input("x", (1, 16, 16, 8))
    m = b.input("m", (1, 4, 4))
    w = np.random.default_rng(0).normal(0, 0.1, (4, 3, 3, 8)).astype(np.float32)
    up = b.op("CUSTOM:Convolution2DTransposeBias", x, w, np.zeros(4, np.float32),
              shape=(1, 32, 32, 4), custom_options=struct.pack("<3i", 1, 2, 2))  # fmt: skip
    warp = b.op("CUSTOM:TransformTensorBilinear", up, m, shape=(1, 24, 24, 4),
                custom_options=b"")  # fmt: skip
    return b.build(outputs=[b.op("RELU", warp)])


def test_mediapipe_custom_ops_are_measured_by_their_stand_ins_not_skipped(tmp_path: Path) -> None:
    G = _segmenter_head()
    out = tmp_path / "r.jsonl"
    stats = measure_models([write_tflite(G, tmp_path / "mp_head.tflite")], out, FAST)
    assert stats["skipped"] == 0
    ops = {r["kind"]: r for r in read_records(out) if r["type"] == "op"}
    warp = ops["CUSTOM:TransformTensorBilinear"]  # plain LiteRT cannot resolve it: its rule
    assert warp["priced_by"] == "TransformTensorBilinear: RESIZE_BILINEAR to the output plane"
    assert warp["latency_us"] > 0
    # the records say which ops a rule priced, and only those
    assert "priced_by" not in ops["RELU"]


def test_a_learned_model_prices_an_unseen_custom_op_by_its_rule() -> None:
    G = _segmenter_head()
    model = default_learned_model()
    by_node = {G.nodes[n]["op"].kind: op_features(G, n, root=G) for n in G}
    up = model.predict(by_node["CUSTOM:Convolution2DTransposeBias"])
    assert up.source == "rule Convolution2DTransposeBias: TRANSPOSE_CONV + bias"
    # the stand-in's own TRANSPOSE_CONV, as the model prices it
    name, S = stand_in(by_node["CUSTOM:Convolution2DTransposeBias"])
    (tc,) = list(S)
    alone = model.predict(op_features(S, tc, root=S))
    assert up.latency_us == pytest.approx(alone.latency_us, rel=1e-9)
    warp = model.predict(by_node["CUSTOM:TransformTensorBilinear"])
    assert warp.source.startswith("rule TransformTensorBilinear")
    assert warp.latency_us > model.overhead_us
    # in a partition it costs what its rule says, not zero
    node = next(n for n in G if G.nodes[n]["op"].kind == "CUSTOM:TransformTensorBilinear")
    assert model.op_cost(G, node, "CPU", "FLOAT") > 0


def test_a_user_registers_a_measured_table_for_their_own_op() -> None:
    b = GraphBuilder("mine")
    y = b.op("CUSTOM:MyOp", b.input("x", (1, 8)), shape=(1, 8), custom_options=b"")
    G = b.build(outputs=[y])
    feats = op_features(G, "custom_myop_0", root=G)
    model = default_learned_model()
    assert not model.predict(feats).source.startswith("rule")
    register_custom_op("MyOp", MeasuredTable({op_key(feats): 42.0}))
    try:
        p = model.predict(feats)
        assert (p.latency_us, p.source) == (42.0, "rule MyOp: measured table")
        with pytest.raises(CustomOpError, match="'MyOp' is already registered"):
            register_custom_op("MyOp", MeasuredTable({}))
    finally:
        CUSTOM_OP_RULES.remove("MyOp")
    with pytest.raises(CustomOpError, match="unknown custom-op rule 'MyOp'; known: "):
        CUSTOM_OP_RULES.get("MyOp")

"""Measuring on the real interpreter, resuming, fitting, evaluating, loading as a cost model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tacopt.cost_models.base import CostModelError, get_cost_model
from tacopt.cost_models.learned.fitting.accuracy import model_accuracy
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.singleop import (
    cut_op,
    fill_constants,
    op_features,
    op_key,
)
from tacopt.cost_models.learned.measurement.speed import normalize_records
from tacopt.cost_models.learned.measurement.timing import (
    Gate,
    MeasureConfig,
    Timer,
    neg_graph,
    run_pass,
)
from tacopt.fusion.ir import Buffer, Op, Tensor, make_graph, validate_graph
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.writer import serialize_tflite
from tacopt.partitioner.cli import main


def small_model(n: int) -> object:
    #  x -> [ADD x,x] -> a -> [FULLY_CONNECTED w] -> b -> [TANH] -> y
    ts = [
        Tensor("x", (1, n), "float32"),
        Tensor("a", (1, n), "float32"),
        Tensor("w", (n, n), "float32", buffer=Buffer.placeholder(n * n * 4)),
        Tensor("b", (1, n), "float32"),
        Tensor("y", (1, n), "float32"),
    ]
    ops = [
        Op("add_0", "ADD", ("x", "x"), ("a",), {"fused_activation_function": "NONE"}),
        Op(
            "fully_connected_1",
            "FULLY_CONNECTED",
            ("a", "w", None),
            ("b",),
            {"fused_activation_function": "NONE", "keep_num_dims": False},
        ),
        Op("tanh_2", "TANH", ("b",), ("y",)),
    ]
    return make_graph("main", ts, ops, ["x"], ["y"])


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from tacopt.fusion.tflite.writer import write_tflite

    folder = tmp_path_factory.mktemp("models")
    paths = []
    for n in (16, 64, 256, 512, 1024):
        paths.append(write_tflite(fill_constants(small_model(n), seed=0), folder / f"m{n}.tflite"))
    return paths


def test_cut_op_and_key() -> None:
    G = small_model(8)
    S = cut_op(G, "fully_connected_1")
    validate_graph(S)
    assert S.graph["inputs"] == ("a",) and list(S) == ["fully_connected_1"]
    f = op_features(G, "fully_connected_1", root=G)
    assert f["flops"] == 2 * 64 and f["inference_type"] == "FLOAT"
    assert op_key(f) == op_key(op_features(small_model(8), "fully_connected_1", root=G))
    assert op_key(f) != op_key(op_features(small_model(9), "fully_connected_1", root=G))
    filled = fill_constants(G, seed=1)
    assert not filled.graph["tensors"]["w"].buffer.is_placeholder
    assert G.graph["tensors"]["w"].buffer.is_placeholder  # input untouched


def test_measure_resume_fit_eval(models: list[Path], tmp_path: Path, capsys) -> None:
    out = tmp_path / "rec.jsonl"
    assert main(["measure", *map(str, models), "--out", str(out), "--quiet"]) == 0
    recs = read_records(out)
    ops = [r for r in recs if r["type"] == "op"]
    assert len(ops) == 3 * len(models)  # every config is distinct
    assert all(r["latency_us"] > 0 and r["threads"] == 1 for r in ops)
    # samples kept (quiet ones, or all), on several interpreter instances; small ops are timed
    # in batches of many invokes; the invoke overhead re-calibrated by the gate's probe
    assert all(r["latency_median_us"] > 0 and r["repeats"] >= 1 for r in ops)
    assert all(r["repeats"] >= 3 and r["instances"] >= 1 for r in ops)
    assert all(r["overhead_us"] > 0 and r["method"].startswith("min-") for r in ops)
    assert max(r["batch"] for r in ops) > 1 and all(r["batch"] >= 1 for r in ops)
    assert {r["model"] for r in recs if r["type"] == "model"} == {p.stem for p in models}
    # every model record is normalized by the speed beside it, the run's first one too
    assert all(r["speed"] for r in recs if r["type"] == "model")
    capsys.readouterr()
    # resuming measures nothing new
    assert main(["measure", *map(str, models), "--out", str(out), "--quiet"]) == 0
    assert len(read_records(out)) == len(recs)
    # a duplicate model reuses every op configuration
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert stats["measured"] == 0

    model_path = tmp_path / "model.json"
    assert main(["fit", str(out), "-o", str(model_path), "--eval", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"within_10pct", "mape", "spearman", "model_error_median"}
    assert result["within_10pct"] == 1.0  # every config is in the lookup table
    # (net figures subtract each record's own overhead, re-calibrated through the run: a tiny
    # op's net latency can move by more than 10 % with it, so within_10pct_net is not 1 here)
    doc = json.loads(model_path.read_text())
    assert doc["format"] == "tacopt-learned"

    from tacopt.fusion.tflite.reader import read_tflite

    model = get_cost_model(str(model_path))
    G = read_tflite(models[1])  # m64, as measured
    # measured configuration: exact lookup
    fc = next(r for r in ops if r["kind"] == "FULLY_CONNECTED" and r["model"] == "m64")
    # (op_cost is the latency inside a model: net of the invoke overhead, times a fitted scale)
    assert doc["in_model_scale"] > 0 and "family_trees" in doc  # few ops: maybe no family has trees
    # (in the model's units: the record's latency over its kernel family's index against the
    # anchor, the references pooled over the run, as `fit` normalizes)
    norm = normalize_records(read_records(out), doc["anchor_speed"])
    fc_us = next(r for r in norm if r.get("key") == fc["key"])["latency_us"]
    net = max(fc_us - doc["overhead_us"], doc["net_floor_us"])
    assert model.op_cost(G, "fully_connected_1", "CPU", "FLOAT") == pytest.approx(
        doc["in_model_scale"] * net + doc["per_op_us"], rel=1e-3
    )
    # unseen size: regression, finite and positive
    assert 0 < model.op_cost(small_model(300), "fully_connected_1", "CPU", "FLOAT") < 1e6
    with pytest.raises(CostModelError, match="unknown device 'GPU'"):
        model.op_cost(G, "add_0", "GPU", "FLOAT")


def test_latency_is_the_fastest_sample_and_the_gate_marks_slow_ones() -> None:
    """An op's latency is its fastest sample over every instance (contention only ever slows a
    sample); samples whose probe reads show the machine slow are counted as rejected and left
    out of the median (no real timing here: the samples are set by hand)."""

    cfg = MeasureConfig(probe_reads=1, calibrate_s=0.0)
    gate = Gate(cfg)
    gate.reads[:] = [1.0] * 20  # the fast state: probe reads of 1 us
    gate._ref_at = 0
    assert gate.reference() == 1.0 and gate.is_quiet(1.15) and not gate.is_quiet(1.3)
    assert gate.overhead_us() == 1.0
    t = Timer(serialize_tflite(neg_graph()), None, cfg, seed=0, samples=6)
    t.cpu = [5.0, 4.0, 9.0, 3.0, 7.0, 6.0]
    t.wall = [x + 1 for x in t.cpu]
    t.probes = [1.0, 1.0, 1.0, 2.0, 1.0, 1.0]  # sample 3 (the fastest) taken in a slow episode
    t.instance = [0, 0, 1, 1, 2, 2]
    timing = t.timing(gate)
    assert (timing.cpu_us, timing.wall_us) == (3.0, 4.0)  # the fastest, slow episode or not
    assert timing.cpu_median_us == 6.0  # median of the quiet samples 5, 4, 9, 7, 6
    assert (timing.samples, timing.rejected, timing.quiet) == (6, 1, True)
    t.probes = [2.0] * 6  # nothing quiet: the median is over every sample, flagged
    timing = t.timing(gate)
    assert (timing.cpu_us, timing.cpu_median_us, timing.quiet, timing.rejected) == (
        3.0, 5.5, False, 6,
    )  # fmt: skip


class _SlowEpisode:
    """A gate whose probe reads 2 to 6 show a slow episode, the others the fast state (no real
    timing): a sample counts when the reads before and after it are both fast."""

    def __init__(self) -> None:
        self.n, self.last, self.waits = 0, 1.0, 0

    def read(self) -> float:
        self.n += 1
        self.last = 2.0 if 2 <= self.n <= 6 else 1.0
        return self.last

    def is_quiet(self, probe_us: float) -> bool:
        return probe_us <= 1.15

    def wait(self, max_s: float) -> bool:
        self.waits += 1
        return True


@pytest.mark.parametrize(("target", "waits"), [(3, 0), (6, 3), (1, 0)])
def test_top_up_until_the_op_has_its_quiet_samples(target, waits) -> None:
    """9 samples over 3 instances; the episode leaves 3 of them quiet. An op with fewer quiet
    samples than ``quiet_target`` is sampled again, each time after waiting for quiet."""

    cfg = MeasureConfig(samples=9, rounds=3, quiet_target=target, max_time_s=10.0)
    gate = _SlowEpisode()
    t = Timer(serialize_tflite(neg_graph()), None, cfg, seed=0, samples=9)
    run_pass([t], cfg, gate)  # type: ignore[arg-type]
    assert t.instances == 3 and sorted(set(t.instance)) == [0, 1, 2]
    assert len(t.quiet(gate)) == max(3, target)  # type: ignore[arg-type]
    assert gate.waits == waits and len(t.cpu) == 9 + waits
    assert cfg.knobs()["method"].endswith(f"/q{target}")


def test_unseen_kind_falls_back_or_raises() -> None:
    recs = [
        {
            "type": "op",
            "key": f"k{i}",
            "kind": "ADD",
            "inference_type": "FLOAT",
            "flops": 10.0**i,
            "bytes": 10.0**i,
            "outputs": [[[10**i]]],
            "latency_us": 2 + i,
            "overhead_us": 1.0,
            "model": "m",
        }
        for i in range(6)
    ]
    doc = fit(recs)
    feats = {
        "kind": "SOFTMAX",
        "inference_type": "FLOAT",
        "flops": 100.0,
        "bytes": 100.0,
        "outputs": [[[100]]],
    }
    assert LearnedCostModel(doc).predict(feats).source == "fallback"
    with pytest.raises(CostModelError, match="SOFTMAX was never measured"):
        LearnedCostModel(doc, strict=True).predict(feats)
    assert np.isfinite(model_accuracy(LearnedCostModel(doc), recs)["spearman"])


def test_data_movement_ops_cost_bytes_and_runs() -> None:
    """Unseen SLICE / PAD configurations get a fixed cost + per byte + per run; a kind asked far
    outside the bytes it was fitted on, or with too few records, uses the pooled fit."""

    def rec(kind: str, cin: int, side: int, pad: int, i: int) -> dict:
        t = [[1, side, side, cin], "float32", False, False]
        o = [[1, side + pad, side + pad, cin], "float32", False, False]
        elems, runs = (side + pad) ** 2 * cin, (side + pad) ** 2 if pad else 1
        net = 0.2 + 1e-5 * 4 * (side**2 * cin + elems) + 0.01 * runs  # bytes in + out
        return {
            "type": "op",
            "key": f"{kind}{i}",
            "kind": kind,
            "inference_type": "FLOAT",
            "flops": 0.0,
            "bytes": 8.0 * elems,
            "inputs": [t],
            "outputs": [o],
            "options": {},
            "latency_us": 0.4 + net,
            "overhead_us": 0.4,
            "model": "m",
        }

    recs = [rec("PAD", c, s, 2, i) for i, (c, s) in enumerate([(3, 8), (64, 8), (3, 32), (32, 16)])]
    recs += [rec("RESHAPE", 16, s, 0, 10 + s) for s in (4, 8, 16)]
    recs += [rec("SLICE", 4, 4, 0, 20)]
    model = LearnedCostModel(json.loads(json.dumps(fit(recs))))
    unseen = rec("PAD", 16, 24, 2, 99)
    p = model.predict(unseen)
    assert p.source == "movement"
    assert abs(p.latency_us - unseen["latency_us"]) < 0.02 * unseen["latency_us"]
    assert "SLICE|FLOAT" not in model.movement  # one record: the pooled fit answers
    assert model.predict(rec("SLICE", 8, 8, 0, 98)).source == "movement"
    assert model.predict(rec("PAD", 16, 24, 2, 1), key="PAD1").source == "exact"


def test_bad_inputs(tmp_path: Path, capsys) -> None:
    assert main(["measure", str(tmp_path / "nope.tflite"), "--out", str(tmp_path / "r")]) == 2
    assert "does not exist" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["fit", str(empty), "-o", str(tmp_path / "m.json")]) == 2
    assert "no op records" in capsys.readouterr().err
    with pytest.raises(CostModelError, match="format is not"):
        LearnedCostModel({"format": "x"})


def test_trees_fit_residuals_and_roundtrip_json() -> None:
    from tacopt.cost_models.learned.fitting.trees import (
        LIGHTGBM_PARAMS,
        fit_lightgbm,
        predict_trees,
    )

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200, 3))
    y = np.where(X[:, 0] > 0.5, 2.0, 0.0) + X[:, 1]
    base = X[:, 1]  # the base already explains feature 1; trees must learn the step
    params = {**LIGHTGBM_PARAMS, "num_boost_round": 100, "learning_rate": 0.2}
    trees = fit_lightgbm(X, y, base, params)
    again = json.loads(json.dumps(trees))
    err = np.abs(base + predict_trees(again, X) - y)
    assert np.median(err) < 0.1
    assert trees == fit_lightgbm(X, y, base, params)  # deterministic


def test_version1_model_files_still_load() -> None:
    doc = {
        "format": "tacopt-learned",
        "version": 1,
        "table": {"k": 4.0},
        "fits": {"*": {"w": [0.0, 0.0, 0.0, 0.0]}},
        "overhead_us": 1.0,
    }
    m = LearnedCostModel(doc)
    assert m.predict({"kind": "ADD"}, key="k").latency_us == 5.0  # net 4 + overhead
    assert m.predict({"kind": "ADD", "outputs": []}).source == "fallback"


def test_retype_op_quantizes_and_dequantizes() -> None:
    from tacopt.cost_models.learned.measurement.retype import RetypeError, retype_op
    from tacopt.cost_models.ops import inference_type

    S = fill_constants(cut_op(small_model(8), "fully_connected_1"), seed=0)
    Q = retype_op(S, "QUANTIZED_INT8")
    t = Q.graph["tensors"]
    assert inference_type(Q, "fully_connected_1") == "QUANTIZED_INT8"
    assert t["w"].dtype == "int8" and len(t["w"].quantization.scale) == 8  # per output channel
    w = np.asarray(t["w"].data(), np.float64) * np.asarray(t["w"].quantization.scale)[:, None]
    assert np.allclose(w, S.graph["tensors"]["w"].data(), atol=0.01)  # weights survive
    F = retype_op(Q, "FLOAT")
    assert inference_type(F, "fully_connected_1") == "FLOAT"
    assert np.allclose(F.graph["tensors"]["w"].data(), w, atol=1e-6)
    tanh = fill_constants(cut_op(small_model(8), "tanh_2"), seed=0)
    out = retype_op(tanh, "QUANTIZED_INT8").graph["tensors"]["y"].quantization
    assert out.scale == (1 / 128,) and out.zero_point == (0,)  # what TFLite's int8 TANH requires
    with pytest.raises(RetypeError, match="same op in every type"):
        retype_op(retype_op(tanh, "QUANTIZED_INT8"), "QUANTIZED_INT8")
    # a constant class token concatenated to the tokens shares their quantization (XNNPACK
    # failed to prepare the int8 concatenation of two scales)
    b = GraphBuilder("cls")
    token = b.const(np.full((1, 1, 8), 0.5, np.float32))
    G = b.build(outputs=[b.op("CONCATENATION", token, b.input("x", (1, 4, 8)), axis=1)])
    Q = retype_op(G, "QUANTIZED_INT8")
    op = Q.nodes[next(iter(Q))]["op"]
    qs = {Q.graph["tensors"][n].quantization for n in (*op.inputs, *op.outputs)}
    assert len(qs) == 1


def test_an_lstm_retyped_to_int8_runs_the_kernels_integer_path(tmp_path: Path) -> None:
    # the learn never measured an int8 LSTM, and priced the zoo's two int8 text models at 0.3x
    # (2.5 ms where the float op runs 0.64 ms): retype gives the sampled LSTMs their int8 form
    from ai_edge_litert.interpreter import Interpreter

    from tacopt.cost_models.learned.measurement.retype import RetypeError, retype_op
    from tacopt.cost_models.learned.measurement.speed import lstm_graph
    from tacopt.cost_models.ops import inference_type
    from tacopt.fusion.tflite.writer import write_tflite

    rng = np.random.default_rng(0)
    S = lstm_graph("lstm", 16, 1, 32, 32, time_major=False, rng=rng)
    (node,) = S.nodes
    Q = retype_op(S, "QUANTIZED_INT8", seed=3)
    validate_graph(Q)
    op, t = Q.nodes[node]["op"], Q.graph["tensors"]
    assert inference_type(Q, node) == "QUANTIZED_INT8"
    assert [t[n].dtype for n in op.intermediates] == ["float32"] * 4 + ["int8"]
    assert t[op.inputs[19]].dtype == "int16" and t[op.inputs[19]].is_variable  # cell state
    assert {t[op.inputs[i]].dtype for i in range(1, 9)} == {"int8"}
    w_scale = t[op.inputs[1]].quantization.scale[0]
    assert t[op.inputs[12]].quantization.scale[0] == pytest.approx(
        t[op.inputs[0]].quantization.scale[0] * w_scale  # gate bias: input x weight scale
    )
    it = Interpreter(model_path=str(write_tflite(Q, tmp_path / "q.tflite")))
    it.allocate_tensors()
    x = it.get_input_details()[0]
    it.set_tensor(x["index"], rng.integers(-128, 128, x["shape"]).astype(np.int8))
    it.invoke()
    y = it.get_tensor(it.get_output_details()[0]["index"])
    assert y.dtype == np.int8 and len(np.unique(y)) > 8  # it computed something
    assert inference_type(retype_op(Q, "FLOAT"), node) == "FLOAT"  # and back
    assert not retype_op(Q, "FLOAT").nodes[node]["op"].intermediates
    peep = lstm_graph("lstm", 4, 1, 8, 8, time_major=False, rng=rng)
    (pnode,) = peep.nodes
    p = peep.nodes[pnode]["op"]
    peep.nodes[pnode]["op"] = type(p)(p.name, p.kind, (*p.inputs[:9], p.inputs[1], *p.inputs[10:]),
                                      p.outputs, p.options)  # fmt: skip
    with pytest.raises(RetypeError, match="only without peepholes"):
        retype_op(peep, "QUANTIZED_INT8")


def test_measure_types(models: list[Path], tmp_path: Path, capsys) -> None:
    out = tmp_path / "rec.jsonl"
    argv = ["measure", str(models[0]), "--out", str(out), "--quiet", "--types", "float32,int8"]
    assert main(argv) == 0
    recs = read_records(out)
    ops = [r for r in recs if r["type"] == "op"]
    retyped = [r for r in ops if r.get("retyped_from") == "FLOAT"]
    assert {r["kind"] for r in retyped} == {"ADD", "FULLY_CONNECTED", "TANH"}
    assert {r["inference_type"] for r in retyped} == {"QUANTIZED_INT8"}
    (model,) = [r for r in recs if r["type"] == "model"]
    assert {k for k, _ in model["variants"]} == {r["key"] for r in retyped}
    assert {k for k, _ in model["ops"]}.isdisjoint(k for k, _ in model["variants"])
    capsys.readouterr()
    assert main([*argv[:-1], "int4"]) == 2
    assert "unknown type 'int4'" in capsys.readouterr().err


def test_passes_split_the_samples_and_park_between() -> None:
    """With 2 passes an op gets half its samples per pass, on new instances each time; parked
    between passes it holds no interpreter, and its inputs are drawn again identically."""

    cfg = MeasureConfig(samples=8, rounds=4, quiet_target=1, max_time_s=10.0, passes=2)
    gate = _SlowEpisode()
    t = Timer(serialize_tflite(neg_graph()), None, cfg, seed=3, samples=8, passes=2)
    first = [v.copy() for v in t.values]
    run_pass([t], cfg, gate)  # type: ignore[arg-type]
    assert (len(t.cpu), t.instances, t.done) == (4, 2, False)
    t.park()
    assert not t.live and not t.values
    with pytest.raises(RuntimeError, match="parked"):
        t.invoke()
    run_pass([t], cfg, gate)  # type: ignore[arg-type]
    assert (len(t.cpu), t.instances, t.done) == (8, 4, True)
    assert sorted(set(t.instance)) == [0, 1, 2, 3]
    assert all((a == b).all() for a, b in zip(first, t.values, strict=True))
    assert cfg.knobs()["method"].endswith("/p2")


def test_queue_writes_an_op_after_its_last_pass_and_parks_it_for_the_gap(tmp_path) -> None:
    """An op's record is written once its second pass is done; a parked op waits for
    ``pass_gap_s`` before its next pass unless the queue is drained."""
    import io

    from tacopt.cost_models.learned.measurement.queue import OpQueue
    from tacopt.cost_models.learned.measurement.speed import SpeedTracker

    cfg = MeasureConfig(samples=4, rounds=2, quiet_target=1, passes=2, pass_gap_s=3600, chunk=4)
    f, stats, keys = io.StringIO(), {"measured": 0, "skipped": 0}, []
    q = OpQueue(f, cfg, _SlowEpisode(), SpeedTracker(), lambda: {"device": "d"}, stats)  # type: ignore[arg-type]
    q.on_written(keys.append)
    model = serialize_tflite(neg_graph())
    for i in range(2):
        q.submit({"key": f"k{i}", "model": "m", "op": f"neg_{i}"}, {"kind": "NEG"}, model)
    assert f.getvalue() == "" and len(q.parked) == 2 and not q.fresh  # first pass done
    q.step()
    assert f.getvalue() == "" and len(q.parked) == 2  # the gap has not passed
    q.submit({"key": "bad", "model": "m", "op": "x"}, {"kind": "NEG"}, b"not a model")
    q.drain()
    records = [json.loads(line) for line in f.getvalue().splitlines()]
    assert [r["type"] for r in records] == ["skip", "op", "op"] and keys == ["bad", "k0", "k1"]
    assert all(r["repeats"] == 4 and r["instances"] == 2 for r in records[1:])
    assert stats == {"measured": 2, "skipped": 1} and len(q) == 0


def test_ops_of_a_positive_domain_are_timed_on_positive_inputs() -> None:
    """LiteRT's builtin LOG, SQRT, RSQRT and POW take a slow path on the NaN a negative input
    gives (LOG 3x here), which a real model never feeds them: their single-op models get
    positive inputs, the other kinds U(-1, 1) as before (real LiteRT interpreters)."""
    import io

    from tacopt.cost_models.learned.measurement.queue import OpQueue
    from tacopt.cost_models.learned.measurement.speed import SpeedTracker

    #  x -> [LOG] -> y
    ts = [Tensor("x", (1, 64), "float32"), Tensor("y", (1, 64), "float32")]
    log = serialize_tflite(make_graph("l", ts, [Op("log_0", "LOG", ("x",), ("y",))], ["x"], ["y"]))
    cfg = MeasureConfig(samples=2, rounds=1, quiet_target=1, passes=2, pass_gap_s=3600, chunk=4)
    stats = {"measured": 0, "skipped": 0}
    q = OpQueue(io.StringIO(), cfg, _SlowEpisode(), SpeedTracker(), lambda: {"device": "d"}, stats)  # type: ignore[arg-type]
    q.submit({"key": "k0", "model": "m", "op": "log_0"}, {"kind": "LOG"}, log)
    neg = serialize_tflite(neg_graph())
    q.submit({"key": "k1", "model": "m", "op": "neg_0"}, {"kind": "NEG"}, neg)
    assert [op.timer.positive for op in q.parked if op.timer] == [True, False]
    positive = Timer(log, None, cfg, seed=0, samples=1, positive=True).values[0]
    as_before = Timer(log, None, cfg, seed=0, samples=1).values[0]
    assert positive.min() >= 0 and as_before.min() < 0
    assert np.array_equal(positive, np.abs(as_before))  # the same draws, sign dropped


def test_queue_past_its_deadline_writes_parked_ops_as_they_are() -> None:
    """Past the deadline a parked op is written with its one pass, and a new one gets one pass
    (a partial chunk) and is written too: a tiny budget still measures what it started."""
    import io

    from tacopt.cost_models.learned.measurement.queue import OpQueue
    from tacopt.cost_models.learned.measurement.speed import SpeedTracker

    cfg = MeasureConfig(samples=4, rounds=2, quiet_target=1, passes=2, pass_gap_s=3600, chunk=2)
    f, stats = io.StringIO(), {"measured": 0, "skipped": 0}
    q = OpQueue(f, cfg, _SlowEpisode(), SpeedTracker(), lambda: {"device": "d"}, stats)  # type: ignore[arg-type]
    model = serialize_tflite(neg_graph())
    q.submit({"key": "k0", "model": "m", "op": "neg_0"}, {"kind": "NEG"}, model)  # one pass
    q.fresh.append(type(q.parked[0])({"key": "k1"}, {"kind": "NEG"}, model))  # never timed
    q.drain(deadline=0.0)
    records = [json.loads(line) for line in f.getvalue().splitlines()]
    assert [(r["key"], r["repeats"], r["instances"]) for r in records] == [
        ("k0", 2, 1),
        ("k1", 2, 1),
    ]
    assert len(q) == 0 and stats["measured"] == 2


class _NeverQuiet(_SlowEpisode):
    """A gate whose every probe read shows a slow episode."""

    def read(self) -> float:
        self.last = 2.0
        return self.last


def test_references_timed_in_a_slow_episode_do_not_move_the_speed() -> None:
    """A chunk whose references have no quiet sample adds nothing to the speed records carry,
    unless a reference has no read yet (then records still get a speed)."""
    import io

    from tacopt.cost_models.learned.measurement.queue import OpQueue
    from tacopt.cost_models.learned.measurement.speed import SpeedTracker

    cfg = MeasureConfig(samples=2, rounds=1, quiet_target=1, retry_rounds=0, defer=0, chunk=1)
    model = serialize_tflite(neg_graph())
    tracker = SpeedTracker()
    stats = {"measured": 0, "skipped": 0}
    q = OpQueue(io.StringIO(), cfg, _NeverQuiet(), tracker, lambda: {"device": "d"}, stats)  # type: ignore[arg-type]
    q.submit({"key": "k0", "model": "m", "op": "neg_0"}, {"kind": "NEG"}, model)
    first = {n: list(v) for n, v in tracker.history.items()}
    from tacopt.cost_models.learned.measurement.speed import REFERENCES

    assert len(first) == len(REFERENCES) and all(len(v) == 1 for v in first.values())
    q.submit({"key": "k1", "model": "m", "op": "neg_1"}, {"kind": "NEG"}, model)
    assert tracker.history == first and stats["measured"] == 2


def test_a_pass_without_samples_still_tops_up_on_a_new_instance() -> None:
    """One sample split over two passes: the second pass draws none, and the top-up for a quiet
    sample builds a new instance instead of invoking the parked one."""

    cfg = MeasureConfig(samples=1, rounds=2, quiet_target=1, passes=2, max_wait_s=0.5)
    gate = _NeverQuiet()
    t = Timer(serialize_tflite(neg_graph()), None, cfg, seed=0, samples=1, passes=2)
    run_pass([t], cfg, gate)  # type: ignore[arg-type]
    t.park()
    run_pass([t], cfg, gate)  # type: ignore[arg-type]
    assert t.done and t.live and len(t.cpu) > 1 and gate.waits > 0


def test_a_whole_model_is_timed_as_priced_a_fused_lstm_not_its_while_loop(tmp_path: Path) -> None:
    """Keras 3 stores an LSTM as a WHILE loop; the partitioner prices (and measure cuts) the
    fused UNIDIRECTIONAL_SEQUENCE_LSTM, and the whole model is timed as that graph too."""
    from tacopt.cost_models.learned.measurement.measure import measure_models
    from tacopt.cost_models.learned.measurement.timing import MeasureConfig
    from tacopt.fusion.tflite.reader import read_tflite

    path = Path(__file__).parents[1] / "fusion" / "models" / "k3_lstm_seq_float32.tflite"
    assert any(op.kind == "WHILE" for op in _ops(read_tflite(path)))  # as stored
    out = tmp_path / "rec.jsonl"
    measure_models([path], out, MeasureConfig(samples=2, min_samples=1, rounds=1, passes=1))
    recs = read_records(out)
    (model,) = [r for r in recs if r["type"] == "model"]
    kinds = {r["key"]: r["kind"] for r in recs if r["type"] in ("op", "skip")}
    assert model["timed"] == "priced" and model["latency_us"] > 0
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in {kinds[k] for k, _ in model["ops"]}
    assert "WHILE" not in {kinds[k] for k, _ in model["ops"]} and model["loop_trips"] == 0


def _ops(G: object) -> list[Op]:
    return [d["op"] for _, d in G.nodes(data=True) if "op" in d]  # type: ignore[attr-defined]


def test_a_copy_beyond_the_cache_gets_its_own_rate_per_byte() -> None:
    """RESHAPE copies at 100 GB/s up to 512 KiB moved and 40 GB/s beyond (LiteRT's builtin
    kernels here: ~95 and ~50): the fit finds the knee and prices a copy of 3 MB within 5 %, where
    one rate per byte, pulled by the many small copies, priced it far too fast."""
    from tacopt.cost_models.learned.fitting.movement import movement_fits, predict_movement

    def rec(n: int) -> dict:  # n float32 elements read and written
        moved = 8.0 * n
        net = 0.1 + min(moved, 2**19) / 1e5 + max(moved - 2**19, 0.0) / 4e4
        t = [[1, n], "float32", False, False]
        return {"kind": "RESHAPE", "inference_type": "FLOAT", "inputs": [t],
                "outputs": [[[n, 1], "float32", False, False]], "options": {},
                "latency_us": 0.5 + net, "overhead_us": 0.5}  # fmt: skip

    small = [rec(n) for n in (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)]
    fits = movement_fits([*small, rec(2**17), rec(2**18)])
    assert fits["RESHAPE|FLOAT"][5] == 2**19  # the knee
    big = rec(400_000)
    ratio = predict_movement(fits, big) / (big["latency_us"] - 0.5)  # type: ignore[operator]
    assert abs(ratio - 1) < 0.05, ratio
    few = movement_fits([small[0], small[4], rec(2**17), rec(2**18), big])
    assert few["RESHAPE|FLOAT"][5] == 0  # too few records for a knee: one rate per byte


def test_copies_of_about_nothing_do_not_set_the_rate_per_byte() -> None:
    """Slices whose net latency is noise around zero (below the invoke overhead's spread) weighed
    relatively pulled the per-byte rate down and priced big copies at 0.6x: with the weight
    floor a 2 MB slice is priced within 10 %."""
    from tacopt.cost_models.learned.fitting.movement import movement_fits, predict_movement

    def rec(rows: int, cols: int, net: float) -> dict:
        t = [[1, rows, cols + 8], "float32", False, False]
        return {"kind": "STRIDED_SLICE", "inference_type": "FLOAT", "inputs": [t],
                "outputs": [[[1, rows, cols], "float32", False, False]], "options": {},
                "latency_us": 0.45 + net, "overhead_us": 0.45}  # fmt: skip

    rate = 0.011e-3  # us per byte moved (read + written)
    noise = [rec(r, c, 0.0) for r, c in ((2, 64), (4, 96), (8, 128), (16, 64), (8, 256))]
    real = [rec(r, 512, 0.02 + rate * 8 * r * 512) for r in (16, 64, 128, 256)]
    fits = movement_fits([*noise, *real])
    big = rec(512, 1024, 0.02 + rate * 8 * 512 * 1024)
    ratio = predict_movement(fits, big) / (big["latency_us"] - 0.45)  # type: ignore[operator]
    assert abs(ratio - 1) < 0.1, ratio


def _adds() -> list[dict]:
    """Five ADD records, enough for :func:`fit` to write a model file of the current version."""
    return [{"type": "op", "key": f"k{i}", "kind": "ADD", "inference_type": "FLOAT",
             "flops": 10.0 ** i, "bytes": 12.0 * 10 ** i, "outputs": [[[10 ** i]]],
             "latency_us": 1 + 10.0 ** i / 1000, "overhead_us": 1.0}
            for i in range(2, 7)]  # fmt: skip


def test_a_slice_copies_its_cut_dimension_in_runs_and_older_models_count_as_before() -> None:
    """A slice cutting C from 288 to 216 copies one run of 216 per pixel (version 10); a model
    file of version 9 keeps counting what it was fitted with (one run per element)."""
    from tacopt.cost_models.learned.fitting.features import copy_runs
    from tacopt.cost_models.learned.fitting.movement import predict_movement

    t = lambda *s: [list(s), "float32", False, False]  # noqa: E731
    cut = {"kind": "STRIDED_SLICE", "inference_type": "FLOAT", "options": {},
           "inputs": [t(1, 38, 38, 288)], "outputs": [t(1, 38, 38, 216)]}  # fmt: skip
    assert copy_runs(cut) == 38 * 38
    assert copy_runs(cut, slice_spans=False) == 38 * 38 * 216
    assert copy_runs({**cut, "kind": "PAD"}) == 38 * 38 * 216  # not a slice: as before
    fits = {"STRIDED_SLICE|FLOAT": [0.0, 0.0, 0.001, 1.0, 1e9]}  # priced per run only
    assert predict_movement(fits, cut) == pytest.approx(1.444)
    assert predict_movement(fits, cut, slice_spans=False) == pytest.approx(311.904)
    doc = fit(_adds())
    assert LearnedCostModel(doc).slice_spans
    assert not LearnedCostModel({**doc, "version": 9}).slice_spans


def test_a_channel_pad_copies_one_run_per_pixel_and_older_models_count_as_before() -> None:
    """A PAD widening C from 24 to 48 (a detector's shortcut) copies one run of C per pixel, as
    a pad of H and W does (version 11); a model file of version 10 keeps counting one run per
    element, what it was fitted with."""
    from tacopt.cost_models.learned.fitting.features import copy_runs
    from tacopt.cost_models.learned.fitting.movement import predict_movement

    t = lambda *s: [list(s), "float32", False, False]  # noqa: E731
    widen = {"kind": "PAD", "inference_type": "FLOAT", "options": {},
             "inputs": [t(1, 32, 32, 24), [[4, 2], "int32", True, False]],
             "outputs": [t(1, 32, 32, 48)]}  # fmt: skip
    spatial = {**widen, "outputs": [t(1, 34, 34, 24)]}
    assert copy_runs(widen) == 32 * 32 == copy_runs({**widen, "kind": "PADV2"})
    assert copy_runs(widen, pad_pixels=False) == 32 * 32 * 48
    assert copy_runs(spatial) == 34 * 34 == copy_runs(spatial, pad_pixels=False)
    assert copy_runs({**widen, "kind": "TRANSPOSE"}) == 32 * 32 * 48  # not a pad: as before
    fits = {"PAD|FLOAT": [0.0, 0.0, 0.001, 1.0, 1e9]}  # priced per run only
    assert predict_movement(fits, widen) == pytest.approx(1.024)
    assert predict_movement(fits, widen, pad_pixels=False) == pytest.approx(49.152)
    doc = fit(_adds())
    assert LearnedCostModel(doc).pad_pixels and LearnedCostModel(doc).gemm_rows
    assert not LearnedCostModel({**doc, "version": 10}).pad_pixels
    assert not LearnedCostModel({**doc, "version": 10}).gemm_rows


def test_op_cost_scales_by_how_far_the_models_data_spill() -> None:
    # inside a model whose ops move more bytes than the L2 holds, an op costs more than in one
    # that stays in it (whole_model.spill_level); a model file without a spill prices as before
    from tacopt.cost_models.learned.fitting.model import DEFAULT_MODEL
    from tacopt.cost_models.learned.measurement.records import spill_level
    from tacopt.cost_models.learned.measurement.singleop import op_features
    from tacopt.cost_models.model_file import read_model_doc

    doc = read_model_doc(DEFAULT_MODEL)
    plain = LearnedCostModel({**doc, "in_model_spill": 0.0})
    spills = LearnedCostModel({**doc, "in_model_spill": 0.5, "cache_bytes": [2**10, 2**20]})
    scale, per_op = doc["in_model_scale"], doc["per_op_us"]
    for n in (8, 1024):  # 0.2 KB of data, then 4 MB of weights
        G = small_model(n)
        moved = sum(op_features(G, v, root=G)["bytes"] for v in G.nodes)
        level = spill_level(moved, (2**10, 2**20))
        assert level == (0.0 if n == 8 else 1.0)
        for v in G.nodes:
            base = plain.op_cost(G, v, "CPU", "FLOAT") - per_op
            assert spills.op_cost(G, v, "CPU", "FLOAT") - per_op == pytest.approx(
                base * (scale + 0.5 * level) / scale
            )

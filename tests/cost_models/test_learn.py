"""`tacopt learn` (measure + fit in a time budget, resumable) and few-sample adaptation to
another device (`--from`, cost_models/learned/sampling/adapt.py), issue 22."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tacopt.cost_models.cli import learn_run as cli_learn
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel, correction_of
from tacopt.cost_models.learned.measurement.measure import Meter
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.learned.measurement.speed import SpeedTracker
from tacopt.cost_models.learned.measurement.timing import Gate, MeasureConfig
from tacopt.cost_models.learned.sampling.adapt import adapt, corrections
from tacopt.cost_models.model_file import read_model_doc
from tacopt.partitioner.cli import main

FAST = MeasureConfig(
    samples=3, rounds=1, probe_reads=5, calibrate_s=0.0, max_wait_s=0.5, sample_s=0.0005
)


def _records(factor: float, kind: str = "ADD", speed: float = 10.0) -> list[dict]:
    """Ops of 10^2..10^6 elements whose net latency is ``factor`` x 10^i / 1000 us."""
    return [
        {"type": "op", "key": f"{kind}{i}", "kind": kind, "inference_type": "FLOAT",
         "model": "m", "flops": 10.0**i, "bytes": 12.0 * 10**i,
         "outputs": [[[10**i], "float32"]], "options": {},
         "inputs": [[[10**i], "float32"], [[10**i], "float32"]],
         "latency_us": 0.5 + factor * 10.0**i / 1000, "overhead_us": 0.5,
         "speed": {"add": speed, "conv": 10.0}}
        for i in range(2, 7)
    ]  # fmt: skip


def test_adapt_corrects_a_kind_and_looks_up_what_it_measured() -> None:
    base = fit(_records(1.0) + _records(1.0, "MUL"))
    # the new device runs ADD 2x slower at the same reference speed; MUL as before
    new = [{**r, "key": r["key"] + "n"} for r in _records(2.0)[:3]] + _records(1.0, "MUL")[:3]
    doc = adapt(base, new, trees=False)
    model = LearnedCostModel(doc)
    c = doc["adapted"]["corrections"]
    assert c["ADD|FLOAT"] > 0.3 and abs(c["MUL|FLOAT"]) < c["ADD|FLOAT"]
    # an unmeasured ADD of the new device: closer to 2x than the base says
    probe = _records(2.0)[4]
    got = model.predict(probe).latency_us
    assert abs(math.log(got / probe["latency_us"])) < abs(
        math.log(LearnedCostModel(base).predict(probe).latency_us / probe["latency_us"])
    )
    # what was measured on the new device is looked up as measured
    assert model.predict(new[0], key=new[0]["key"]).source == "exact"
    assert model.predict(new[0], key=new[0]["key"]).latency_us == pytest.approx(
        new[0]["latency_us"]
    )
    assert correction_of(c, "SUB", "FLOAT") == c["family:elementwise"]
    # no fingerprint with caches: the base's stay; a device's own caches replace them
    assert doc["cache_bytes"] == base["cache_bytes"] is None
    fp = {"cpu": "other", "l2_bytes": 2**21, "l3_bytes": 2**26}
    dev = [{"type": "device", "device": "o", "fingerprint": fp}]
    dev += [{**r, "device": "o"} for r in new]
    assert adapt(base, dev, trees=False)["cache_bytes"] == [2**21, 2**26]


def test_the_gemm_kinds_are_corrected_as_one_family() -> None:
    """XNNPACK runs CONV_2D and FULLY_CONNECTED with the same GEMM kernels: the int8
    FULLY_CONNECTEDs sampled 2x slower than the base says do not get a correction of their own
    (their family's), while an elementwise kind does."""

    class Base:
        overhead_us = 0.0

        def predict_net(self, r: dict, key: str | None = None) -> float:
            return 10.0

    def rec(kind: str, itype: str, latency: float, i: int) -> dict:
        return {"type": "op", "kind": kind, "inference_type": itype, "latency_us": latency,
                "overhead_us": 0.0, "key": f"{kind}{i}"}  # fmt: skip

    recs = [rec("FULLY_CONNECTED", "QUANTIZED_INT8", 20.0, i) for i in range(6)]
    recs += [rec("CONV_2D", "QUANTIZED_INT8", 10.0, i) for i in range(12)]
    recs += [rec("ADD", "FLOAT", 20.0, i) for i in range(6)]
    c = corrections(Base(), recs)
    assert c["FULLY_CONNECTED|QUANTIZED_INT8"] == c["CONV_2D|QUANTIZED_INT8"]
    assert c["FULLY_CONNECTED|QUANTIZED_INT8"] == c["family:gemm_int8"]
    # an elementwise kind keeps its own, shrunk towards its family's (itself shrunk to the global)
    assert c["family:elementwise"] < c["ADD|FLOAT"] < math.log(2.0)


def test_adapt_re_anchors_each_family_by_its_reference() -> None:
    """A device whose ADD reference is 3x slower: its ADDs are normalized by 3 first, so no
    correction is left to learn."""
    base = fit(_records(1.0))
    slow = [{**r, "latency_us": 3 * r["latency_us"], "overhead_us": 1.5} for r in
            _records(1.0, speed=30.0)]  # fmt: skip
    doc = adapt(base, slow, trees=False)
    assert abs(doc["adapted"]["corrections"]["ADD|FLOAT"]) < 0.05
    assert doc["speed"]["add"] == 30.0 and doc["anchor_speed"]["add"] == 10.0


def _sized(n: int, i: int, net_us: float, speed: float = 10.0) -> dict:
    t = [[n], "float32"]
    return {"type": "op", "key": f"ADD{i}", "kind": "ADD", "inference_type": "FLOAT",
            "model": "m", "flops": float(n), "bytes": 12.0 * n, "outputs": [t], "options": {},
            "inputs": [t, t], "latency_us": 0.5 + net_us, "overhead_us": 0.5,
            "speed": {"add": speed, "conv": 10.0}}  # fmt: skip


def test_a_guarded_adaptation_keeps_the_base_where_it_cannot_show_it_helps() -> None:
    """Each kernel family is priced the way that did best on a quarter of the ops held out of
    the fit: a device twice as slow on ADDs gets the adaptation; the same device as the base's
    (nothing to gain) keeps the base, as does a family no probe reached."""
    from tacopt.cost_models.learned.sampling.guard import MIN_PROBES, choice_lines, guarded_adapt

    rng = np.random.default_rng(1)
    sizes = [int(v) for v in 10 ** rng.uniform(2, 6, 160)]
    base = fit([_sized(n, i, n / 1000) for i, n in enumerate(sizes)])
    slower = [_sized(n, 1000 + i, 2 * n / 1000) for i, n in enumerate(sizes)]
    doc = guarded_adapt(base, slower, own=False)
    guard, choice = doc["adapted"]["guard"], doc["adapted"]["family_choice"]
    assert guard["elementwise"]["probes"] >= MIN_PROBES
    assert guard["elementwise"]["base"] < guard["elementwise"]["corrected"]
    assert choice["elementwise"] != "base" and choice["gemm_float"] == "base"
    model = LearnedCostModel(doc)  # loads, and prices as it chose
    probe = _sized(50_000, 9999, 50.0)
    assert model.predict(probe).latency_us == pytest.approx(
        model.choosing({"elementwise": choice["elementwise"]}).predict(probe).latency_us
    )
    assert "elementwise: " in choice_lines(doc["adapted"])[0]
    same = [_sized(n, 2000 + i, n / 1000) for i, n in enumerate(sizes)]
    kept = guarded_adapt(base, same, own=False)["adapted"]
    assert kept["family_choice"]["elementwise"] == "base"  # a tie goes to the base
    assert len(kept["table"]) == len(same)  # every measured configuration is looked up


def test_adapt_learns_afresh_the_families_it_corrects_badly(tmp_path: Path, capsys) -> None:
    """A base that knows nothing true of the new device (fitted on timings of pure noise): its
    predictions are no basis to correct, and a model of the device's own records prices it."""
    rng = np.random.default_rng(0)
    sizes = [int(v) for v in 10 ** rng.uniform(2, 6, 500)]
    noise = np.exp(rng.normal(0.0, 1.0, 200))
    base = fit([_sized(n, i, n / 1000 * e) for i, (n, e) in enumerate(zip(sizes, noise))])
    new = [_sized(n, 1000 + i, n / 500) for i, n in enumerate(sizes[200:])]
    train, probe = new[:240], new[240:]
    doc = json.loads(json.dumps(adapt(base, train)))  # plain JSON
    assert doc["adapted"]["own_families"] == ["elementwise"]
    assert doc["adapted"]["own_weights"]["elementwise"] >= 0.75  # the base knows little
    model, corrected = LearnedCostModel(doc), LearnedCostModel(adapt(base, train, own=False))

    def hits(m: LearnedCostModel) -> float:
        ok = [abs(m.predict(r).latency_us / r["latency_us"] - 1) <= 0.1 for r in probe]
        return sum(ok) / len(ok)

    assert hits(model) >= 0.9 and hits(model) > hits(corrected)
    # a family's weight blends the two nets in log space: 1 is the own model's, 0.5 halfway
    own_only, half = (model.with_own_weights({"elementwise": w}) for w in (1.0, 0.5))
    r = probe[0]
    nets = [m.predict(r).latency_us - m.overhead_us for m in (own_only, corrected, half)]
    assert own_only.predict(r).source.startswith("own ")
    assert half.predict(r).source.startswith("blend ")
    assert nets[2] == pytest.approx(math.sqrt(nets[0] * nets[1]), rel=1e-9)
    assert nets[0] != pytest.approx(nets[1], rel=0.05)
    path = tmp_path / "adapted.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["inspect-model", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)["adapted"]
    assert info["own_families"] == ["elementwise"] and info["ops"] == 240
    assert main(["inspect-model", str(path)]) == 0
    weight = doc["adapted"]["own_weights"]["elementwise"]
    out = capsys.readouterr().out
    assert f"a model of this device's own: elementwise (weight {weight:g})" in out
    # a device whose reference runs 2x slower: the own model's net latency is put in the
    # base's units, its invoke overhead is not
    slow = [{**r, "speed": {"add": 20.0, "conv": 10.0}} for r in train]
    model, fast = (
        LearnedCostModel(d).with_own_weights({"elementwise": 1.0}) for d in (adapt(base, slow), doc)
    )
    overhead = model.overhead_us
    assert model.predict(probe[0]).latency_us - overhead == pytest.approx(
        (fast.predict(probe[0]).latency_us - overhead) / 2, rel=0.02
    )


def test_adapt_chooses_the_same_in_parallel_processes() -> None:
    """The own model's folds run in worker processes for large record sets: the adapted model
    is the same as with one process."""
    rng = np.random.default_rng(2)
    sizes = [int(v) for v in 10 ** rng.uniform(2, 6, 500)]
    base = fit([_sized(n, i, n / 1000 * (1 + (i % 7) / 3)) for i, n in enumerate(sizes[:250])])
    new = [_sized(n, 1000 + i, n / 500) for i, n in enumerate(sizes[250:])]
    assert adapt(base, new, workers=2) == adapt(base, new, workers=1)


def test_an_adapted_model_prices_its_own_families_as_its_own_model() -> None:
    """Where the model of the new device's own prices, the adapted model predicts what that
    model predicts, as measured, for ops of every size: its net latency goes to the base's units
    by its family's reference and back, the invoke overhead by the overhead's. (The overhead was
    re-anchored with the net latency: a 0.45 us RESHAPE of LiteRT's builtin kernels, whose
    data-movement reference runs 3.9x slower than XNNPACK's, came out at -0.67 us.)"""
    from tacopt.cost_models.learned.measurement.speed import normalize_records

    def gather(n: int, i: int, net_us: float, move: float) -> dict:
        speed = {"add": 10.0, "conv": 10.0, "move": move}
        return {**_sized(n, i, net_us), "kind": "GATHER", "key": f"G{i}", "speed": speed}

    rng = np.random.default_rng(0)
    sizes = [int(v) for v in 10 ** rng.uniform(1, 6, 500)]
    noise = np.exp(rng.normal(0.0, 1.0, 200))
    base = fit([gather(n, i, n / 1000 * e, 10.0) for i, (n, e) in enumerate(zip(sizes, noise))])
    new = [gather(n, 1000 + i, n / 500, 40.0) for i, n in enumerate(sizes[200:])]
    model = LearnedCostModel(adapt(base, new[:240]))
    assert model.own is not None and model.own_weights == {"movement": 1.0}
    probe = new[240:]
    ours = [model.predict_as_measured(r) for r in normalize_records(probe, model.anchor_speed)]
    own = model.own
    theirs = [own.predict_as_measured(r) for r in normalize_records(probe, own.anchor_speed)]
    assert min(r["latency_us"] for r in probe) < 1.0  # ops the invoke overhead dominates
    assert ours == pytest.approx(theirs, rel=1e-6)


def test_adapt_fits_residual_trees_per_kernel_family() -> None:
    """A family with enough records on the new device gets residual trees of its own, which
    price its ops; a family with few is priced by the trees fitted over every op."""
    from tacopt.cost_models.learned.sampling.adapt import MIN_FAMILY_TREE_OPS

    rng = np.random.default_rng(1)
    sizes = [int(v) for v in 10 ** rng.uniform(2, 6, 300)]
    base = fit([_sized(n, i, n / 1000) for i, n in enumerate(sizes[:200])])
    # the new device: ADDs slower as they grow (a smaller cache), a few PADs 3x slower
    new = [_sized(n, 1000 + i, n / 1000 * (1 + n / 2e5)) for i, n in enumerate(sizes[200:])]
    pads = [{**_sized(n, 2000 + i, 3 * n / 1000), "kind": "PAD", "key": f"PAD{i}"}
            for i, n in enumerate(sizes[:10])]  # fmt: skip
    assert len(new) >= MIN_FAMILY_TREE_OPS > len(pads)
    doc = json.loads(json.dumps(adapt(base, new + pads, own=False)))
    assert set(doc["adapted"]["family_trees"]) == {"elementwise"}
    model = LearnedCostModel(doc)
    shared = LearnedCostModel({**doc, "adapted": {**doc["adapted"], "family_trees": {}}})
    add = _sized(150_000, 9999, 150_000 / 1000 * 1.75)
    assert model.predict(add).latency_us != shared.predict(add).latency_us
    pad = {**_sized(5000, 9998, 15.0), "kind": "PAD", "key": "PADx"}
    assert model.predict(pad).latency_us == shared.predict(pad).latency_us
    assert abs(model.predict(add).latency_us / add["latency_us"] - 1) <= 0.1


def test_fit_leaves_out_ops_timed_with_no_quiet_sample() -> None:
    recs = _records(1.0)
    recs[2] = {**recs[2], "quiet": False, "latency_us": 50 * recs[2]["latency_us"]}
    doc = fit(recs)
    assert doc["trained_on"]["ops"] == 4
    model = LearnedCostModel(doc)
    assert model.predict(recs[2], key=recs[2]["key"]).source != "exact"
    assert model.predict(recs[1], key=recs[1]["key"]).source == "exact"
    # most ops not quiet: the gate's fast state is in doubt, all are kept
    assert fit([{**r, "quiet": False} for r in recs])["trained_on"]["ops"] == 5


def test_corrections_of_nothing_and_bad_input() -> None:
    assert corrections(LearnedCostModel(fit(_records(1.0))), []) == {}
    with pytest.raises(ValueError, match="no op records"):
        adapt(fit(_records(1.0)), [{"type": "op", "latency_us": 1.0}])


def test_learn_measures_fits_resumes_and_adapts(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(cli_learn, "_measure_config", lambda args, adapting: FAST)
    started = []  # every phase and chain of one learn shares one gate and speed tracker
    monkeypatch.setattr(Meter, "start", classmethod(lambda cls, cfg: started.append(cfg) or
                                                    cls(Gate(cfg), SpeedTracker())))  # fmt: skip
    out = tmp_path / "dev.json"
    assert main(["learn", "-o", str(out), "--minutes", "0.1", "--quiet"]) == 0
    assert len(started) == 1
    records = tmp_path / "dev.records.jsonl"
    state = json.loads((tmp_path / "dev.records.jsonl.state.json").read_text())
    assert set(state["spent_s"]) == {p.name for p in cli_learn.FULL_PLAN}
    doc = read_model_doc(out)
    assert doc["learn"]["ops"] > 0 and doc["trained_on"]["ops"] == doc["learn"]["ops"]
    lines = records.read_text().count("\n")
    assert 0 <= doc["learn"]["rejected_share"] <= 1
    # the budget is spent: the same command measures nothing more and fits the same records
    assert main(["learn", "-o", str(out), "--minutes", "0.1", "--quiet"]) == 0
    assert records.read_text().count("\n") == lines
    # records taken while the machine was busy (most samples set aside): it says so, once
    kept = records.read_text()
    busy = [json.loads(line) for line in kept.splitlines()]
    for r in busy:
        if r.get("type") == "op":
            r["rejected"] = int(r["repeats"] * 0.8)
    records.write_text("".join(json.dumps(r) + "\n" for r in busy))
    capsys.readouterr()
    # ... but only when other processes competed for the cores, not of the machine's own rhythm
    monkeypatch.setattr(cli_learn.OtherLoad, "share", lambda self: 0.0)
    assert main(["learn", "-o", str(out), "--minutes", "0.1", "--quiet"]) == 0
    assert "slow episodes" not in capsys.readouterr().err
    assert read_model_doc(out)["learn"]["other_load_share"] == 0.0
    monkeypatch.setattr(cli_learn.OtherLoad, "share", lambda self: 0.45)
    assert main(["learn", "-o", str(out), "--minutes", "0.1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("other processes kept 45% of the cores busy") == 1
    assert read_model_doc(out)["learn"]["rejected_share"] >= cli_learn.BUSY_SHARE
    # an op timed with no quiet sample at all (a slow episode through all its passes) is
    # left out of the fit, and the learn says so
    first = [json.loads(line) for line in kept.splitlines()]
    ops = [r for r in first if r.get("type") == "op"]
    for r in ops:
        r["quiet"] = True
    ops[0]["quiet"] = False
    records.write_text("".join(json.dumps(r) + "\n" for r in first))
    assert main(["learn", "-o", str(out), "--minutes", "0.1", "--quiet"]) == 0
    assert "(1 more left out: no quiet sample)" in capsys.readouterr().out
    assert read_model_doc(out)["learn"]["left_out"] == 1
    assert read_model_doc(out)["learn"]["ops"] == len(ops) - 1
    records.write_text(kept)
    # adapt it, as if to another device
    adapted = tmp_path / "other.json"
    assert main(["learn", "--from", str(out), "-o", str(adapted), "--minutes", "0.05",
                 "--quiet"]) == 0  # fmt: skip
    a = read_model_doc(adapted)
    assert a["adapted"]["ops"] > 0 and a["learn"]["from"] == str(out)
    LearnedCostModel(a)  # loads
    capsys.readouterr()
    # a state file of a full learn is not resumed as an adaptation
    assert main(["learn", "--from", str(out), "-o", str(adapted), "--records", str(records),
                 "--minutes", "0.05", "--quiet"]) == 2  # fmt: skip
    assert "another kind of learn run" in capsys.readouterr().err


def test_learn_interrupted_keeps_what_it_measured_and_says_how_to_go_on(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    from dataclasses import replace

    from tacopt.cost_models.learned.measurement import measure as measure_mod

    # two passes, far apart: every op timed once waits parked when Ctrl-C comes
    cfg = replace(FAST, passes=2, chunk=4, pass_gap_s=1e6)
    monkeypatch.setattr(cli_learn, "_measure_config", lambda args, adapting: cfg)
    seen = [0]
    real = measure_mod.measure_graphs

    def interrupted(items, out, cfg, **kw):
        def progress(done, total, label):
            seen[0] += 1
            if seen[0] == 12:
                raise KeyboardInterrupt

        return real(items, out, cfg, **{**kw, "progress": progress})

    monkeypatch.setattr(cli_learn, "measure_graphs", interrupted)  # as learn_run calls it
    out = tmp_path / "dev.json.gz"
    assert main(["learn", "-o", str(out), "--minutes", "1", "--quiet"]) == 130
    err = capsys.readouterr().err
    assert "stopped in phase generic" in err and "Run the same command again" in err
    records = tmp_path / "dev.records.jsonl"
    ops = [r for r in read_records(records) if r["type"] == "op"]
    assert len(ops) >= 4  # timed once (one pass of two) and kept
    state = json.loads((tmp_path / "dev.records.jsonl.state.json").read_text())
    assert 0 < state["spent_s"]["generic"] < 60 and not out.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--minutes", "0"], "--minutes: must be positive and finite (minutes), got 0"),
        (["--minutes", "inf"], "--minutes: must be positive and finite (minutes), got inf"),
        (["--threads", "two"], "--threads: not a whole number: 'two'"),
        (["--threads", "0"], "--threads: must be at least 1"),
        (["--resolver", "gpu"], "--resolver: unknown op resolver 'gpu'"),
        (["--from", "nope.json"], "nope.json"),
    ],
)
def test_learn_bad_input_is_one_line(tmp_path: Path, capsys, argv, message) -> None:
    out = tmp_path / "m.json"
    assert main(["learn", "-o", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_a_model_record_is_normalized_by_its_ops_families() -> None:
    """A model of a float conv (2x slower family) and an ADD (same speed): its index is their
    time-weighted mix, so the normalized model is the sum of its normalized ops."""
    from tacopt.cost_models.learned.measurement.speed import normalize_records

    sp, anchor = {"conv": 2.0, "add": 1.0}, {"conv": 1.0, "add": 1.0}
    recs = [
        {"type": "op", "key": "a", "kind": "CONV_2D", "inference_type": "FLOAT",
         "latency_us": 20.0, "speed": sp},
        {"type": "op", "key": "b", "kind": "ADD", "inference_type": "FLOAT", "latency_us": 10.0,
         "speed": sp},
        {"type": "model", "model": "m", "ops": [["a", 1], ["b", 1]], "latency_us": 30.0,
         "speed": sp},
    ]  # fmt: skip
    conv, add, model = normalize_records(recs, anchor)
    assert (conv["latency_us"], add["latency_us"]) == (10.0, 10.0)
    assert model["latency_us"] == pytest.approx(20.0) and model["speed_index"] == 1.5
    assert model["memory_index"] == 1.0  # no memory reference read: as before


def test_a_model_past_the_caches_is_normalized_by_the_memory_read_beside_it() -> None:
    """The same model timed while the machine's memory ran 2x slower than at the anchor's read:
    past the L3 it is put back by 2 ** MEMORY_SLOPE; inside the L2 not at all; its ops are
    not touched; a records file without the anchor's read leaves it as it was."""
    from tacopt.cost_models.learned.measurement.speed import MEMORY_SLOPE, normalize_records

    sp, anchor = {"conv": 1.0}, {"conv": 1.0, "dram": 1000.0}
    fp = {"l2_bytes": 2**20, "l3_bytes": 2**25}

    def records(op_bytes: float) -> list[dict]:
        return [
            {"type": "device", "device": "d", "fingerprint": fp},
            {"type": "op", "key": "a", "kind": "CONV_2D", "inference_type": "FLOAT",
             "latency_us": 500.0, "bytes": op_bytes, "inputs": [], "speed": sp, "device": "d"},
            {"type": "model", "model": "m", "ops": [["a", 4]], "latency_us": 2100.0,
             "dram_us": 2000.0, "speed": sp, "device": "d"},
        ]  # fmt: skip

    _, op, big = normalize_records(records(2**24), anchor)  # 4 x 16 MB: past the L3
    assert op["latency_us"] == 500.0
    assert big["memory_index"] == pytest.approx(2**MEMORY_SLOPE)
    assert big["latency_us"] == pytest.approx(2100.0 / 2**MEMORY_SLOPE)
    _, _, small = normalize_records(records(2**17), anchor)  # 512 kB: inside the L2
    assert small["memory_index"] == 1.0 and small["latency_us"] == 2100.0
    _, _, old = normalize_records(records(2**24), {"conv": 1.0})
    assert old["latency_us"] == 2100.0
    for bad in (float("nan"), -5.0, "fast", None):  # a broken read is ignored, as if absent
        recs = records(2**24)
        recs[2]["dram_us"] = bad
        assert normalize_records(recs, anchor)[2]["latency_us"] == 2100.0


@pytest.mark.parametrize("rate", [5.0, 25.0, 60.0])
@pytest.mark.parametrize("per_op", [0.003, 0.025])
def test_rescale_keeps_measuring_and_the_fit_within_the_budget(rate: float, per_op: float) -> None:
    plan = cli_learn.ADAPT_PLAN
    first = cli_learn.plan_seconds(plan, 4)
    spent = {"probe": first["probe"] + 3.0, "adapt": 0.0}  # a chunk ran past its deadline
    ops = int(rate * spent["probe"])
    seconds, fit_s = cli_learn.rescale_seconds(
        plan, first, spent, "probe", budget_s=240, ops=ops, fit_s_per_op=per_op
    )
    assert seconds["probe"] == pytest.approx(spent["probe"])  # done: what it spent
    # the ops the rest will measure at the rate so far, and the fit of all of them, fit the budget
    to_fit = ops + rate * seconds["adapt"]
    assert fit_s == pytest.approx(per_op * cli_learn.FIT_MARGIN * to_fit, rel=1e-3)
    total = sum(seconds.values()) + fit_s + cli_learn.FIT_FIXED_S
    assert total == pytest.approx(240, abs=0.01)
    # a dearer fit leaves less to measure
    dearer, _ = cli_learn.rescale_seconds(
        plan, first, spent, "probe", budget_s=240, ops=ops, fit_s_per_op=2 * per_op
    )
    assert dearer["adapt"] < seconds["adapt"]


def test_rescale_shares_the_rest_by_phase_and_never_below_zero() -> None:
    plan = cli_learn.FULL_PLAN
    spent = {p.name: 0.0 for p in plan} | {"generic": 200.0}
    seconds, _ = cli_learn.rescale_seconds(
        plan, cli_learn.plan_seconds(plan, 15), spent, "generic", budget_s=900, ops=3000,
        fit_s_per_op=0.0035,
    )  # fmt: skip
    assert seconds["net"] / seconds["move"] == pytest.approx(0.30 / 0.12, rel=1e-3)
    over, fit_s = cli_learn.rescale_seconds(
        plan, cli_learn.plan_seconds(plan, 15), spent, "generic", budget_s=150, ops=3000,
        fit_s_per_op=0.0035,
    )  # fmt: skip
    assert all(over[p.name] == 0.0 for p in plan[1:]) and fit_s > 0


def test_learn_resume_keeps_the_rescaled_seconds(tmp_path: Path) -> None:
    path = tmp_path / "r.records.jsonl.state.json"
    plan = cli_learn.ADAPT_PLAN
    state = {"minutes": 4, "base": "b", "spent_s": {"probe": 48.0, "adapt": 10.0},
             "seconds": {"probe": 48.0, "adapt": 81.5}, "fit_s": 90.2}  # fmt: skip
    path.write_text(json.dumps(state))
    back = cli_learn._read_state(path, plan, 4, base="b")
    assert back["seconds"] == state["seconds"] and back["fit_s"] == 90.2
    path.write_text(json.dumps({**state, "seconds": {"probe": 48.0}}))
    with pytest.raises(cli_learn.MeasureError, match="another kind of learn run"):
        cli_learn._read_state(path, plan, 4, base="b")

"""Device fingerprints: on every record and model file, selectable op resolvers and threads,
`tacopt inspect-model`, `tacopt evaluate` and the --cost-model device note."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.measurement.fingerprint import (
    RESOLVERS,
    announce_learned_devices,
    describe,
    device_differences,
    fingerprint_id,
    host_fingerprint,
    records_fingerprint,
)
from tacopt.cost_models.learned.measurement.records import read_records
from tacopt.cost_models.model_file import model_bytes
from tacopt.partitioner.cli import main
from tests.cost_models.test_measure_learned import small_model


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from tacopt.cost_models.learned.measurement.singleop import fill_constants
    from tacopt.fusion.tflite.writer import write_tflite

    folder = tmp_path_factory.mktemp("fp_models")
    return [
        write_tflite(fill_constants(small_model(n), seed=0), folder / f"m{n}.tflite")
        for n in (64, 512)
    ]


def test_host_fingerprint_reads_this_machine() -> None:
    fp = host_fingerprint()
    assert fp["cpu"] and fp["cores"] >= 1 and fp["litert"] != "unknown"
    assert fp["resolver"] == "xnnpack" and fp["delegate"] == "XNNPACK" and fp["threads"] == 1
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists() and " avx2 " in f" {cpuinfo.read_text()} ":
        assert "avx2" in fp["isa"]
    # resolvers and threads make other devices; the machine does not change
    other = host_fingerprint(resolver="ref", threads=2)
    assert fingerprint_id(other) != fingerprint_id(fp)
    assert device_differences(other, fp, hardware_only=True) == []
    assert sorted(device_differences(other, fp)) == [
        "delegate None vs XNNPACK", "resolver ref vs xnnpack", "threads 2 vs 1",
    ]  # fmt: skip


@pytest.mark.parametrize(("resolver", "threads"), [("builtin", 1), ("ref", 1), ("xnnpack", 2)])
def test_measure_runs_with_each_resolver_and_records_it(
    model_paths: list[Path], tmp_path: Path, resolver: str, threads: int
) -> None:
    out = tmp_path / "rec.jsonl"
    args = ["measure", *map(str, model_paths), "--out", str(out), "--quiet", "--repeats", "3"]
    assert main([*args, "--resolver", resolver, "--threads", str(threads)]) == 0
    recs = read_records(out)
    devices = [r for r in recs if r["type"] == "device"]
    assert len(devices) == 1 and recs[0]["type"] == "device"  # written first
    fp = devices[0]["fingerprint"]
    assert fp["resolver"] == resolver and fp["threads"] == threads
    assert fp["delegate"] == RESOLVERS[resolver][1]
    timed = [r for r in recs if r["type"] in ("op", "skip", "model")]
    assert timed and all(r["device"] == devices[0]["device"] for r in timed)
    ops = [r for r in recs if r["type"] == "op"]
    assert len(ops) == 6 and all(r["latency_us"] > 0 and r["resolver"] == resolver for r in ops)
    clock = "wall" if threads > 1 else "thread-cpu"
    assert all(r["method"].startswith(f"min-{clock}/") for r in ops)
    if threads > 1:
        assert all(r["latency_us"] == r["wall_us"] for r in ops)
    assert records_fingerprint(recs) == fp
    # resuming writes no second device record
    assert main([*args, "--resolver", resolver, "--threads", str(threads)]) == 0
    assert sum(r["type"] == "device" for r in read_records(out)) == 1


def test_reference_kernels_are_slower_than_xnnpack(model_paths: list[Path], tmp_path) -> None:
    """The resolver really changes the kernels: LiteRT's reference FULLY_CONNECTED of a 512 x
    512 matrix is far slower than XNNPACK's GEMM."""
    lat = {}
    for resolver in ("xnnpack", "ref"):
        out = tmp_path / f"{resolver}.jsonl"
        args = ["measure", str(model_paths[1]), "--out", str(out), "--quiet", "--repeats", "3"]
        assert main([*args, "--resolver", resolver]) == 0
        fc = [r for r in read_records(out) if r.get("kind") == "FULLY_CONNECTED"]
        lat[resolver] = fc[0]["latency_us"]
    assert lat["ref"] > 2 * lat["xnnpack"]


def test_bad_resolver_is_one_line(tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["measure", "--sweep", "3", "--out", str(out), "--resolver", "gpu"]) == 2
    err = capsys.readouterr().err
    assert "unknown op resolver 'gpu'" in err and "Traceback" not in err
    assert not out.exists()


def records_with_device(tmp_path: Path, model_paths: list[Path]) -> Path:
    out = tmp_path / "rec.jsonl"
    assert main(["measure", *map(str, model_paths), "--out", str(out), "--quiet"]) == 0
    return out


def test_fit_stores_the_fingerprint_and_inspect_evaluate_print_it(
    model_paths: list[Path], tmp_path: Path, capsys
) -> None:
    recs_path = records_with_device(tmp_path, model_paths)
    recs = read_records(recs_path)
    doc = fit(recs, kinds=False)
    assert doc["fingerprint"] == records_fingerprint(recs) and doc["fingerprint"]["cpu"]
    path = tmp_path / "m.json"
    path.write_bytes(model_bytes(doc, path))
    capsys.readouterr()
    assert main(["inspect-model", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["fingerprint"] == doc["fingerprint"] and info["differences"] == []
    assert info["whole_model"]["in_model_scale"] == doc["in_model_scale"] > 0
    assert info["whole_model"]["cache_bytes"] == doc["cache_bytes"]
    assert main(["inspect-model", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"fitted on: {describe(doc['fingerprint'])}" in text and "same device: yes" in text
    assert f"whole models: in_model_scale {doc['in_model_scale']}, in_model_spill" in text
    assert main(["evaluate", str(path), str(recs_path), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["fingerprints"]["model"] == res["fingerprints"]["records"] == doc["fingerprint"]
    assert res["ops"] == 6 and res["within_10pct"] == 1.0  # its own records: the lookup table
    assert res["skip_share"] == 0.0 and res["model_error_median"] >= 0
    assert res["skip_reasons"] == {} and res["folded"] == 0
    assert main(["evaluate", str(path), str(recs_path)]) == 0
    text = capsys.readouterr().out
    assert "within ±10 %: 100.0 %" in text
    assert f"records measured on: {describe(doc['fingerprint'])}" in text
    # --cost-model says which device the model is for, once, on stderr (no warning here)
    args = ["partition", str(model_paths[0]), "--devices", "CPU", "--cost-model", str(path)]
    assert main([*args, "--json"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines == [f"learned cost model: fitted on {describe(doc['fingerprint'])}"]
    assert json.loads(captured.out)["unit"] == "us"


def test_evaluate_and_inspect_refuse_bad_input(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "roofline-profile"}')
    recs = tmp_path / "r.jsonl"
    recs.write_text('{"type": "op"}\n')
    for args in (["evaluate", str(bad), str(recs)], ["inspect-model", str(tmp_path / "no.json")],
                 ["evaluate", "learned", str(tmp_path / "none.jsonl")]):  # fmt: skip
        assert main(args) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def fitted_on(fp: dict) -> dict:
    ops = [
        {"type": "op", "key": f"k{i}", "kind": "ADD", "inference_type": "FLOAT",
         "flops": 10.0**i, "bytes": 12.0 * 10**i, "outputs": [[[10**i]]],
         "latency_us": 1 + 10.0**i / 1000, "overhead_us": 1.0, "device": "d"}
        for i in range(2, 7)
    ]  # fmt: skip
    return fit([{"type": "device", "device": "d", "fingerprint": fp}, *ops])


def test_cost_model_says_which_device_and_warns_when_it_differs() -> None:
    from tacopt.cost_models.base import get_cost_model

    host = host_fingerprint()
    # a flag this machine lacks, whatever it is (a Zen 4 session has AVX-512)
    extra = next(f for f in ("avx512f", "amx_tile", "sve", "i8mm") if f not in host["isa"])
    other = {**host, "cpu": "Some Other CPU", "isa": [*host["isa"], extra]}
    doc = fitted_on(other)

    buf = io.StringIO()
    announce_learned_devices(get_cost_model(LearnedCostModel(doc)), buf)
    lines = buf.getvalue().splitlines()
    assert lines[0] == f"learned cost model: fitted on {describe(other)}"
    assert len(lines) == 2 and lines[1].startswith("warning: this machine")
    assert "cpu Some Other CPU vs" in lines[1] and f"isa +{extra}" in lines[1]
    buf = io.StringIO()
    announce_learned_devices(get_cost_model("roofline+roofline"), buf)
    assert buf.getvalue() == ""  # no learned model: nothing to say
    announce_learned_devices(get_cost_model(LearnedCostModel(fitted_on(host))), buf)
    assert len(buf.getvalue().splitlines()) == 1  # the device line, no warning

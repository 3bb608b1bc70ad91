"""The study runner: records, one problem per case, resume after interruption, parallel, Dask."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tacopt.benchmarks.harness import (
    Case,
    Study,
    count_moves,
    expand_cases,
    read_records,
    run_case,
    run_study,
)
from tacopt.benchmarks.zoos import BenchmarkError, ZooItem, register_zoo
from tacopt.partitioner.plan import evaluate
from tacopt.partitioner.problem import Choice, Link, PickProblem, TensorEdge, Unit

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {
    "key", "model", "zoo", "kind", "ops", "units", "choices", "tensors", "devices",
    "granularity", "cost_model", "fusion", "fusions", "unfused", "cost_unit", "picker", "status",
    "objective", "breakdown",
    "bound", "gap", "exact_objective", "ratio_to_exact", "gap_to_exact", "seconds",
    "build_seconds", "transfers", "conversions", "capacity", "pins", "peak_memory", "fits", "seed",
    "params", "versions", "error",
}  # fmt: skip

PICKERS = ("greedy", "first-fit", "tac", "exact")
SYNTHETIC = Study(zoos=("layered:10,25,40",), pickers=PICKERS, time_limit_s=20)


def _keys(records: list[dict]) -> list[str]:
    return [r["key"] for r in records]


def test_cases_put_exact_first_and_have_stable_keys() -> None:
    cases = expand_cases(Study(zoos=("transformer:1,2",), granularities=("subgraph", "op")))
    assert len(cases) == 2 * 3 * 2
    assert all(c.pickers[0] == "exact" for c in cases)
    assert cases == expand_cases(Study(zoos=("transformer:1,2",), granularities=("subgraph", "op")))
    assert len({c.key for c in cases}) == len(cases)


def test_a_case_listed_twice_is_refused() -> None:
    with pytest.raises(BenchmarkError, match="twice"):
        expand_cases(Study(zoos=("layered:10", "layered:10")))
    with pytest.raises(BenchmarkError, match="'pickers' is empty"):
        expand_cases(Study(zoos=("layered:10",), pickers=()))


def test_synthetic_study_records(tmp_path: Path) -> None:
    records = run_study(SYNTHETIC, tmp_path / "r.jsonl", jobs=1)
    assert len(records) == 3 * len(PICKERS)
    assert records == read_records(tmp_path / "r.jsonl")
    for r in records:
        assert set(r) == FIELDS
        assert r["error"] is None, r["error"]
        assert r["versions"]["ortools"] and r["versions"]["python"]
        b = r["breakdown"]
        assert math.isclose(b["compute"] + b["transfer"] + b["quant"], r["objective"])
        assert r["ratio_to_exact"] >= 1 - 1e-9  # exact is never beaten
        assert r["gap_to_exact"] == pytest.approx(r["ratio_to_exact"] - 1)
    exact = [r for r in records if r["picker"] == "exact"]
    assert [r["status"] for r in exact] == ["OPTIMAL"] * 3
    assert [r["units"] for r in exact] == [10, 25, 40]
    assert all(r["params"]["time_limit_s"] == 20 for r in exact)
    # records come in case order, pickers with exact first
    assert [r["picker"] for r in records[:4]] == ["exact", "greedy", "first-fit", "tac"]


def test_every_picker_of_a_case_solves_the_same_problem() -> None:
    case = expand_cases(Study(zoos=("transformer:1",), device_sets=(("GPU", "CPU"),),
                              granularities=("op",), pickers=PICKERS))[0]  # fmt: skip
    records = run_case(case)
    assert {r["units"] for r in records} == {39}
    assert len({r["build_seconds"] for r in records}) == 1  # built once
    exact = next(r for r in records if r["picker"] == "exact")
    assert all(r["exact_objective"] == exact["objective"] for r in records)
    assert all(r["objective"] >= exact["objective"] * (1 - 1e-9) for r in records)


def test_count_moves_follows_evaluate() -> None:
    # a (GPU/INT8) ─t─► b (CPU/FLOAT), c (CPU/FLOAT), d (GPU/INT8) ; b ─u─► output
    gpu8, cpu = Choice("GPU", "QUANTIZED_INT8", 1.0), Choice("CPU", "FLOAT", 2.0)
    units = tuple(Unit(n, (cpu, gpu8)) for n in "abcd")
    tensors = (
        TensorEdge("t", "a", ("b", "c", "d"), (10,), "float32"),
        TensorEdge("u", "b", (), (10,), "float32", output=True),
    )
    p = PickProblem(units, tensors, Link(1.0, 1.0), 1.0)
    plan = {"a": gpu8, "b": cpu, "c": cpu, "d": gpu8}
    # t goes GPU -> CPU once (b and c share the destination) and INT8 -> FLOAT once
    assert count_moves(p, plan) == (1, 1)
    assert evaluate(p, plan).transfer == pytest.approx(1 * 10 * 4 + 1)
    assert count_moves(p, {n: cpu for n in "abcd"}) == (0, 0)


def test_failures_become_records_not_exceptions(tmp_path: Path) -> None:
    register_zoo("test-buggy", lambda arg: [
        ZooItem("buggy", "test-buggy", "problem", "tests.benchmarks.crashy:buggy", 5),
        ZooItem("fine", "test-buggy", "problem", "tests.benchmarks.crashy:small", 5),
    ])  # fmt: skip
    study = Study(zoos=("test-buggy", "layered:10"), pickers=("exact", "mincut"))
    records = run_study(study, tmp_path / "r.jsonl", jobs=1)
    by = {(r["model"], r["picker"]): r for r in records}
    assert by["buggy", "exact"]["status"] == "CRASH"
    assert "ZeroDivisionError" in by["buggy", "exact"]["error"]
    assert by["fine", "mincut"]["status"] == "ERROR"  # out of its scope: a record, not an abort
    assert "mincut picker needs units" in by["fine", "mincut"]["error"]
    assert by["fine", "exact"]["status"] == "OPTIMAL"
    # failed records are kept on resume, and run again with retry_failed
    ran: list[str] = []
    run_study(study, tmp_path / "r.jsonl", jobs=1, on_case=lambda c: ran.append(c.item.name))
    assert ran == []
    run_study(study, tmp_path / "r.jsonl", jobs=1, retry_failed=True,
              on_case=lambda c: ran.append(c.item.name))  # fmt: skip
    assert sorted(ran) == ["buggy", "fine", "layered_N10"]


def test_resume_after_truncation_runs_only_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    full = run_study(SYNTHETIC, out, jobs=1)
    lines = out.read_text().splitlines(keepends=True)
    # interrupted run: the first case and half of the second one, then a torn line
    out.write_text("".join(lines[:6]) + lines[6][: len(lines[6]) // 2])
    ran: list[Case] = []
    resumed = run_study(SYNTHETIC, out, jobs=1, on_case=ran.append)
    assert [c.item.name for c in ran] == ["layered_N25", "layered_N40"]
    assert _keys(resumed) == _keys(full)
    assert [r["objective"] for r in resumed] == pytest.approx([r["objective"] for r in full])
    # the second case only re-ran its two missing pickers, using exact from the file
    assert all(r["exact_objective"] is not None for r in resumed)
    assert len(out.read_text().splitlines()) == len(full)
    ran.clear()
    assert _keys(run_study(SYNTHETIC, out, jobs=1, on_case=ran.append)) == _keys(full)
    assert ran == []


def test_a_corrupt_results_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text('{"key": "a"}\nnot json\n{"key": "b"}\n')
    with pytest.raises(BenchmarkError, match="results file '.*' line 2 is not a JSON object"):
        run_study(SYNTHETIC, out, jobs=1)
    out.write_text('{"key": "a"}\n{"nokey": 1}\n')
    with pytest.raises(BenchmarkError, match="record 2 is not a benchmark record"):
        run_study(SYNTHETIC, out, jobs=1)


def test_killed_run_resumes_without_redoing_finished_records(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    args = [sys.executable, "-m", "tacopt.benchmarks", "bench",
            "--zoo", "layered:10,20,30,40,50,60",
            "--pickers", "greedy,exact", "--jobs", "1", "--no-report", "--no-progress",
            "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_text().count("\n") >= 2:
            break
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    before = read_records(out)
    assert before, proc.stderr.read().decode() if proc.stderr else ""
    finished = {r["key"]: r["seconds"] for r in before}
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    after = read_records(out)
    assert len(after) == 12 and len({r["key"] for r in after}) == 12
    # a finished record is kept as it was (same measured time), not redone
    assert all(next(r for r in after if r["key"] == k)["seconds"] == s for k, s in finished.items())


def test_parallel_run_matches_serial(tmp_path: Path) -> None:
    study = Study(zoos=("layered:10,20,30",), pickers=("exact", "greedy", "tac"))
    serial = run_study(study, tmp_path / "a.jsonl", jobs=1)
    parallel = run_study(study, tmp_path / "b.jsonl", jobs=2)
    assert _keys(parallel) == _keys(serial)
    assert [r["objective"] for r in parallel] == pytest.approx([r["objective"] for r in serial])
    assert _keys(read_records(tmp_path / "b.jsonl")) == _keys(serial)


def test_a_dead_worker_is_pinned_to_its_case(tmp_path: Path) -> None:
    register_zoo("test-dies", lambda arg: [
        ZooItem("dies", "test-dies", "problem", "tests.benchmarks.crashy:die", 5),
        ZooItem("lives", "test-dies", "problem", "tests.benchmarks.crashy:small", 8),
    ])  # fmt: skip
    records = run_study(Study(zoos=("test-dies",), pickers=("greedy",)), tmp_path / "r.jsonl",
                        jobs=2)  # fmt: skip
    by = {r["model"]: r for r in records}
    assert by["dies"]["status"] == "CRASH" and "worker process died" in by["dies"]["error"]
    assert by["lives"]["status"] == "HEURISTIC"


def test_dask_local_cluster(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    study = Study(zoos=("layered:10,20",), pickers=("exact", "greedy"))
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        records = run_study(study, tmp_path / "r.jsonl", scheduler=cluster.scheduler_address)
    assert [(r["model"], r["picker"]) for r in records] == [
        ("layered_N10", "exact"), ("layered_N10", "greedy"),
        ("layered_N20", "exact"), ("layered_N20", "greedy"),
    ]  # fmt: skip
    assert all(r["ratio_to_exact"] >= 1 - 1e-9 for r in records)
    assert json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])["picker"] == "exact"


def test_bundled_model_case(bundled_dir: Path, tmp_path: Path) -> None:
    study = Study(zoos=(f"folder:{bundled_dir}",), device_sets=(("GPU", "CPU"),),
                  pickers=("exact", "tac"))  # fmt: skip
    cases = [c for c in expand_cases(study) if c.item.name == "keras__mobilenet_v2_float32"]
    records = [r for c in cases for r in run_case(c)]
    assert {r["status"] for r in records} <= {"OPTIMAL", "HEURISTIC"}, records
    assert all(r["ops"] == 65 and r["cost_unit"] for r in records)
    assert {r["granularity"] for r in records} == {"subgraph", "op"}


def test_a_study_with_both_fusion_modes_has_a_fusion_table(tmp_path) -> None:
    from tacopt.benchmarks.report import fusion_table, summary_table

    study = Study(
        zoos=("bundled",), device_sets=(("NNAPI", "CPU"),), granularities=("op",),
        pickers=("exact", "greedy"), fusion=("fused", "plain"),
    )  # fmt: skip
    records = run_study(study, tmp_path / "r.jsonl", jobs=1)
    modes = {(r["model"], r["fusion"]) for r in records}
    assert ("keras__text_transformer_float32", "plain") in modes
    lines = {line.split(" | ")[0].strip("| "): line for line in fusion_table(records).splitlines()}
    row = lines["keras__text_transformer_float32"]
    assert "layer_norm 4" in row and "CUSTOM:LayerNorm 4" in row and "1.0000" in row
    assert "| exact | 7 |" in summary_table(records)  # the per-picker table counts fused cases


def test_a_study_with_memory_limits_records_peaks_and_no_plan(bundled_dir: Path) -> None:
    from tacopt.benchmarks.harness import check_study
    from tacopt.benchmarks.report import markdown

    study = Study(zoos=(f"folder:{bundled_dir}",), device_sets=(("GPU", "CPU"),),
                  granularities=("op",), pickers=("exact", "tac", "greedy"),
                  memory=(("GPU", 4 * 2**20),))  # fmt: skip
    cases = [c for c in expand_cases(study) if c.item.name == "keras__mobilenet_v2_float32"]
    assert cases[0].key.endswith("|memory=GPU=4194304")
    records = [r for c in cases for r in run_case(c)]
    by = {r["picker"]: r for r in records}
    assert by["exact"]["status"] == "OPTIMAL" and by["exact"]["fits"] is True
    assert 0 < by["exact"]["peak_memory"]["GPU"] <= 4 * 2**20
    assert by["greedy"]["fits"] and by["greedy"]["ratio_to_exact"] >= 1.0
    assert by["tac"]["status"] == "UNKNOWN" and "does not fit" in by["tac"]["error"]
    report = markdown(records, title="t")
    assert "## Memory" in report and "| tac | 1 | 0 | 0 | 0 | 1 |" in report
    assert "## Failures" not in report
    with pytest.raises(BenchmarkError, match="memory: device 'NPU' is in no device set"):
        check_study(Study(memory=(("NPU", 1.0),)))

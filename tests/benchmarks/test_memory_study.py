"""The memory study on a bundled model: every plan fits, exact is never beaten, prices rise."""

from __future__ import annotations

import json

from tacopt.benchmarks.memory_study import check_records, main, memory_table, study_model
from tacopt.fusion.tflite.reader import read_tflite

MODEL = "keras__text_transformer_float32.tflite"


def test_every_limit_is_priced_and_every_claim_holds(bundled_models):
    G = read_tflite(bundled_models[MODEL])
    records = study_model(G, "transformer", ("GPU", "CPU"), "op", time_limit_s=30)
    assert {r["fraction"] for r in records} == {None, 0.75, 0.5, 0.25}
    assert check_records(records) == []
    exact = {r["fraction"]: r for r in records if r["picker"] == "exact"}
    for fraction in (0.75, 0.5, 0.25):
        row = exact[fraction]
        assert row["status"] == "OPTIMAL" and row["fits"]
        assert row["peak_memory"]["GPU"] <= row["capacity"]["GPU"]
    prices = [exact[f]["price"] for f in (None, 0.75, 0.5, 0.25)]
    assert prices[0] == 1.0 and prices == sorted(prices) and prices[-1] > 1.0
    assert "| transformer | GPU,CPU |" in memory_table(records)


def test_check_records_names_each_broken_claim(bundled_models):
    G = read_tflite(bundled_models[MODEL])
    records = study_model(G, "t", ("GPU", "CPU"), "op", pickers=("exact", "greedy"),
                          fractions=(None, 0.5))  # fmt: skip
    exact_half = next(r for r in records if r["picker"] == "exact" and r["fraction"] == 0.5)
    free = next(r for r in records if r["picker"] == "exact" and r["fraction"] is None)
    broken = [dict(r) for r in records]
    for r in broken:
        if r["picker"] == "greedy" and r["fraction"] == 0.5:
            r["objective"] = exact_half["objective"] / 2  # a plan better than the optimum
        if r["picker"] == "exact" and r["fraction"] == 0.5:
            r["objective"] = free["objective"] / 2  # cheaper with less memory
            r["fits"] = False
    problems = check_records(broken)
    assert any("does not fit" in p for p in problems)
    assert any("exact objective drops" in p for p in problems)


def test_the_script_prints_the_table_and_writes_records(bundled_models, tmp_path, capsys):
    out = tmp_path / "m.jsonl"
    code = main(["--zoo", "bundled", "--devices", "GPU,CPU", "--out", str(out),
                 "--plot", str(tmp_path / "m.png")])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0 and "0 claim(s) broken" in text
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert check_records(records) == [] and (tmp_path / "m.png").stat().st_size > 0

"""Where a whole model's price error comes from (issue 47 session 5): the terms alone (each op
at its measured latency) against the ops' kinds, per records file and family."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tacopt.benchmarks.scripts.learned import whole_model_parts
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.fitting.whole_model import error_parts


def _op(key: str, kind: str, n: int, latency_us: float) -> dict:
    return {"type": "op", "key": key, "kind": kind, "inference_type": "FLOAT",
            "flops": float(n), "bytes": 12.0 * n, "outputs": [[[n], "float32"]],
            "inputs": [[[n], "float32", False], [[n], "float32", False]],
            "latency_us": latency_us, "overhead_us": 1.0}  # fmt: skip


def _records() -> list[dict]:
    train = [_op(f"k{i}", "ADD", 10**i, 1 + 10.0**i / 1000) for i in range(2, 7)]
    # held out: an ADD the model prices by its fit (1e4 elements: ~10 us net) measured at 30
    held = _op("slow", "ADD", 10**4, 31.0)
    models = [
        # ops as priced, the whole model twice their sum: the terms' error
        {"type": "model", "model": "fam_a__twice", "ops": [["k4", 2.0], ["k5", 1.0]],
         "latency_us": 1 + 2 * (2 * 10 + 100)},
        # terms right, one op priced a third of its time: the ops' error
        {"type": "model", "model": "fam_b__slow_op", "ops": [["k5", 1.0], ["slow", 1.0]],
         "latency_us": 1 + 100 + 30},
    ]  # fmt: skip
    return [*train, held, *models]


def test_error_parts_split_a_whole_models_error_into_terms_and_kinds() -> None:
    records = _records()
    model = LearnedCostModel(fit(records[:5]))
    parts = {p.model: p for p in error_parts(records, model)}
    twice, slow = parts["fam_a__twice"], parts["fam_b__slow_op"]
    assert twice.terms_error == pytest.approx(-0.5, abs=0.01)  # the terms miss half
    assert twice.error == pytest.approx(twice.terms_error, abs=1e-6)  # its ops are exact
    assert slow.terms_error == pytest.approx(0.0, abs=0.01)
    assert slow.kinds[0][0] == "ADD" and slow.kinds[0][1] == pytest.approx(-20, abs=1)
    for p in parts.values():  # the parts add up
        assert p.predicted_us - p.measured_us == pytest.approx(
            p.terms_us - p.measured_us + sum(us for _, us in p.kinds))
    lines = whole_model_parts.report_lines(list(parts.values()), worst=2, kinds=1)
    assert lines[0].startswith("  all ") and "2 models" in lines[0]
    assert lines[1].startswith("  fam_a ") and lines[2].startswith("  fam_b ")
    assert any("fam_b__slow_op" in line and "ADD -20" in line for line in lines)
    kinds = whole_model_parts.kind_lines(list(parts.values()), most=1)
    fixed = float(kinds[1].split("median")[1].strip(" %"))
    assert "ADD" in kinds[1] and fixed == pytest.approx(25, abs=0.5)  # ADD exact: 0, 50 % off


def test_whole_model_parts_runs_on_files(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    records = _records()
    model_path = tmp_path / "m.json.gz"
    model_path.write_bytes(gzip.compress(json.dumps(fit(records[:5])).encode()))
    rec_path = tmp_path / "r.jsonl"
    rec_path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert whole_model_parts.main([str(model_path), str(rec_path), "--worst", "1"]) == 0
    out = capsys.readouterr().out
    assert "terms alone" in out and "fam_a__twice" in out and "fam_b__slow_op" not in out
    args = [str(model_path), str(rec_path), "--worst", "0", "--ops", "1"]
    assert whole_model_parts.main(args) == 0
    out = capsys.readouterr().out.splitlines()
    top = out[out.index("  op configurations by what they cost whole models:") + 1]
    # the held-out ADD measured at 30 us, priced ~10: the one configuration that costs anything
    assert "ADD 10000 10000" in top and "in fam_b__slow_op" in top
    assert float(top.split("priced ")[1].split("x")[0]) == pytest.approx(1 / 3, abs=0.05)

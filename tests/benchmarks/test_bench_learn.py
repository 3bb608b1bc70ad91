"""bench_learn: which records it takes as a zoo half's (issue 22's acceptance script)."""

from __future__ import annotations

import json
from pathlib import Path

from tacopt.benchmarks.scripts.learned import bench_learn
from tacopt.cost_models.learned.fitting.fit import fit


def records(model: str) -> list[dict]:
    ops = [{"type": "op", "key": f"k{i}", "kind": "ADD", "inference_type": "FLOAT",
            "flops": 10.0**i, "bytes": 10.0**i,
            "inputs": [[[10**i], "float32"]], "outputs": [[[10**i], "float32"]],
            "latency_us": 2.0 + i, "overhead_us": 1.0, "model": model}
           for i in range(5)]  # fmt: skip
    return [*ops, {"type": "model", "model": model, "latency_us": 20.0,
                   "ops": [[f"k{i}", 1] for i in range(5)]}]  # fmt: skip


def write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_float16_and_sparse_variants_belong_to_their_models_half(tmp_path, capsys) -> None:
    split = json.loads(bench_learn.SPLIT.read_text())
    test_model, tune_model = Path(split["test"][0]).stem, Path(split["tune"][0]).stem
    model = tmp_path / "m.json"
    model.write_text(json.dumps(fit(records(test_model)[:-1])))
    for name, half, rc in [
        (f"{test_model}_fp16", "test", 0),
        (f"{test_model}_sparse", "test", 0),
        (f"{tune_model}_fp16", "test", 2),  # a variant of a tuning model is no test data
        (f"{tune_model}_sparse", "tune", 0),
        (f"{test_model}_int4", "test", 2),  # not a variant zoo_variants makes
    ]:
        recs = write(tmp_path / f"{name}.jsonl", records(name))
        argv = ["--model", str(model), "--test", str(recs), "--half", half]
        assert bench_learn.main(argv) == rc, name
        out = capsys.readouterr().out
        if rc:
            assert f"models outside the {half} half: {name}" in out
        else:
            assert "whole-model error" in out and "(signed" in out

"""``python -m tacopt.benchmarks NAME``: one entry for every benchmark script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.benchmarks.__main__ import commands, main

SCRIPTS = Path(__file__).resolve().parents[2] / "benchmarks" / "scripts"


def test_every_script_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    on_disk = {p.stem for p in SCRIPTS.glob("*/*.py") if p.stem != "__init__"}
    assert not [p for p in SCRIPTS.glob("*.py") if p.stem != "__init__"]  # each in a folder
    assert on_disk and on_disk <= set(commands())
    assert main([]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()[2:] if line}
    assert listed == {"bench", *commands()}


def test_a_script_runs_with_its_arguments() -> None:
    result = subprocess.run([sys.executable, "-m", "tacopt.benchmarks", "compare", "--help"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m tacopt.benchmarks compare")


def test_an_unknown_name_is_one_line_and_exit_2() -> None:
    result = subprocess.run([sys.executable, "-m", "tacopt.benchmarks", "nope"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "no script 'nope'" in result.stderr


def test_a_scripts_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_records.jsonl"
    result = subprocess.run([sys.executable, "-m", "tacopt.benchmarks", "check_drift", "compare",
                             str(missing), str(missing)],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(f"'{missing}' does not exist")

"""The tree lints (ruff) and type-checks (mypy, configured in pyproject.toml) cleanly."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_check_passes():
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_passes():
    pytest.importorskip("mypy")
    result = run(sys.executable, "-m", "mypy")  # the packages listed in [tool.mypy] files
    assert result.returncode == 0, result.stdout + result.stderr

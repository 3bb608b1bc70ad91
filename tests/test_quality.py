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


def test_mypy_passes(tmp_path: Path):
    """mypy sees the code under its installed names: a ``tacopt`` folder of links to the
    repository's package folders (mypy cannot follow setuptools' editable-install finder)."""
    pytest.importorskip("mypy")
    tree = tmp_path / "tacopt"
    tree.mkdir()
    for module in (ROOT / "api").glob("*.py"):  # the public API and the ground floor
        (tree / module.name).symlink_to(module)
    for package in ("fusion", "cost_models", "partitioner", "benchmarks"):
        (tree / package).symlink_to(ROOT / package)
    config = str(ROOT / "pyproject.toml")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", config, "-p", "tacopt"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""`pip install .` installs one top-level package, ``tacopt``, with every module and data file.

The repository keeps the user's layout (``fusion/``, ``cost_models/``, ``partitioner/``,
``benchmarks/``); ``pyproject.toml`` maps those folders into the ``tacopt`` namespace. This test
builds the package as a plain install would (into a target folder, dependencies taken from the
running environment) and imports it from a folder that holds no source.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("fusion", "cost_models", "partitioner", "benchmarks")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    # a copy of the sources: setuptools builds in the source folder
    source = build / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "build", "results", "*.egg-info", "__pycache__", ".*_cache"
        ),
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(build)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return target


def _python(code: str, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_only_tacopt_is_installed_at_the_top(installed: Path) -> None:
    top = sorted(p.name for p in installed.iterdir() if not p.name.endswith((".dist-info", "bin")))
    assert top == ["tacopt"]


def test_every_source_module_and_data_file_is_installed(installed: Path) -> None:
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*"):
            rel = path.relative_to(ROOT / folder)
            if path.is_dir() or "__pycache__" in rel.parts or rel.parts[0] == "results":
                continue
            assert (installed / "tacopt" / folder / rel).is_file(), f"{folder}/{rel} not installed"


def test_generic_names_are_not_importable(installed: Path, tmp_path: Path) -> None:
    for name in FOLDERS:
        result = _python(f"import {name}", installed, tmp_path)
        assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr, name
    code = (
        "import tacopt, tacopt.fusion, tacopt.cost_models, tacopt.partitioner, tacopt.benchmarks\n"
        "print(tacopt.__file__); print(tacopt.read_tflite.__module__)"
    )
    result = _python(code, installed, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    where, module = result.stdout.split()
    assert Path(where).is_relative_to(installed) and module == "tacopt.fusion.tflite.reader"


def test_the_bundled_models_are_found_from_the_install(installed: Path, tmp_path: Path) -> None:
    code = "from tacopt.benchmarks.zoos import resolve_zoo\nprint(len(resolve_zoo('bundled')))"
    result = _python(code, installed, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout) == 7


def test_run_from_the_clone_the_install_is_not_shadowed(installed: Path) -> None:
    """`python -m tacopt....` (a bench worker) started in the clone's root must import the
    installed package: no folder at the root may be named ``tacopt``."""
    code = "import tacopt.benchmarks.worker_main, tacopt; print(tacopt.__file__)"
    result = _python(code, installed, ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert Path(result.stdout.strip()).is_relative_to(installed)

"""Shared fixtures: the shared model zoo (skipped when absent) and the bundled models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ZOO_DIR = ROOT.parent / "shared" / "zoo"
BUNDLED_DIR = ROOT / "benchmarks" / "models"


def zoo_files() -> list[Path]:
    """The shared zoo's models (empty when ../shared/zoo is absent); for parametrize."""
    return sorted(ZOO_DIR.glob("*.tflite")) if ZOO_DIR.is_dir() else []


def bundled_files() -> list[Path]:
    """The models bundled in benchmarks/models/, sorted by name."""
    return sorted(BUNDLED_DIR.glob("*.tflite"))


@pytest.fixture(scope="session")
def zoo_dir() -> Path:
    """Path of ../shared/zoo; skips the test when it is absent."""
    if not (ZOO_DIR / "MANIFEST.json").is_file():
        pytest.skip(f"shared model zoo not found at {ZOO_DIR}")
    return ZOO_DIR


@pytest.fixture(scope="session")
def manifest(zoo_dir: Path) -> dict[str, dict[str, Any]]:
    """The zoo's MANIFEST.json rows by file name."""
    rows = json.loads((zoo_dir / "MANIFEST.json").read_text())
    return {row["file"]: row for row in rows}


@pytest.fixture(scope="session")
def bundled_models() -> dict[str, Path]:
    """Bundled structure-only models (benchmarks/models/) by file name; always present."""
    return {p.name: p for p in bundled_files()}


@pytest.fixture(scope="session")
def bundled_manifest() -> dict[str, dict[str, Any]]:
    """The bundled models' MANIFEST rows by file name."""
    rows = json.loads((BUNDLED_DIR / "MANIFEST.json").read_text())
    return {row["file"]: row for row in rows}


@pytest.fixture
def private_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every extension registry as a private copy for one test: what it registers is gone after.

    The built-in cost models load lazily, so they are loaded into the real registry first.
    """
    from tacopt.benchmarks.zoos import _ZOOS
    from tacopt.cost_models.base import _FILE_LOADERS, _REGISTRY, registered_cost_models
    from tacopt.fusion.rules.composites import _FUSIONS
    from tacopt.fusion.rules.custom import _KERNELS
    from tacopt.partitioner.pickers.registry import _PICKERS
    from tacopt.partitioner.targets import _TARGETS

    registered_cost_models()
    for registry in (_ZOOS, _FILE_LOADERS, _REGISTRY, _FUSIONS, _KERNELS, _PICKERS, _TARGETS):
        monkeypatch.setattr(registry, "_items", dict(registry._items))

"""Fixtures of the benchmark tests: the shared zoo (skipped when absent) and tiny studies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tacopt.benchmarks.zoos import BUNDLED_DIR

#: ../shared/zoo beside this clone (the tests run from a clone).
SHARED_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "zoo"


@pytest.fixture
def shared_zoo() -> Path:
    if not SHARED_DIR.is_dir():
        pytest.skip(f"{SHARED_DIR} is not present")
    return SHARED_DIR


@pytest.fixture
def bundled_dir() -> Path:
    if not any(BUNDLED_DIR.glob("*.tflite")):
        pytest.skip("no bundled models yet")
    return BUNDLED_DIR

"""The examples in docs/api.md run as written, from a scratch folder, like a user's notebook."""

from __future__ import annotations

import doctest
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("page", ["api.md"])
def test_doc_page_examples_run(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_registries: None
) -> None:
    from tacopt.partitioner.pickers.registry import _PICKERS

    monkeypatch.chdir(tmp_path)  # the page registers examples: into private registries
    # the page lists the pickers: only the built-ins, whatever other tests registered before
    builtin = {
        k: v
        for k, v in _PICKERS._items.items()
        if getattr(v, "__module__", "").startswith("tacopt.")
    }
    monkeypatch.setattr(_PICKERS, "_items", builtin)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testfile(
        os.fspath(ROOT / "docs" / page), module_relative=False, optionflags=flags, verbose=False
    )
    assert result.attempted > 20 and result.failed == 0, f"{result.failed} examples failed"


def _map_paths() -> list[str]:
    text = (ROOT / "DEVELOPING.md").read_text()
    section = text.split("## The map", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`((?:fusion|cost_models|partitioner|benchmarks)/[\w/]*(?:\.py)?)`", section)


def test_the_developing_map_matches_the_tree() -> None:
    """Every folder and file DEVELOPING.md's map names exists, and every package folder is in
    the map."""
    named = _map_paths()
    assert len(named) > 20
    missing = [p for p in named if not (ROOT / p).exists()]
    assert not missing, f"DEVELOPING.md names what does not exist: {missing}"
    packages = {
        str(init.parent.relative_to(ROOT)) + "/"
        for folder in ("fusion", "cost_models", "partitioner", "benchmarks")
        for init in (ROOT / folder).rglob("__init__.py")
    }
    unmapped = sorted(packages - set(named))
    assert not unmapped, f"package folders missing from DEVELOPING.md's map: {unmapped}"

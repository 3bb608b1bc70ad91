"""The ``tacopt`` dispatcher itself: ``--version``."""

from __future__ import annotations

from importlib.metadata import version

from tacopt.partitioner.cli import main


def test_version_prints_the_installed_version_and_exits_0(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"tacopt {version('tacopt')} (Python ") and out.count("\n") == 1

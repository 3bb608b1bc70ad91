"""Hostile pick inputs that reach the contest-format sniffing: one line, exit 2, bounded memory."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tacopt.partitioner.cli import main
from tacopt.partitioner.problem.contest import IopddlError, decode_file


def test_deeply_nested_json_is_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["pick", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "deep.json" in err and "Traceback" not in err


def test_a_gzip_bomb_is_refused_before_it_inflates() -> None:
    bomb = gzip.compress(b" " * (4 << 20))
    with pytest.raises(IopddlError, match="inflates beyond 1,024 bytes; refused"):
        decode_file(bomb, "bomb.json.gz", limit=1024)


def test_truncated_gzip_is_one_line() -> None:
    raw = gzip.compress(b'{"problem": {"nodes": {}, "edges": {}}}')
    with pytest.raises(IopddlError, match="broken gzip data"):
        decode_file(raw[:-12], "cut.json.gz")

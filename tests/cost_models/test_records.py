"""Records files: JSON lines, a torn last line forgiven, anything else refused on one line."""

from __future__ import annotations

import pytest

from tacopt.cost_models.learned.measurement.records import MeasureError, read_records


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello world\n", "line 1 is not a JSON object"),
        (b"\xff\xfe\x00binary", "not UTF-8 text"),
        (b'[1, 2]\n{"type": "op"}\n', "line 1 is not a JSON object"),
        (b'{"type": "op"}\nnot json\n{"type": "op"}\n', "line 2 is not a JSON object"),
    ],
)
def test_what_is_not_json_lines_is_refused(tmp_path, content, message) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(content)
    with pytest.raises(MeasureError, match=message):
        read_records(path)


def test_a_torn_last_line_is_forgiven(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"type": "skip", "key": "a"}\n{"type": "op", "ke')
    assert read_records(path) == [{"type": "skip", "key": "a"}]

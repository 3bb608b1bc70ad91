"""Measurement records: JSON lines, one per op, skipped op or whole model (format in
:mod:`tacopt.cost_models.learned.measurement.measure`), appended and flushed one by one so a run can
resume."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from tacopt.fusion.ir.errors import TacoptError
from tacopt.fusion.ir.io import read_json_lines


class MeasureError(TacoptError):
    """A model or records file that cannot be measured / read."""


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a JSONL records file (a torn last line, from a killed run, is ignored).

    Raises
    ------
    MeasureError
        A missing file, one that is not UTF-8 text, or one whose lines are not JSON objects
        (a torn last line after good ones is the only line forgiven).
    """
    return read_json_lines(path, what="records file", error=MeasureError)


def write_record(f: TextIO, record: Mapping[str, Any]) -> None:
    f.write(json.dumps(record, sort_keys=True) + "\n")
    f.flush()


def gate_summary(records: Iterable[Mapping[str, Any]]) -> str:
    """One line on how quiet a run was: share of samples rejected by the gate, ops without a
    quiet sample, the invoke overhead at the start and the end of the run."""
    ops = [r for r in records if r.get("type") == "op"]
    if not ops:
        return "no op records"
    kept = sum(r.get("repeats", 0) for r in ops if r.get("quiet", True))
    rejected = sum(r.get("rejected", 0) for r in ops)
    loud = sum(1 for r in ops if not r.get("quiet", True))
    share = rejected / max(kept + rejected, 1) * 100
    return (
        f"gate: {share:.1f} % of samples rejected as not quiet, {loud} of {len(ops)} ops without"
        f" a quiet sample; overhead {ops[0].get('overhead_us')} -> {ops[-1].get('overhead_us')} us"
    )


def quiet_records(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records to fit on: without the op records timed with no quiet sample (the machine in
    a slow episode through all their passes and put-backs), unless those are most op records
    (then the gate's fast state itself is in doubt). In six 5-minute learns here, 13-26 % of
    such records agreed within ±10 % with two earlier learns of the same configurations, mostly
    slower; the quiet ones 92-96 %.

    >>> recs = [{"type": "op", "quiet": True}, {"type": "op", "quiet": False}, {"type": "model"}]
    >>> [r["type"] for r in quiet_records(recs)]
    ['op', 'model']
    >>> len(quiet_records(recs[1:]))
    2
    """
    ops = [r for r in records if r.get("type") == "op"]
    slow = sum(1 for r in ops if r.get("quiet") is False)
    if 2 * slow > len(ops):
        return list(records)
    return [r for r in records if not (r.get("type") == "op" and r.get("quiet") is False)]

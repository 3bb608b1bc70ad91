"""Measurement records: JSON lines, one per op, skipped op or whole model (format in
:mod:`tacopt.cost_models.learned.measurement.measure`), appended and flushed one by one so a run can
resume; and what a model record adds up to (its ops, the bytes they move, how far those spill out
of the caches)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from tacopt.cost_models.learned.fitting.schema import check_records
from tacopt.cost_models.learned.measurement.singleop import UNMEASURABLE
from tacopt.errors import TacoptError
from tacopt.fusion.ir.vocabulary import DTYPE_NBYTES
from tacopt.io import read_json_lines


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
    records = read_json_lines(path, what="records file", error=MeasureError)
    return check_records(records, str(path), error=MeasureError)


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


def spill_level(model_bytes: float, cache_bytes: Sequence[float] | None) -> float:
    """How far a model's data spills out of a core's L2 cache, 0 to 1: 0 at or below the L2's
    size (``cache_bytes = (l2, l3)``), 1 at or beyond the L3's, log-linear between; 0 when the
    caches are unknown.

    >>> spill_level(2**20, (2**20, 2**25)), spill_level(2**25, (2**20, 2**25))
    (0.0, 1.0)
    >>> round(spill_level(2**22, (2**20, 2**25)), 6), spill_level(2**30, None)
    (0.4, 0.0)
    """
    if not cache_bytes or len(cache_bytes) != 2 or not all(cache_bytes):
        return 0.0
    l2, l3 = (float(b) for b in cache_bytes)
    if l3 <= l2 or model_bytes <= l2:
        return 0.0
    return min(math.log(model_bytes / l2) / math.log(l3 / l2), 1.0)


def cold_level(model_bytes: float, cache_bytes: Sequence[float] | None) -> float:
    """How far a model's data overflow a core's L3 cache, 0 to 1: 0 at or below the L3's size,
    1 at twice it or beyond, log-linear between; 0 when the caches are unknown. Past it an
    op's weights, hot in cache when the op is timed alone, come back from memory on every
    invoke (:func:`weight_bytes`, ``whole_model.whole_model_terms``).

    >>> cold_level(2**25, (2**20, 2**25)), cold_level(2**26, (2**20, 2**25))
    (0.0, 1.0)
    >>> round(cold_level(1.5 * 2**25, (2**20, 2**25)), 3), cold_level(2**30, None)
    (0.585, 0.0)
    """
    if not cache_bytes or len(cache_bytes) != 2 or not all(cache_bytes):
        return 0.0
    l3 = float(cache_bytes[1])
    if model_bytes <= l3:
        return 0.0
    return min(math.log2(model_bytes / l3), 1.0)


#: Kinds whose constant operand is a table read by the rows asked for, not whole per invoke.
TABLE_KINDS = frozenset({"GATHER", "GATHER_ND", "EMBEDDING_LOOKUP"})


def weight_bytes(features: Mapping[str, Any]) -> float:
    """Bytes of an op's constant operands (its weights and biases), which it reads whole on every
    invoke; a table read by rows (:data:`TABLE_KINDS`) counts nothing.

    >>> weight_bytes({"kind": "CONV_2D", "inputs": [[[1, 8, 8, 4], "float32", False],
    ...     [[16, 3, 3, 4], "float32", True], [[16], "float32", True]]})
    2368.0
    """
    if features.get("kind") in TABLE_KINDS:
        return 0.0
    return float(sum(
        math.prod(max(int(v), 1) for v in d[0]) * DTYPE_NBYTES.get(d[1], 4)
        for d in features.get("inputs", []) if d and len(d) > 2 and d[2]
    ))  # fmt: skip


def counted_ops(
    model_record: Mapping[str, Any], by_key: Mapping[str, Mapping[str, Any]]
) -> Iterator[tuple[str, Mapping[str, Any], float]]:
    """``(key, op record, count)`` of each op a ``model`` record runs per invoke: its count less
    the ops fused into their consumer (``absorbed``: a PAD XNNPACK adds to the next
    convolution); those a model does not run (WHILE: its body ops are counted; variables) and
    records without features left out."""
    absorbed = dict(model_record.get("absorbed", []))
    for key, count in model_record["ops"]:
        rec = by_key.get(key)
        count -= absorbed.get(key, 0.0)
        if count > 0 and rec is not None and _counted(rec):
            yield key, rec, count


def ops_and_bytes(
    model_record: Mapping[str, Any], by_key: Mapping[str, Mapping[str, Any]]
) -> tuple[float, float]:
    """``(ops, bytes)``: how many ops a ``model`` record runs per invoke (:func:`counted_ops`)
    and the bytes they read and write (the op records' ``bytes``)."""
    n, moved, _ = ops_bytes_weights(model_record, by_key)
    return n, moved


def ops_bytes_weights(
    model_record: Mapping[str, Any], by_key: Mapping[str, Mapping[str, Any]]
) -> tuple[float, float, float]:
    """``(ops, bytes, weight bytes)`` of a ``model`` record per invoke: :func:`ops_and_bytes`
    and the bytes of its ops' weights (:func:`weight_bytes`)."""
    n = moved = weights = 0.0
    for _, rec, count in counted_ops(model_record, by_key):
        n += count
        moved += count * float(rec.get("bytes", 0.0))
        weights += count * weight_bytes(rec)
    return n, moved, weights


def fingerprint_caches(fp: Mapping[str, Any] | None) -> list[int] | None:
    """``[l2, l3]``: the cache sizes of a device fingerprint, None when unknown."""
    if not fp or not fp.get("l2_bytes") or not fp.get("l3_bytes"):
        return None
    return [int(fp["l2_bytes"]), int(fp["l3_bytes"])]


def _counted(rec: Mapping[str, Any] | None) -> bool:
    """Whether a model's op counts as one the model runs (WHILE and variables do not)."""
    return rec is not None and rec.get("kind") not in UNMEASURABLE and "inputs" in rec


def records_by_key(records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``op`` and ``skip`` records by configuration key."""
    return {r["key"]: r for r in records if r.get("type") in ("op", "skip")}

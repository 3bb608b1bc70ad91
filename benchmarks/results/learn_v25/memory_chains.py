"""The learns' chains past 16 MB against the memory read beside them: per records file, the
median memory read (``dram_us``) of those chains, their median in-model ratio (whole latency /
their ops' sum, both net of the invoke overhead) as timed, and the same with each chain's
latency divided by its memory index against one common read (the geometric mean over every
file's chains: ``speed.memory_index``). The ratio a learn fits its full-spill scale on should
spread less across learns in the last column if the memory explains it.

    python memory_chains.py RECORDS.jsonl [RECORDS.jsonl ...]
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Sequence

from tacopt.cost_models.learned.fitting.whole_model import net_latency
from tacopt.cost_models.learned.measurement.records import (
    counted_ops,
    fingerprint_caches,
    read_records,
    records_by_key,
    spill_level,
)
from tacopt.cost_models.learned.measurement.speed import memory_index

BIG = 16e6  # bytes moved per invoke


def big_chains(path: str) -> list[tuple[float, float, float, float]]:
    """``(whole, ops, dram_us, spill)`` of each loop-free model past :data:`BIG` in ``path``."""
    records = read_records(path)
    by_key = records_by_key(records)
    caches = next(fingerprint_caches(r["fingerprint"]) for r in records if r["type"] == "device")
    overhead = statistics.median(r.get("overhead_us", 0.0) for r in records if r["type"] == "op")
    out = []
    for r in records:
        if r.get("type") != "model" or r.get("loop_trips") or not r.get("latency_us"):
            continue
        parts = [(c, op) for _, op, c in counted_ops(r, by_key) if op.get("type") == "op"]
        ops = sum(c * net_latency(op) for c, op in parts)
        moved = sum(c * float(op.get("bytes", 0.0)) for c, op in parts)
        if ops > 0 and moved > BIG and r.get("dram_us"):
            spill = spill_level(moved, caches)
            out.append((r["latency_us"] - overhead, ops, float(r["dram_us"]), spill))
    return out


def main(paths: Sequence[str]) -> None:
    runs = {p: big_chains(p) for p in paths}
    reads = [d for rows in runs.values() for _, _, d, _ in rows]
    common = math.exp(statistics.fmean(math.log(d) for d in reads))
    print(f"common memory read {common:.1f} us over {len(reads)} models past 16 MB")
    print(f"{'records':32s} {'n':>4s} {'memory us':>10s} {'ratio':>7s} {'at common':>10s}")
    for path, rows in runs.items():
        raw = statistics.median(w / o for w, o, _, _ in rows)
        at = statistics.median(w / memory_index(d, common, s) / o for w, o, d, s in rows)
        dram = statistics.median(d for _, _, d, _ in rows)
        name = path.rsplit("/", 1)[-1]
        print(f"{name:32s} {len(rows):4d} {dram:10.1f} {raw:7.3f} {at:10.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])

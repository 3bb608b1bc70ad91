"""What each learn fitted for a model past the caches, and the same brought to one memory read:
each model file's in-model scale at full spill (``in_model_scale + in_model_spill``), the
learn's median memory read (``anchor_speed["dram"]``, us) and the scale times (common read /
its read) ** MEMORY_SLOPE, the common read being the geometric mean over the files that have
one. If the memory explains why fresh learns fit different scales, the last column spreads
less than the first.

    python memory_terms.py MODEL.json.gz [MODEL.json.gz ...]
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Sequence

from tacopt.cost_models.learned.measurement.speed import MEMORY_KEY, MEMORY_SLOPE
from tacopt.cost_models.model_file import read_model_doc


def main(paths: Sequence[str]) -> None:
    docs = [read_model_doc(p) for p in paths]
    reads = [d.get("anchor_speed", {}).get(MEMORY_KEY) for d in docs]
    have = [r for r in reads if r]
    common = math.exp(statistics.fmean(math.log(r) for r in have)) if have else None
    print(f"MEMORY_SLOPE {MEMORY_SLOPE}; common memory read {common and round(common, 1)} us")
    print(f"{'model file':28s} {'full-spill scale':>16s} {'memory us':>10s} {'at common':>10s}")
    for path, doc, read in zip(paths, docs, reads, strict=True):
        full = doc["in_model_scale"] + doc.get("in_model_spill", 0.0)
        at = full * (common / read) ** MEMORY_SLOPE if read and common else float("nan")
        name = path.rsplit("/", 1)[-1]
        print(f"{name:28s} {full:16.4f} {read or float('nan'):10.1f} {at:10.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Run a benchmark script, or a ``tacopt`` command, with the memory reads ignored
(``speed.MEMORY_SLOPE`` set to 0): the ablation of DECLARED.md, and the same comparison on the
tuning half (a learn's records refitted without them, then evaluated without them).

    python no_memory.py bench_learn --model ... --test ...
    python no_memory.py tacopt fit RECORDS.jsonl -o MODEL.json.gz
"""

from __future__ import annotations

import sys

from tacopt.cost_models.learned.measurement import speed

if __name__ == "__main__":
    speed.MEMORY_SLOPE = 0.0
    if sys.argv[1:2] == ["tacopt"]:
        from tacopt.partitioner.cli import main

        sys.exit(main(sys.argv[2:]))
    from tacopt.benchmarks.__main__ import main as bench

    sys.exit(bench(sys.argv[1:]))

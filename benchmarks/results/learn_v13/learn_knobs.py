"""``tacopt learn`` with timing knobs replaced, and the time spent waiting for quiet counted.

    python learn_knobs.py x1.json.gz 5 '{"retry_rounds": 0}'    # output, minutes, knobs
"""

import atexit
import json
import sys
import time
from dataclasses import replace

from tacopt.cost_models.learned import cli_learn
from tacopt.cost_models.learned.measurement import timing
from tacopt.partitioner.cli import main

out, minutes, knobs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
configured = cli_learn._measure_config
cli_learn._measure_config = lambda args, adapting: replace(configured(args, adapting), **knobs)
waited = {"wait": 0.0, "n": 0}
wait = timing.Gate.wait


def counted_wait(*args, **kwargs):
    t = time.perf_counter()
    try:
        return wait(*args, **kwargs)
    finally:
        waited["wait"] += time.perf_counter() - t
        waited["n"] += 1


setattr(timing.Gate, "wait", counted_wait)  # noqa: B010 (a method replaced: mypy)
t0 = time.perf_counter()
atexit.register(
    lambda: print(f"PROF total {time.perf_counter() - t0:.1f}", waited, knobs, file=sys.stderr)
)
sys.argv = ["tacopt", "learn", "-o", out, "--minutes", minutes]
main()

"""Measure layer-norm samples (the net prior's ``*_LN`` samplers) as ``tacopt learn`` times ops.

    python measure_ln.py ln.records.jsonl 110     # records file, seconds
"""

import sys

from tacopt.cost_models.learned.cli_learn import LEARN_CHUNK, QUIET_TARGET, RETRY_ROUNDS
from tacopt.cost_models.learned.measurement.measure import measure_graphs
from tacopt.cost_models.learned.measurement.timing import MeasureConfig
from tacopt.cost_models.learned.sampling.samplers_net import LN_PRIOR
from tacopt.cost_models.learned.sampling.sweep import iter_samples

cfg = MeasureConfig(
    quiet_target=QUIET_TARGET, chunk=LEARN_CHUNK, passes=2, retry_rounds=RETRY_ROUNDS,
    pass_gap_s=30.0,
)  # fmt: skip
samples = iter_samples(2000, seed=77, weights=LN_PRIOR)
print(measure_graphs(samples, sys.argv[1], cfg, max_s=float(sys.argv[2])))

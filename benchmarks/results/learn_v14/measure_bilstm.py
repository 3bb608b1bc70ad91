"""BIDIRECTIONAL_SEQUENCE_LSTM samples, timed as ``tacopt learn`` times them.

Run: ``python measure_bilstm.py OUT SECONDS`` (``bilstm.records.jsonl``: 240 s, seed 78).
"""

import sys

import tacopt.cost_models.learned.sampling.samplers_net  # noqa: F401 (registers the net samplers)
from tacopt.cost_models.learned.cli_learn import LEARN_CHUNK, QUIET_TARGET, RETRY_ROUNDS
from tacopt.cost_models.learned.measurement.measure import measure_graphs
from tacopt.cost_models.learned.measurement.timing import MeasureConfig
from tacopt.cost_models.learned.sampling.sweep import iter_samples

cfg = MeasureConfig(
    quiet_target=QUIET_TARGET,
    chunk=LEARN_CHUNK,
    passes=2,
    retry_rounds=RETRY_ROUNDS,
    pass_gap_s=30.0,
)
samples = iter_samples(2000, seed=78, weights={"BIDIRECTIONAL_SEQUENCE_LSTM": 1.0})
print(measure_graphs(samples, sys.argv[1], cfg, max_s=float(sys.argv[2])))

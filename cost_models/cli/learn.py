"""``tacopt learn``: measure and fit a learned cost model on the machine at hand, in a time budget.

``tacopt learn -o my_device.json`` measures sampled single ops (and small chain models) of the
sweep's priors (:mod:`~tacopt.cost_models.learned.sampling.sweep`) in phases
(:data:`~tacopt.cost_models.cli.learn_run.FULL_PLAN`),
each given a share of the budget (``--minutes``, 15 by default), then fits
(:func:`~tacopt.cost_models.learned.fitting.fit.fit`). The sample count follows from the budget:
each phase measures as many ops as its share of the time allows (on this 2-core machine ~5-9 ops
per second).

``tacopt learn --from base.json -o my_device.json --minutes 3`` adapts a model fitted on
another device instead (:mod:`~tacopt.cost_models.learned.sampling.adapt`): a quarter of the time
on probes of every prior's samplers where the base model is least sure
(:func:`~tacopt.cost_models.learned.sampling.adapt.uncertain_weights`), the rest where the probes
found the device furthest from the base (:func:`~tacopt.cost_models.learned.sampling.adapt.
differing_weights`), then per-family re-anchoring, per-kind corrections, residual trees and a
model of the device's own; each kernel family and kind is priced the way that did best on ops
the fit did not see (:mod:`~tacopt.cost_models.learned.sampling.guard`), which it prints.

Resumable: the records go to ``--records`` (default: next to ``-o``, ``NAME.records.jsonl``)
and the time spent per phase to ``RECORDS.state.json``; re-running the same command goes on
where it stopped (an interrupted phase gets only the rest of its share). ``-o`` is written only
when the fit succeeded. This module is the command's parser (imported by every ``tacopt --help``);
what it runs is in :mod:`tacopt.cost_models.cli.learn_run`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tacopt.cli_options import add_command, at_least, positive
from tacopt.cost_models.cli.measure import add_resolver_option


def register(subparsers: Any) -> None:
    p = add_command(subparsers, "learn", run_learn)
    p.add_argument("-o", "--out", type=Path, required=True, help="model file (.json or .json.gz)")
    p.add_argument(
        "--minutes", type=positive("minutes"), default=None,
        help="time budget, the fit included (default 15; 3 with --from, which measures for "
        "2.1 of them; --minutes 4 measures for 3)",
    )  # fmt: skip
    p.add_argument("--from", dest="base", type=Path, help="adapt this learned model file")
    p.add_argument(
        "--records", type=Path, help="records file (default: OUT without suffix + .records.jsonl)"
    )
    p.add_argument("--threads", type=at_least(1), default=1,
                   help="interpreter threads (default 1)")  # fmt: skip
    add_resolver_option(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run_learn(args: argparse.Namespace) -> int:
    """Measure and fit a learned cost model on this machine in a time budget.

    Measure sampled ops on this machine (sweep priors, in phases sharing the time budget) and
    fit a learned cost model (JSON, loadable with --cost-model); with --from, adapt a model
    fitted on another device with few samples instead. Resumable: re-run the same command to go
    on. It times the machine: run it while nothing else keeps the cores busy.
    """
    # Deferred for start-up: `tacopt --help` and `--version` import every command's
    # module; what this command runs would add its imports to them.
    from tacopt.cost_models.cli.learn_run import learn_command

    return learn_command(args)



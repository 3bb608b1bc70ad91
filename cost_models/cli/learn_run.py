"""What ``tacopt learn`` runs once its options are parsed (:mod:`.learn` holds the parser,
imported by every ``tacopt --help``): the phases of the budget, measuring, the fit or the
adaptation, the records and their state file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tacopt.cost_models.cli.measure_run import (
    check_records_file,
    read_learned_doc,
    silence_xnnpack_banner,
)
from tacopt.cost_models.learned.fitting.companion import (
    companion_name,
    pick_companion,
    starting_line,
)
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.measurement.contention import CONTENTION_SHARE, OtherLoad
from tacopt.cost_models.learned.measurement.measure import Meter, measure_graphs, measure_models
from tacopt.cost_models.learned.measurement.records import MeasureError, quiet_records, read_records
from tacopt.cost_models.learned.measurement.timing import MeasureConfig
from tacopt.cost_models.learned.sampling.adapt import differing_weights, uncertain_weights
from tacopt.cost_models.learned.sampling.guard import choice_lines, guarded_adapt
from tacopt.cost_models.learned.sampling.sweep import PRIORS, adaptive_weights, iter_samples
from tacopt.cost_models.model_file import model_bytes
from tacopt.formats import json_file_kind
from tacopt.fusion.tflite.writer import write_tflite
from tacopt.io import all_or_nothing, check_output_path

#: Seconds of the budget kept for fitting in the first plan, at most a share of it: a quarter in
#: a fresh learn (13,457 records take 38-40 s to fit on the 2-core Zen 4), 30 % in an adaptation,
#: whose fit chooses the device's own model over five folds in two processes (3,035 records:
#: 38-43 s; 5,600: 59-67 s). ``--minutes 3`` adapting plans 2.1 minutes of measuring, ``--minutes
#: 4`` 3. After each phase the later ones are re-sized (:func:`rescale_seconds`): 4-minute
#: builtin adaptations measured for the planned 3 minutes took 87-138 s to fit (4,491 and 7,208
#: ops), 4.4-5.3 minutes in all.
FIT_RESERVE_S = 60.0
FIT_SHARE, ADAPT_FIT_SHARE = 0.25, 0.3
#: Seconds the fit takes per quiet op record, adapting and fresh, on the 2-core EPYC (Zen 5)
#: with the cores to itself (:func:`fit_cost_per_op` scales them by the other processes' share):
#: the adaptation's guarded fit (five folds, each with corrections, residual trees and an own
#: model, in two processes) took 33 s on 2,871 ops (0.0115 s an op) and 87 s on 7,208 (0.012)
#: live, and 41 and 48 s on 4,374 and 5,912 (0.0094, 0.0081) once the budget held;
#: under other jobs (load 3-5) 99-138 s on 4,424-4,711 (0.022-0.029). Offline, in one process,
#: niced: 69 s on 4,492 (0.015). Profiled, 30 s of those are LightGBM's boosting (175
#: boosters: residual trees and own models, six times: five folds and the whole); the rest is
#: Python in the own models' kind fits and sources, the predictions and the trees' text read as
#: lists (timed apart: 0.04 s a booster, 7 s in all): no single waste to cut. A fresh learn's
#: fit: 35 s on 11,831 records (0.003).
FIT_S_PER_OP = {"adapt": 0.012, "fresh": 0.003}
#: The fit's estimate is taken this many times over: the same fit varies by half with the load.
FIT_MARGIN = 1.3
#: Seconds outside the measuring and the fit: start-up, reading the records, writing the model.
FIT_FIXED_S = 8.0
#: Quiet samples an op needs before ``learn`` moves on
#: (:attr:`~tacopt.cost_models.learned.measurement.timing.MeasureConfig.quiet_target`): its
#: latency is its fastest sample, and waiting for more quiet samples spent 43 % of a loaded run
#: (160 sweep ops: 54.7 s, 23.5 s of it waiting; with 1: 33.9 s, 4.0 s). ``tacopt measure``
#: keeps 3 (test data).
QUIET_TARGET = 1
#: Rounds of extra samples, each after waiting for quiet, for an op left without a quiet sample
#: (:attr:`~tacopt.cost_models.learned.measurement.timing.MeasureConfig.retry_rounds`;
#: ``tacopt measure`` keeps 3): none. Such an op is put back and timed again later in the run
#: instead, and left out of the fit if it is still not quiet
#: (:func:`~tacopt.cost_models.learned.measurement.records.quiet_records`). In two
#: 5-minute learns here, waiting took 72 s of 240 (1,423 ops measured); without it, 0 s (1,871
#: ops). They ran minutes apart, the first partly in a slow episode.
RETRY_ROUNDS = 0
#: Ops timed together in interleaved rounds by ``learn`` (``tacopt measure``: 48). A chunk
#: started before the phase's deadline is finished after it: with 48, a 3-minute adaptation
#: on LiteRT's builtin kernels (ops of up to 0.3 s each) measured for 3.2 minutes.
LEARN_CHUNK = 16
#: Share of a phase's time for its chain models (whole-model effects), after its ops.
CHAIN_SHARE = 0.12
#: Upper bound of the measuring rate (ops per second) used to size a phase's sample list.
MAX_RATE = 100
#: Samples of each op and the interpreter instances they are taken on, over two passes, in a
#: fresh learn and in an adaptation (``tacopt measure``, which times test data, keeps 16 over
#: 8). The fit gains more from more ops than from surer ones: a 3-minute adaptation took 1,288
#: ops with 16 samples over 8 instances, 2,232 with 8 over 4, 3,690 with 4 over 2, and put 60.5
#: / 69.9 / 75.5 % of the builtin kernels' tuning half within ±10 % (2 threads: 65.7 / 62.5,
#: 69.6 / 70.1, 70.5 / 68.8 % on its two measurements; docs/cost-models.md). A 15-minute learn
#: with 8 over 4: 13,457 ops, 87.6 / 88.2 % of the tuning half (16 over 8: 7,954, 85.3 / 84.6).
LEARN_SAMPLES = (8, 4)
ADAPT_SAMPLES = (4, 2)


@dataclass(frozen=True, slots=True)
class Phase:
    """One phase of a learn run: ``share`` of the measuring time on ops of ``prior`` drawn
    with ``seed`` (``weights``: "adaptive" = the earlier phases' cross-validated misses,
    "uncertain" = where the base model is least sure), then chain models if ``chains``
    (``chain_share`` of the phase; those of ``chain_prior``, default ``prior``)."""

    name: str
    seed: int
    prior: str
    share: float
    weights: str = "prior"
    chains: bool = True
    chain_share: float = CHAIN_SHARE
    chain_prior: str | None = None


#: A full learn: the generic prior, where networks put ops, more of what the fit misses, RNNs,
#: the kinds mobile models add (the ``tail`` prior: resizes, PReLU, transposed convolutions),
#: and data movement, broadcasts and small ops where real models put them (the ``move`` prior,
#: :mod:`~tacopt.cost_models.learned.sampling.samplers_move`; issue 47: 12 % of the time,
#: taken from the other phases); then the regimes no learn drew before issue 47's session 5
#: (``regimes``: :data:`~tacopt.cost_models.learned.sampling.sweep.REGIMES_PRIOR`, 5 %, from
#: the generic and adaptive phases: 2,832 such ops refitted with learn 3's records took the
#: zoo test half from 85.3 to 87.5 % of ops within ±10 %, its net from 78.4 to 82.2 %).
FULL_PLAN: tuple[Phase, ...] = (
    Phase("generic", 0, "generic", 0.21),
    Phase("net", 3, "net", 0.30),
    Phase("adaptive", 1, "generic", 0.095, weights="adaptive", chains=False),
    Phase("net-rnn", 4, "net-rnn", 0.135),
    Phase("tail", 5, "tail", 0.09, chains=False),
    Phase("move", 6, "move", 0.12, chains=False),
    Phase("regimes", 9, "regimes", 0.05, chains=False),
)
#: Adapting a base model (issue 47): probes of every prior's samplers where the base is least
#: sure, then the rest of the budget where the probes found the device furthest from the
#: re-anchored base ("differs": :func:`~tacopt.cost_models.learned.sampling.adapt.
#: differing_weights`). The probes end with chain models timed whole (the ``net-rnn``
#: prior's: networks, every fourth a chain of tiny ops, :data:`ADAPT_CHAIN_SHARE` of the
#: phase), on which the guard checks that the adaptation prices whole models no worse than its
#: base (:func:`~tacopt.cost_models.learned.sampling.guard.whole_model_check`); the
#: whole-model terms stay the base's. Network chains alone (two live 3-minute builtin runs, 4
#: chains each) missed what went wrong on models of a few microseconds: the recommendation
#: MLPs of 1.8-5.7 us, 29 % off from the shipped base and 60 % adapted.
ADAPT_CHAIN_SHARE = 0.3
ADAPT_PLAN: tuple[Phase, ...] = (
    Phase("probe", 7, "generic", 0.25, weights="uncertain", chain_share=ADAPT_CHAIN_SHARE,
          chain_prior="net-rnn"),  # fmt: skip
    Phase("adapt", 8, "generic", 0.75, weights="differs", chains=False),
)


def records_path(out: Path) -> Path:
    """The default records file of model file ``out``.

    >>> records_path(Path("dev/my_device.json.gz")).as_posix()
    'dev/my_device.records.jsonl'
    """
    name = out.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return out.with_name(name + ".records.jsonl")


def plan_seconds(plan: tuple[Phase, ...], minutes: float) -> dict[str, float]:
    """Measuring seconds per phase: the budget minus :data:`FIT_RESERVE_S` (at most
    :data:`FIT_SHARE` of it, :data:`ADAPT_FIT_SHARE` adapting), split by the phases' shares.

    >>> plan_seconds(FULL_PLAN, 15)["net"], plan_seconds(ADAPT_PLAN, 3)["adapt"]
    (252.0, 94.5)
    """
    total = minutes * 60.0
    fit_share = ADAPT_FIT_SHARE if plan == ADAPT_PLAN else FIT_SHARE
    measure = total - min(FIT_RESERVE_S, total * fit_share)
    share = sum(p.share for p in plan)
    return {p.name: round(measure * p.share / share, 3) for p in plan}


def fit_cost_per_op(adapting: bool, others_share: float) -> float:
    """The fit's seconds per op (:data:`FIT_S_PER_OP`) when other processes keep
    ``others_share`` of the cores busy (NaN: unknown, taken as none): the fit runs in two
    processes, so it slows by the share of the cores left to it, at most twofold.

    >>> fit_cost_per_op(True, 0.0), fit_cost_per_op(True, 0.5), fit_cost_per_op(False, 0.9)
    (0.012, 0.024, 0.006)
    """
    share = 0.0 if math.isnan(others_share) else min(max(others_share, 0.0), 0.5)
    return FIT_S_PER_OP["adapt" if adapting else "fresh"] / (1.0 - share)


def rescale_seconds(
    plan: tuple[Phase, ...],
    seconds: Mapping[str, float],
    spent: Mapping[str, float],
    done: str,
    *,
    budget_s: float,
    ops: int,
    fit_s_per_op: float,
) -> tuple[dict[str, float], float]:
    """The phases' seconds once phase ``done`` is over, and the fit's expected seconds: the
    phases up to ``done`` keep what they spent, the later ones share (by their shares) what is
    left of ``budget_s`` once :data:`FIT_FIXED_S` and the fit of every op are set aside. The
    fit costs ``fit_s_per_op`` x :data:`FIT_MARGIN` an op, for the ``ops`` measured so far and
    those the later phases will measure at the rate so far (``ops`` / the seconds spent). With no
    op measured yet (no rate to go by), the later phases keep their seconds and the fit's are
    unknown (NaN).

    >>> plan = (Phase("a", 0, "generic", 0.25), Phase("b", 0, "generic", 0.75))
    >>> seconds, fit_s = rescale_seconds(plan, {"a": 45, "b": 135}, {"a": 50, "b": 0}, "a",
    ...                                  budget_s=240, ops=1000, fit_s_per_op=0.01)
    >>> seconds, round(fit_s, 1)
    ({'a': 50.0, 'b': 134.127}, 47.9)
    >>> round(sum(seconds.values()) + fit_s + FIT_FIXED_S)
    240
    >>> rescale_seconds(plan, {"a": 0.5, "b": 1.5}, {"a": 0.0, "b": 0.0}, "a", budget_s=3,
    ...                 ops=0, fit_s_per_op=0.01)
    ({'a': 0.0, 'b': 1.5}, nan)
    """
    names = [p.name for p in plan]
    later = plan[names.index(done) + 1 :]
    spent_s = sum(spent[n] for n in names[: names.index(done) + 1])
    out = {n: round(float(spent[n]), 3) for n in names[: names.index(done) + 1]}
    if ops <= 0 or spent_s <= 0:
        return {**out, **{p.name: float(seconds[p.name]) for p in later}}, math.nan
    per_op = fit_s_per_op * FIT_MARGIN
    rate = ops / spent_s
    # spent + rest + per_op * (ops + rate * rest) + FIT_FIXED_S = budget
    rest = max((budget_s - spent_s - FIT_FIXED_S - per_op * ops) / (1 + per_op * rate), 0.0)
    share = sum(p.share for p in later)
    out.update({p.name: round(rest * p.share / share, 3) for p in later})
    return out, per_op * (ops + rate * rest)


def learn_command(args: argparse.Namespace) -> int:
    """Carry out ``tacopt learn`` (:func:`tacopt.cost_models.cli.learn.run_learn`)."""
    minutes = args.minutes if args.minutes is not None else (3.0 if args.base else 15.0)
    check_output_path(args.out, what="-o", writes=json_file_kind(args.out))
    records = args.records or records_path(args.out)
    if records.exists():
        check_records_file(records, what="--records")
    base_doc = None
    if args.base is not None:
        base_doc = read_learned_doc(args.base, anchored=True)
    plan = ADAPT_PLAN if base_doc is not None else FULL_PLAN
    state_file = records.with_name(records.name + ".state.json")
    state = _read_state(state_file, plan, minutes, base=str(args.base) if args.base else None)
    # a resumed run keeps the seconds its phases were re-sized to
    seconds = state.get("seconds") or plan_seconds(plan, minutes)
    print(
        f"learn: {minutes:g} min budget, {sum(seconds.values()) / 60:.1f} min measuring in "
        f"{len(plan)} phase(s) ({', '.join(f'{k} {v / 60:.1f}' for k, v in seconds.items())}), "
        f"then the fit; records {records}",
        file=sys.stderr,
    )
    if base_doc is not None:
        target = companion_name(args.resolver, args.threads)
        print(f"learn: {starting_line(args.base, base_doc, target)}", file=sys.stderr)
    records.parent.mkdir(parents=True, exist_ok=True)
    bar = _Bar(sum(seconds.values()), quiet=args.quiet, spent_s=sum(state["spent_s"].values()))
    meter = None  # one gate and speed tracker for every phase (measure.Meter), made at first use
    others = OtherLoad.start()
    phase = plan[0]
    try:
        for phase in plan:
            meter = _run_phase(
                phase, seconds[phase.name], records, args, state, state_file, bar, base_doc, meter
            )
            if phase != plan[-1]:
                per_op = fit_cost_per_op(base_doc is not None, others.share())
                seconds = _replan(plan, phase.name, minutes, records, state, state_file, bar,
                                  per_op=per_op, quiet=args.quiet)  # fmt: skip
    except KeyboardInterrupt:
        bar.close()
        print(
            f"learn: stopped in phase {phase.name} ({sum(state['spent_s'].values()):.0f} s of "
            f"{sum(seconds.values()):.0f} measured); what it measured is kept in {records}. "
            "Run the same command again to go on where it stopped.",
            file=sys.stderr,
        )
        raise
    finally:
        bar.close()
    return _fit_and_write(args, records, base_doc, state, others.share())


def _companion(args: argparse.Namespace, base_doc: Mapping[str, Any] | None) -> str | None:
    """The kernel-set companion of ``--from``'s model for ``--resolver`` and ``--threads``
    (:func:`~tacopt.cost_models.learned.fitting.companion.pick_companion`), if any."""
    if base_doc is None:
        return None
    return pick_companion(base_doc, args.resolver, args.threads)


def _replan(
    plan: tuple[Phase, ...],
    done: str,
    minutes: float,
    records: Path,
    state: dict[str, Any],
    state_file: Path,
    bar: _Bar,
    *,
    per_op: float,
    quiet: bool,
) -> dict[str, float]:
    """:func:`rescale_seconds` after phase ``done`` on the quiet ops measured so far, kept in
    the state file (a resume goes on with them) and shown on the bar."""
    measured = quiet_records(read_records(records)) if records.exists() else []
    ops = sum(1 for r in measured if r.get("type") == "op")
    old = state.get("seconds") or plan_seconds(plan, minutes)
    seconds, fit_s = rescale_seconds(
        plan, old, state["spent_s"], done, budget_s=minutes * 60.0, ops=ops,
        fit_s_per_op=per_op,
    )  # fmt: skip
    state["seconds"] = seconds
    if not math.isnan(fit_s):
        state["fit_s"] = round(fit_s, 1)
    _save_state(state_file, state)
    bar.resize(sum(seconds.values()))
    names = [p.name for p in plan]
    later = names[names.index(done) + 1 :]
    moved = any(abs(seconds[n] - old[n]) >= 1.0 for n in later)  # one line per change
    if not quiet and not math.isnan(fit_s) and moved:
        bar.write(
            f"learn: {ops} ops so far in {sum(state['spent_s'].values()):.0f} s; the fit of "
            f"them and of those to come should take ~{fit_s:.0f} s, so the rest measures for "
            f"{sum(seconds[n] for n in later) / 60:.1f} min "
            f"({', '.join(f'{n} {seconds[n] / 60:.1f}' for n in later)})"
        )
    return seconds


def _read_state(path: Path, plan: tuple[Phase, ...], minutes: float, base: str | None) -> dict:
    spent_none = {p.name: 0.0 for p in plan}
    fresh: dict[str, Any] = {"minutes": minutes, "base": base, "spent_s": spent_none}
    if not path.exists():
        return fresh
    try:
        state = json.loads(path.read_text())
        spent = {str(k): float(v) for k, v in state["spent_s"].items()}
        seconds = {str(k): float(v) for k, v in state.get("seconds", spent).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise MeasureError(
            f"learn: state file '{path}' is broken; delete it to start over"
        ) from None
    if (
        set(spent) != set(fresh["spent_s"])
        or set(seconds) != set(spent)
        or state.get("base") != base
    ):
        raise MeasureError(
            f"learn: '{path}' belongs to another kind of learn run (phases {sorted(spent)}, "
            f"--from {state.get('base')}); give another --records or delete it"
        )
    if "seconds" in state:  # re-sized after a phase (:func:`_replan`)
        return {**fresh, "spent_s": spent, "seconds": seconds, "fit_s": state.get("fit_s")}
    return {**fresh, "spent_s": spent}


def _save_state(path: Path, state: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True) + "\n")
    tmp.replace(path)


class _Bar:
    """A progress bar over the measuring budget (seconds), with the ops measured and an ETA.

    ``spent_s``: measured before (a resumed run); the ETA follows this run's pace only (as the
    bar's initial value, tqdm leaves it out of the rate: a resume at 30 of 90 s showed 00:08
    left when it counted from 0)."""

    def __init__(self, total_s: float, *, quiet: bool, spent_s: float = 0.0) -> None:
        self.bar = None
        if not quiet and sys.stderr.isatty():
            self.bar = tqdm(
                total=round(total_s),
                initial=min(round(spent_s), round(total_s)),
                unit="s",
                file=sys.stderr,
                bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} s [{elapsed}<{remaining}] {postfix}",
            )

    def write(self, line: str) -> None:
        """Print a line on stderr above the bar (not over it)."""
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr)

    def resize(self, total_s: float) -> None:
        """A new measuring budget (the phases re-sized)."""
        if self.bar is not None:
            self.bar.total = round(total_s)
            self.bar.refresh()

    def show(self, spent_s: float, text: str) -> None:
        if self.bar is not None:
            self.bar.n = min(spent_s, self.bar.total)
            self.bar.set_postfix_str(text, refresh=False)
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _measure_config(args: argparse.Namespace, adapting: bool) -> Any:
    samples, instances = ADAPT_SAMPLES if adapting else LEARN_SAMPLES
    return MeasureConfig(
        threads=args.threads, resolver=args.resolver, quiet_target=QUIET_TARGET, chunk=LEARN_CHUNK,
        passes=2, retry_rounds=RETRY_ROUNDS, samples=samples, rounds=instances,
    )  # fmt: skip


def _run_phase(
    phase: Phase,
    budget_s: float,
    records: Path,
    args: argparse.Namespace,
    state: dict[str, Any],
    state_file: Path,
    bar: _Bar,
    base_doc: Mapping[str, Any] | None,
    meter: Meter | None,
) -> Meter | None:
    spent = state["spent_s"]
    before = spent[phase.name]
    left = budget_s - before
    if left <= 1.0:
        return meter
    t0 = time.monotonic()
    try:
        return _measure_phase(
            phase, budget_s, left, records, args, state, state_file, bar, base_doc, meter
        )
    except KeyboardInterrupt:  # the time it measured counts: a resume gives it the rest
        spent[phase.name] = min(before + time.monotonic() - t0, budget_s)
        _save_state(state_file, state)
        raise


def _measure_phase(
    phase: Phase,
    budget_s: float,
    left: float,
    records: Path,
    args: argparse.Namespace,
    state: dict[str, Any],
    state_file: Path,
    bar: _Bar,
    base_doc: Mapping[str, Any] | None,
    meter: Meter | None,
) -> Meter | None:
    spent = state["spent_s"]
    silence_xnnpack_banner()
    t0 = time.monotonic()
    before = sum(spent.values())
    weights, chain, ops_per_chain = PRIORS[phase.prior]
    if phase.chain_prior is not None:
        _, chain, ops_per_chain = PRIORS[phase.chain_prior]
    weights = _phase_weights(phase, weights, records, base_doc, _companion(args, base_doc))
    if phase.weights == "differs" and weights and not args.quiet:
        top = sorted(weights, key=lambda k: (-weights[k], k))[:6]
        bar.write(f"learn: phase {phase.name}: most samples where the probes found the base "
                  f"furthest off: {', '.join(top)}")  # fmt: skip
    counted = [0]

    def progress(done: int, total: int, label: str) -> None:
        counted[0] += 1
        now = time.monotonic() - t0
        if counted[0] % 8 == 0:
            bar.show(before + now, f"{phase.name}: {label.split(':')[0][:24]}")

    ops_s = left * (1 - phase.chain_share) if phase.chains else left
    cap = _measured(records, phase.seed) + int(left * MAX_RATE)
    # each op's samples in two passes, a third of the phase apart (at most two minutes)
    gap = min(max(ops_s / 3, 20.0), 120.0)
    cfg = replace(_measure_config(args, base_doc is not None), pass_gap_s=gap)
    meter = meter or Meter.start(cfg)
    stats = measure_graphs(
        iter_samples(cap, seed=phase.seed, weights=weights),
        records,
        cfg,
        max_s=max(ops_s - (time.monotonic() - t0), 1.0),
        progress=progress,
        meter=meter,
    )
    spent[phase.name] += time.monotonic() - t0
    _save_state(state_file, state)
    if phase.chains:
        t1 = time.monotonic()
        n = _measured(records, phase.seed) // ops_per_chain
        _measure_chains(records, cfg, meter, phase.seed, n, chain, budget_s - spent[phase.name],
                        bar, before + time.monotonic() - t0, phase.name)  # fmt: skip
        spent[phase.name] += time.monotonic() - t1
        _save_state(state_file, state)
    if not args.quiet:
        bar.write(
            f"learn: phase {phase.name}: {stats['measured']} ops measured "
            f"({stats['skipped']} skipped), {spent[phase.name]:.0f} s of {budget_s:.0f}"
        )
    return meter


def _phase_weights(
    phase: Phase,
    weights: Mapping[str, float] | None,
    records: Path,
    base_doc: Mapping[str, Any] | None,
    companion: str | None = None,
) -> Mapping[str, float] | None:
    if phase.weights == "adaptive":
        return adaptive_weights(read_records(records), seed=phase.seed)
    if phase.weights == "uncertain":
        assert base_doc is not None
        return uncertain_weights(base_doc)
    if phase.weights == "differs":  # on the earlier phases' records (the same on a resume)
        assert base_doc is not None
        tag = f":{phase.seed}:"
        measured = quiet_records(read_records(records)) if records.exists() else []
        probes = [r for r in measured if tag not in str(r.get("model"))]
        return differing_weights(base_doc, probes, companion=companion)
    return weights


def _measured(records: Path, seed: int) -> int:
    """Sampled op records of ``seed`` in ``records`` (labels ``KIND:seed:i``)."""
    if not records.exists():
        return 0

    tag = f":{seed}:"
    return sum(
        1
        for r in read_records(records)
        if r.get("type") in ("op", "skip") and tag in str(r.get("model", ""))
    )


def _measure_chains(
    records: Path,
    cfg: Any,
    meter: Meter,
    seed: int,
    n: int,
    chain: Callable[[int, int], Any],
    left_s: float,
    bar: _Bar,
    before_s: float,
    name: str,
) -> None:
    """Chain models ``0..n-1`` of ``seed``, a few at a time, until ``left_s`` is spent."""
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, n, 4):
            if time.monotonic() - t0 >= left_s:
                break
            graphs = [chain(seed, i) for i in range(start, min(start + 4, n))]
            paths = [write_tflite(G, Path(tmp) / f"{G.graph['name']}.tflite") for G in graphs]
            measure_models(paths, records, cfg, meter=meter)
            done = min(start + 4, n)
            bar.show(before_s + time.monotonic() - t0, f"{name}: chain models {done}/{n}")


def _fit_and_write(
    args: argparse.Namespace,
    records: Path,
    base_doc: Mapping[str, Any] | None,
    state: Mapping[str, Any],
    others_share: float = math.nan,
) -> int:
    """Fit (or adapt) on the records and write ``-o``. ``others_share``: the share of the cores
    other processes kept busy during the run (:class:`OtherLoad`); only then does a run that
    set many samples aside tell the user to learn again when it is quiet."""
    t0 = time.monotonic()
    measured = read_records(records)
    recs = quiet_records(measured)  # as fit() does; adapt() takes the same
    ops = sum(1 for r in recs if r.get("type") == "op")
    slow = sum(1 for r in measured if r.get("type") == "op") - ops
    with all_or_nothing([("-o", args.out)]) as out:
        if base_doc is not None:
            try:
                doc = guarded_adapt(base_doc, recs, companion=_companion(args, base_doc))
            except ValueError as exc:
                raise MeasureError(f"learn: {exc} (give more --minutes)") from None
        else:
            doc = fit(recs)
        rejected = rejected_share(measured)
        doc["learn"] = {
            "minutes": state["minutes"],
            "measured_s": round(sum(state["spent_s"].values()), 1),
            "ops": ops,
            "from": state.get("base"),
            **({"companion": doc["adapted"]["companion"]} if base_doc is not None
               and doc["adapted"].get("companion") else {}),  # fmt: skip
            "rejected_share": round(rejected, 3),
            "left_out": slow,
            **({} if math.isnan(others_share) else {"other_load_share": round(others_share, 3)}),
        }
        out.write(args.out, model_bytes(doc, args.out))
    print(
        f"wrote {args.out}: {ops} ops measured in {sum(state['spent_s'].values()) / 60:.1f} min, "
        f"fitted in {time.monotonic() - t0:.0f} s"
        + (f" ({slow} more left out: no quiet sample)" if slow else "")
        + (f" (expected ~{state['fit_s']:.0f} s)" if state.get("fit_s") is not None else "")
        + (" (adapted from --from)" if base_doc is not None else "")
    )
    if base_doc is not None:
        print("per kernel family, as judged on the ops the fit did not see:")
        print("\n".join(choice_lines(doc["adapted"])) or "  (no probes: the base everywhere)")
    busy = math.isnan(others_share) or others_share >= CONTENTION_SHARE
    if rejected >= BUSY_SHARE and busy:
        print(
            f"learn: other processes kept {_share_text(others_share)} of the cores busy, and "
            f"{rejected:.0%} of the timing samples fell in slow episodes and were set aside, so "
            f"the model rests on {ops} ops; learn again when nothing else runs, or with more "
            "--minutes",
            file=sys.stderr,
        )
    return 0


def _share_text(share: float) -> str:
    return "an unknown share" if math.isnan(share) else f"{share:.0%}"


#: Share of timing samples set aside (taken in a slow episode of the machine) above which
#: ``tacopt learn`` says the machine was busy: a normal 15-minute learn here sets aside ~25 %; a
#: 3-minute adaptation in a slow episode set aside 66 % and measured 400 ops instead of ~1,000
#: (and gained nothing).
BUSY_SHARE = 0.5


def rejected_share(records: Sequence[Mapping[str, Any]]) -> float:
    """Share of the op records' timing samples that the probe set aside as not quiet.

    >>> rejected_share([{"type": "op", "repeats": 16, "rejected": 4}, {"type": "model"}])
    0.25
    >>> rejected_share([])
    0.0
    """
    ops = [r for r in records if r.get("type") == "op"]
    taken = sum(int(r.get("repeats", 0)) for r in ops)
    return sum(int(r.get("rejected", 0)) for r in ops) / taken if taken else 0.0

"""The ops of a measurement run waiting to be timed: chunks, passes and ops put back.

Ops are timed in chunks of ``chunk`` new ops (the knobs are
:class:`~tacopt.cost_models.learned.measurement.timing.MeasureConfig`'s), together with the
reference models (:mod:`~tacopt.cost_models.learned.measurement.speed`).
With ``passes`` > 1 an op's samples are split over passes: after its first pass an op is *parked*
(its interpreter released) and joins a later chunk once ``pass_gap_s`` has passed, so its passes
are far apart in time. On this VM a slow episode (another tenant's load) can last a minute and
slow every op timed in it by 15-20 %: in two runs of the zoo's test half an hour apart, one
model's 150 ops measured in one such episode made 60 % of the ops that disagreed. The fastest
sample over passes a few minutes apart sees the fast state unless both passes fall into episodes.
An op with no quiet sample after its passes is put back the same way, up to ``defer`` times.

An op's record is written when its last pass is done; :meth:`OpQueue.on_written` lets the driver
write a model's record after its ops'. Ops still parked when a run is killed are lost and timed
again when it resumes (their records were never written).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from tacopt.cost_models.learned.measurement.custom_ops import stand_in_model
from tacopt.cost_models.learned.measurement.records import write_record
from tacopt.cost_models.learned.measurement.speed import SpeedTracker, reference_models
from tacopt.cost_models.learned.measurement.timing import (
    POSITIVE_DOMAIN,
    Gate,
    MeasureConfig,
    Timer,
    Timing,
    run_pass,
)


@dataclass(slots=True)
class _Op:
    """An op waiting: its record's base fields, its features, its single-op model, its timer
    (None until its first pass), when it was parked and how many times it was put back."""

    base: dict[str, Any]
    feats: dict[str, Any]
    model: bytes
    timer: Timer | None = None
    parked_at: float = 0.0
    tries: int = 0


class OpQueue:
    """The run's ops waiting to be timed, written to ``f`` as their last pass is done.

    ``knobs()`` gives the run's fields for each record (overhead, speed, device); ``stats``
    counts ``measured`` and ``skipped``.
    """

    def __init__(
        self,
        f: TextIO,
        cfg: MeasureConfig,
        gate: Gate,
        tracker: SpeedTracker,
        knobs: Callable[[], dict[str, Any]],
        stats: dict[str, int],
    ) -> None:
        self.f, self.cfg, self.gate, self.tracker = f, cfg, gate, tracker
        self.knobs, self.stats = knobs, stats
        self.fresh: list[_Op] = []
        self.parked: deque[_Op] = deque()
        self.written: Callable[[str], None] = lambda key: None

    def on_written(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(key)`` after each op or skip record written from here."""
        self.written = callback

    def __len__(self) -> int:
        return len(self.fresh) + len(self.parked)

    def submit(self, base: dict[str, Any], feats: dict[str, Any], model: bytes) -> None:
        """Queue an op; a chunk is timed once ``chunk / passes`` new ops wait (with the
        parked ops due, about ``chunk`` ops, each timed for one pass)."""
        self.fresh.append(_Op(base, feats, model))
        if len(self.fresh) >= self._fresh_per_chunk():
            self.step()

    def _fresh_per_chunk(self) -> int:
        return max(-(-self.cfg.chunk // max(self.cfg.passes, 1)), 1)

    def drain(self, deadline: float | None = None) -> None:
        """Time every op left, parked ones without waiting for their gap (the run's last ops
        get less time between passes). Past ``deadline`` (a ``time.perf_counter()`` value), the
        new ops still waiting get one pass (a partial chunk, as a chunk started before the
        deadline ends after it) and every op is written with the passes it had."""
        while self.fresh or self.parked:
            if deadline is not None and time.perf_counter() >= deadline:
                while self.fresh:
                    self.step(now=-math.inf)  # the new ops only: no parked op is due
                self._write_now()
                return
            if not self.fresh and all(op.tries for op in self.parked):
                self.gate.wait(self.cfg.max_wait_s)  # only ops put back: wait for quiet first
            self.step(now=float("inf"))

    def keep_timed(self) -> int:
        """Write every parked op (timed for at least one pass) with the samples it has, and
        forget the ops not timed yet; how many were written. For a run cut short (Ctrl-C): what
        it measured stays in the records."""
        self.fresh.clear()
        kept = [op for op in self.parked if op.timer is not None and op.timer.cpu]
        self.parked = deque(kept)
        self._write_now()
        return len(kept)

    def _write_now(self) -> None:
        run_knobs = self.knobs()
        while self.parked:
            op = self.parked.popleft()
            assert op.timer is not None
            self._write_op(op, op.timer.timing(self.gate), run_knobs)

    def step(self, now: float | None = None) -> None:
        """Time one chunk: up to ``chunk / passes`` new ops and up to ``chunk`` parked ops
        due by ``now``."""
        now = time.perf_counter() if now is None else now
        n = self._fresh_per_chunk()
        chunk, self.fresh = self.fresh[:n], self.fresh[n:]
        limit = n + max(self.cfg.chunk, 1)
        while self.parked and len(chunk) < limit:
            if now - self.parked[0].parked_at < self.cfg.pass_gap_s:
                break
            chunk.append(self.parked.popleft())
        if chunk:
            self._time(chunk)

    def _time(self, chunk: list[_Op]) -> None:
        cfg = self.cfg
        refs = reference_models()
        ref_timers = [
            Timer(m, None, cfg, seed=cfg.seed, samples=cfg.samples) for m in refs.values()
        ]
        ready: list[_Op] = []
        for op in chunk:
            if op.timer is None:
                try:
                    op.timer = Timer(
                        op.model, None, cfg, seed=cfg.seed, samples=cfg.samples,
                        passes=cfg.passes, positive=op.feats.get("kind") in POSITIVE_DOMAIN,
                    )  # fmt: skip
                except Exception as exc:  # the runtime refused this op
                    first = (str(exc).splitlines() or [""])[0][:160]
                    op.timer = self._stand_in_timer(op)
                    if op.timer is None:
                        self._write({"type": "skip", **op.base, **op.feats,
                                     "reason": f"runtime: {type(exc).__name__}: {first}",
                                     "device": self.knobs()["device"]})  # fmt: skip
                        self.stats["skipped"] += 1
                        continue
            ready.append(op)
        run_pass([*ref_timers, *(op.timer for op in ready if op.timer is not None)], cfg, self.gate)
        # a reference timed with no quiet sample (a slow episode through the chunk) would move
        # the speed every record carries; it counts only while its reference has no other read
        seen = self.tracker.history
        timings = {n: t.timing(self.gate) for n, t in zip(refs, ref_timers)}
        self.tracker.add({n: t.latency_us for n, t in timings.items() if t.quiet or n not in seen})
        run_knobs = self.knobs()  # the overhead as re-calibrated up to now
        now = time.perf_counter()
        for op in ready:
            timer = op.timer
            assert timer is not None
            if timer.done:
                t = timer.timing(self.gate)
                if t.quiet or op.tries >= cfg.defer:
                    self._write_op(op, t, run_knobs)
                    continue
                op.tries += 1  # no quiet sample: put back, timed again after the gap
            timer.park()
            op.parked_at = now
            self.parked.append(op)

    def _stand_in_timer(self, op: _Op) -> Timer | None:
        """A timer of the stand-in of a custom op the runtime cannot run (its rule's graph of
        builtin ops, :mod:`~tacopt.cost_models.learned.measurement.custom_ops`), the record
        naming the rule (``priced_by``); None when no rule covers the op."""
        found = stand_in_model(op.feats, seed=self.cfg.seed)
        if found is None:
            return None
        op.base["priced_by"], op.model = found
        cfg = self.cfg
        return Timer(op.model, None, cfg, seed=cfg.seed, samples=cfg.samples, passes=cfg.passes)

    def _write_op(self, op: _Op, t: Timing, run_knobs: Mapping[str, Any]) -> None:
        self._write({"type": "op", **op.base, **op.feats, **timing_fields(t), **run_knobs})
        self.stats["measured"] += 1

    def _write(self, record: Mapping[str, Any]) -> None:
        write_record(self.f, record)
        self.written(str(record["key"]))


def timing_fields(t: Timing) -> dict[str, Any]:
    """A timing's fields in a record."""
    return {
        "latency_us": round(t.latency_us, 4),
        "latency_median_us": round(t.latency_median_us, 4),
        "wall_us": round(t.wall_us, 4),
        "wall_median_us": round(t.wall_median_us, 4),
        "batch": t.batch,
        "repeats": t.samples,
        "rejected": t.rejected,
        "quiet": t.quiet,
        "instances": t.instances,
        **({} if t.delegated is None else {"delegated": t.delegated}),
    }

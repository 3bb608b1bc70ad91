"""Timing single-op and whole models on ai-edge-litert, gated on the machine's speed.

How an op is timed (:func:`time_models`; chosen by measuring repeatability across runs with
``python -m tacopt.benchmarks check_repeatability``, see docs/cost-models.md): warm-up, then
samples, each a batch of back-to-back ``invoke()`` calls lasting >= 1 ms (per-invoke time = batch
time / batch size, which amortises the clock reads and the timing loop), taken in 8 rounds
interleaved over 48 ops so one op's samples are spread over seconds (``tacopt measure`` splits
them over two passes minutes apart: :mod:`~tacopt.cost_models.learned.measurement.queue`), each
round on a new
interpreter instance (a fresh copy of the model: where tensors and constants land in memory
changes some ops' latency by up to 40 %). The latency is the op's *fastest* sample of the calling
thread's CPU time, over every instance: on this (virtual, 2-vCPU) machine timing noise is only
ever upward -- work on the other vCPU or elsewhere on the host slows an op by 1.1-1.9x, thread
CPU time included, in episodes of milliseconds to seconds -- so the fastest of many samples
spread over time is the statistic that repeats (two passes over the same 259 ops while another
process ran: 94 % within +-10 % with the fastest of 24 samples over 8 instances, 68 % with the
median over 3 instances of each one's fastest quiet sample, the method before).

Every sample is bracketed by two reads of a probe (:class:`Gate`: 0.5 ms of invokes of a
one-element model); it is *quiet* when both show the machine in its fast state (<= 1.15 x the
probe's 5th percentile). An op short of quiet samples gets more, each after waiting for the
machine to be quiet, so an op measured through a long slow episode is measured again after it.
The median quiet sample and the wall-clock figures are recorded next to the latency.

``latency_us`` is the latency of one ``invoke()`` of the single-op model, the fixed cost of the
Python call included. That cost (``overhead_us`` in every record) is the median quiet probe
read, re-calibrated all through the run; learned models predict the latency net of it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.measurement.fingerprint import RESOLVERS, check_resolver
from tacopt.fusion.ir import Op, Tensor, make_graph
from tacopt.fusion.tflite.writer import serialize_tflite


@dataclass(frozen=True, slots=True)
class MeasureConfig:
    """Knobs of a measurement run (the timing ones are written into every record).

    Each sample is a batch of back-to-back ``invoke()`` calls lasting at least ``sample_s``;
    an op gets ``samples`` samples taken in ``rounds`` interleaved rounds over ``chunk`` ops,
    fewer when they would take more than ``max_time_s`` (at least ``min_samples``), each round on
    a new interpreter instance. Each sample is bracketed by reads of the probe (:class:`Gate`: a
    batch of ``probe_s`` of a one-element model, ``probe_reads`` reads to start, then more,
    a few ms apart, for ``calibrate_s``, so that the fast state is seen even when the run starts
    in a slow episode); it is *quiet*
    when both reads are <= ``gate`` x the fast-state probe time. An op with fewer than
    ``quiet_target`` quiet samples gets up to ``retry_rounds`` more passes, each extra sample after
    waiting up to ``wait_s`` for the machine to be quiet, at most ``max_wait_s`` of waiting per
    chunk and ``run_wait_s`` per :class:`Gate` (per run); an op left without a quiet sample is
    put back, up to ``defer`` times, to be timed again later in the run. With ``passes`` > 1
    (``tacopt measure``: 2) an op's samples are split over that many passes, at least
    ``pass_gap_s`` apart where the run is long enough, each on new instances: a slow episode of
    the machine can last a minute and cover every sample of one pass. Its latency is its
    fastest sample of thread CPU time per invoke, over every instance (wall-clock time with
    ``threads`` > 1: the kernels then run on other threads too). Whole models get
    ``model_samples``.

    ``resolver`` names the kernels
    (:data:`tacopt.cost_models.learned.measurement.fingerprint.RESOLVERS`): ``xnnpack`` (LiteRT's
    default, the XNNPACK delegate), ``builtin`` (LiteRT's optimized builtin kernels without default
    delegates) or ``ref`` (its reference kernels).
    """

    threads: int = 1
    resolver: str = "xnnpack"
    warmup: int = 3
    samples: int = 16
    min_samples: int = 3
    rounds: int = 8
    chunk: int = 48
    sample_s: float = 0.001
    max_time_s: float = 0.3
    model_samples: int = 7
    model_max_time_s: float = 2.0
    probe_s: float = 0.0005
    probe_reads: int = 40
    calibrate_s: float = 1.5
    gate: float = 1.15
    retry_rounds: int = 3
    wait_s: float = 1.0
    max_wait_s: float = 10.0
    run_wait_s: float = 600.0
    quiet_target: int = 3
    defer: int = 2
    passes: int = 1
    pass_gap_s: float = 120.0
    seed: int = 0

    def knobs(self) -> dict[str, Any]:
        """The timing knobs as written into records."""
        clock = "wall" if self.wall_clock else "thread-cpu"
        return {
            "threads": self.threads,
            "resolver": self.resolver,
            "method": f"min-{clock}/{self.samples}x{self.sample_s * 1e3:g}ms/{self.rounds}r"
            f"/gate{self.gate:g}/q{self.quiet_target}"
            + (f"/p{self.passes}" if self.passes > 1 else ""),
        }

    @property
    def wall_clock(self) -> bool:
        """Whether latencies are taken on the wall clock (several interpreter threads) rather
        than on the calling thread's CPU time (one thread: every kernel runs on it)."""
        return self.threads > 1

    def interpreter(self, model: bytes) -> Any:
        """A LiteRT interpreter of ``model`` with this run's threads and op resolver."""
        # Deferred: LiteRT (ai_edge_litert, ~0.3 s to import) only when something is timed.
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        kind = RESOLVERS[check_resolver(self.resolver)][0]
        return Interpreter(
            model_content=bytes(bytearray(model)),
            num_threads=self.threads,
            experimental_op_resolver_type=OpResolverType[kind],
        )


@dataclass(frozen=True, slots=True)
class Timing:
    """Per-``invoke()`` latency of one model, CPU and wall clock.

    ``cpu_us`` (the figure records call ``latency_us``, unless ``wall_clock``: then ``wall_us``
    is) is the fastest sample of the calling thread's CPU time (``time.thread_time_ns``: with one
    interpreter thread the kernels run on the caller, so preemption by other processes is not
    counted), over every sample of every interpreter instance: contention only ever slows a
    sample, so the fastest of many, spread over time and memory placements, is the one that
    repeats. ``cpu_median_us`` is the median *quiet* sample (the probe read just before and
    just after shows the machine in its fast state, see :class:`Gate`), over every sample when
    none was quiet (then ``quiet`` is False). ``samples`` samples were taken on ``instances``
    instances; ``rejected`` of them were not quiet.
    """

    cpu_us: float
    cpu_median_us: float
    wall_us: float
    wall_median_us: float
    batch: int
    samples: int
    rejected: int = 0
    quiet: bool = True
    instances: int = 1
    wall_clock: bool = False
    #: whether the run's delegate took the op (None: the resolver has no delegate)
    delegated: bool | None = None

    @property
    def latency_us(self) -> float:
        """The latency records carry: ``cpu_us``, or ``wall_us`` when taken on the wall clock
        (several interpreter threads, :attr:`MeasureConfig.wall_clock`)."""
        return self.wall_us if self.wall_clock else self.cpu_us

    @property
    def latency_median_us(self) -> float:
        return self.wall_median_us if self.wall_clock else self.cpu_median_us


class Gate:
    """The machine's speed, read by a probe between samples, and the invoke overhead.

    On this (virtual, 2-core) machine the CPU alternates between a fast state and slow episodes
    of milliseconds to seconds in which *everything* runs 1.1-1.8x slower, thread CPU time
    included (not preemption; presumably contention on the host). A single-op timing taken in a
    slow episode is wrong whatever the statistic when the episode covers all its samples. The
    probe is a one-element NEG model invoked in a batch of ``cfg.probe_s``; its per-invoke CPU
    time is the fixed cost of a Python ``invoke()`` call. Every sample of every op is bracketed
    by two probe reads; the sample is *quiet* when both are <= ``cfg.gate`` x the reference (the
    5th percentile of every probe read so far). :meth:`overhead_us` (the invoke overhead the records
    carry) is the median of the quiet probe reads: re-calibrated all through the run, not once.

    >>> g = Gate(MeasureConfig(probe_reads=5, calibrate_s=0.0))
    >>> 0 < g.overhead_us() and 0 < g.reference() and g.is_quiet(g.reference())
    True
    """

    def __init__(self, cfg: MeasureConfig) -> None:
        self.cfg = cfg
        probe_cfg = replace(cfg, sample_s=cfg.probe_s)
        self._probe = Timer(serialize_tflite(neg_graph()), None, probe_cfg, seed=0, samples=1)
        self.reads: list[float] = []
        self._ref = math.inf
        self._ref_at = 0
        self.waited_s = 0.0  # time spent in wait(), against cfg.run_wait_s
        self.last = math.inf  # the latest probe read
        deadline = time.perf_counter() + cfg.calibrate_s
        for _ in range(max(cfg.probe_reads, 1)):
            self.read()
        # a run started in a slow episode (the other vCPU busy for seconds) would otherwise
        # take the slow state for the fast one: the first model of a run measured 1.3-1.8x slow
        while time.perf_counter() < deadline:
            time.sleep(0.005)
            self.read()

    def read(self) -> float:
        """One probe read: per-invoke thread CPU time (us) of a batch of the probe model."""
        invoke, n = self._probe.invoke, self._probe.batch
        c0 = time.thread_time_ns()
        for _ in range(n):
            invoke()
        v = (time.thread_time_ns() - c0) / 1e3 / n
        self.reads.append(v)
        self.last = v
        return v

    def reference(self) -> float:
        """The fast state's probe time: 5th percentile of the reads so far (refreshed as they
        grow by 5 %)."""
        if len(self.reads) > self._ref_at * 1.05:
            self._ref = float(np.percentile(self.reads, 5))
            self._ref_at = len(self.reads)
        return self._ref

    def is_quiet(self, probe_us: float) -> bool:
        return probe_us <= self.cfg.gate * self.reference()

    def wait(self, max_s: float) -> bool:
        """Poll the probe (sleeping between reads) until the machine is quiet or ``max_s`` has
        passed, or the run's waiting budget (``cfg.run_wait_s``) is spent; True when quiet."""
        start = time.perf_counter()
        deadline = start + min(max_s, max(self.cfg.run_wait_s - self.waited_s, 0.0))
        try:
            while not self.is_quiet(self.read()):
                if time.perf_counter() >= deadline:
                    return False
                time.sleep(0.01)
            return True
        finally:
            self.waited_s += time.perf_counter() - start

    def overhead_us(self) -> float:
        """Latency of ``invoke()`` on the one-element probe model: median of the quiet reads."""
        return float(statistics.median(v for v in self.reads if self.is_quiet(v)))


class Timer:
    """A model to time: interpreters of it ready to invoke, the batch size chosen (on the
    first) so a sample lasts ``sample_s``, and the samples taken so far.

    Each :meth:`new_instance` builds another interpreter from a fresh copy of the model: the
    latency of some ops depends on where their tensors and constants land in memory (the same
    MUL measured 1.3 or 1.8 us depending on the instance), so an op is timed on several.

    Its ``target`` samples are taken in ``passes`` calls of :func:`run_pass`; between passes
    :meth:`park` releases the interpreter and the inputs (drawn again, the same, from the seed).
    """

    def __init__(
        self,
        model: bytes,
        inputs: Mapping[str, np.ndarray] | None,
        cfg: MeasureConfig,
        *,
        seed: int,
        samples: int,
        passes: int = 1,
        positive: bool = False,
    ) -> None:
        self.model, self.inputs, self.cfg, self.seed = model, inputs, cfg, seed
        #: random float inputs drawn positive (:data:`POSITIVE_DOMAIN`)
        self.positive = positive
        self.passes, self.passes_done = max(passes, 1), 0
        self.values: list[np.ndarray] = []  # the inputs of the first instance, reused after
        self.instances = 0  # instances built so far; samples go to the latest
        self.delegated: bool | None = None  # read off the first instance
        self.invoke = self.new_instance()
        interp_invoke = self.invoke
        n = 1
        # CPU time: a preempted calibration does not shrink the batch (wall time when other
        # threads run kernels too)
        clock = time.perf_counter if cfg.wall_clock else time.thread_time
        while True:  # calibrate: batches of 1, 4, 16, ... invokes until one lasts sample_s / 4
            t0 = clock()
            for _ in range(n):
                interp_invoke()
            elapsed = clock() - t0
            if elapsed >= cfg.sample_s / 4 or n >= 100_000:
                break
            n *= 4
        per_s = max(elapsed / n, 1e-7)
        self.batch = max(1, min(int(math.ceil(cfg.sample_s / per_s)), 100_000))
        budget = max(int(cfg.max_time_s / (per_s * self.batch)), cfg.min_samples)
        self.target = max(min(samples, budget), 1)
        self.cpu: list[float] = []
        self.wall: list[float] = []
        self.probes: list[float] = []  # the slower of the two probe reads around each sample
        self.instance: list[int] = []  # which instance each sample was taken on

    def new_instance(self) -> Callable[[], object]:
        """A new interpreter on a fresh copy of the model, inputs set and warmed up; samples
        are taken on it from now on."""
        cfg = self.cfg
        interp = cfg.interpreter(self.model)
        for d in interp.get_input_details():
            if -1 in list(d.get("shape_signature", [])):
                interp.resize_tensor_input(d["index"], [max(int(x), 1) for x in d["shape"]])
        interp.allocate_tensors()
        details = interp.get_input_details()
        if not self.values:  # the same seed gives every instance the same inputs: draw them once
            rng = np.random.default_rng(self.seed)
            for d in details:
                value = None if self.inputs is None else self.inputs.get(d["name"])
                if value is None:
                    value = _random_input(d, rng, positive=self.positive)
                self.values.append(np.asarray(value, dtype=d["dtype"]).reshape(d["shape"]))
        for d, value in zip(details, self.values, strict=True):
            interp.set_tensor(d["index"], value)
        interp.invoke()  # first run: lazy allocations, delegate preparation
        for _ in range(cfg.warmup):
            interp.invoke()
        if self.instances == 0:
            self.delegated = runs_delegated(interp, cfg.resolver)
        self.instances += 1
        self.invoke = interp.invoke  # the previous instance is released
        return interp.invoke

    @property
    def live(self) -> bool:
        """Whether an interpreter is ready (False between passes)."""
        return self.invoke is not _released

    @property
    def done(self) -> bool:
        """Whether every pass has been run."""
        return self.passes_done >= self.passes

    def goal(self) -> int:
        """Samples to have after the next pass (one more pass's worth once all are done: an
        op put back for want of a quiet sample)."""
        if self.done:
            return len(self.cpu) + math.ceil(self.target / self.passes)
        return math.ceil(self.target * (self.passes_done + 1) / self.passes)

    def park(self) -> None:
        """Release the interpreter and the drawn inputs until the next pass."""
        self.invoke = _released
        if self.inputs is None:
            self.values = []

    def sample(self, k: int, gate: Gate) -> None:
        """Take ``k`` samples on the current instance, each bracketed by probe reads (the read
        after one sample is the read before the next)."""
        invoke, n = self.invoke, self.batch
        for _ in range(k):
            before = gate.last
            w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            for _ in range(n):
                invoke()
            c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
            self.cpu.append((c1 - c0) / 1e3 / n)
            self.wall.append((w1 - w0) / 1e3 / n)
            self.probes.append(max(before, gate.read()))
            self.instance.append(self.instances - 1)

    def quiet(self, gate: Gate) -> list[int]:
        """Indices of the samples taken while the machine was quiet."""
        return [i for i, p in enumerate(self.probes) if gate.is_quiet(p)]

    def timing(self, gate: Gate) -> Timing:
        keep = self.quiet(gate)
        used = keep or list(range(len(self.cpu)))
        return Timing(
            min(self.cpu),
            statistics.median(self.cpu[i] for i in used),
            min(self.wall),
            statistics.median(self.wall[i] for i in used),
            self.batch,
            len(self.cpu),
            len(self.cpu) - len(keep),
            bool(keep),
            self.instances,
            self.cfg.wall_clock,
            self.delegated,
        )


def runs_delegated(interp: Any, resolver: str) -> bool | None:
    """Whether the delegate of ``resolver`` took the op of the allocated single-op interpreter
    ``interp`` (a ``DELEGATE`` node stands in its execution plan), None when the resolver has
    no delegate. An op the delegate refuses (XNNPACK: a 1x1 float AVERAGE_POOL_2D of stride 2,
    the int8 AVERAGE_POOL_2D, RELU, HARD_SWISH, any LSTM, ...) runs in LiteRT's builtin
    kernels, often several times slower than in the delegate's. Records carry it as data: a
    model that priced such ops as kinds of their own did no better on the zoo's tuning half
    (docs/cost-models.md, the 2026-11-27 session)."""
    if RESOLVERS[check_resolver(resolver)][1] is None:
        return None
    # LiteRT lists the nodes after delegation: the model's own, then one per delegated part
    return any(d.get("op_name") == "DELEGATE" for d in interp._get_ops_details())


def run_pass(timers: Sequence[Timer], cfg: MeasureConfig, gate: Gate) -> None:
    """Run one pass of each of ``timers``: its share of samples (:meth:`Timer.goal`) in
    ``cfg.rounds / passes`` interleaved rounds, a new instance of each per round; then top up
    every timer whose passes are done and that has fewer than ``cfg.quiet_target`` quiet samples
    (waiting for the machine to be quiet before each extra sample, at most ``cfg.max_wait_s`` in
    all)."""
    plans = [
        (t, len(t.cpu), t.goal(), max(math.ceil(max(cfg.rounds, 1) / t.passes), 1)) for t in timers
    ]
    for r in range(max((rounds for *_, rounds in plans), default=0)):
        for t, start, goal, rounds in plans:
            k = math.ceil(start + (goal - start) * (r + 1) / rounds) - len(t.cpu)
            if r < rounds and k > 0:
                if r or not t.live:
                    t.new_instance()
                t.sample(k, gate)
    for t in timers:
        t.passes_done += 1
    final = [t for t in timers if t.done]
    deadline = time.perf_counter() + cfg.max_wait_s
    for _ in range(cfg.retry_rounds):
        short = False
        for t in final:
            for _ in range(min(cfg.quiet_target, t.target) - len(t.quiet(gate))):
                short = True
                left = deadline - time.perf_counter()
                if left <= 0:
                    return
                gate.wait(min(cfg.wait_s, left))
                if not t.live:  # its last pass drew no sample (one sample split over two)
                    t.new_instance()
                t.sample(1, gate)
        if not short:
            return


def _released() -> None:
    raise RuntimeError("timer parked between passes: call new_instance() first")


def time_models(
    models: Sequence[bytes],
    cfg: MeasureConfig,
    *,
    seed: int = 0,
    samples: int | None = None,
    gate: Gate | None = None,
) -> list[Timing | Exception]:
    """Time several models in interleaved rounds (``cfg.rounds``), so that the samples of each
    are spread over time and a burst of load elsewhere on the machine hits few of them.

    Each round runs on a new interpreter instance of each model (a fresh copy of it: memory
    placement changes some latencies). Each sample is a batch of back-to-back ``invoke()`` calls
    lasting at least ``cfg.sample_s`` (per-invoke time = batch time / batch size), bracketed by
    probe reads of ``gate`` (a new :class:`Gate` when None); a model with fewer than
    ``cfg.quiet_target`` quiet samples gets more (up to ``cfg.retry_rounds`` passes, each extra
    sample after waiting up to ``cfg.wait_s`` for quiet, at most ``cfg.max_wait_s`` of waiting
    per call). A model gets ``samples`` samples (default ``cfg.samples``), fewer when they would
    exceed ``cfg.max_time_s`` (never below ``cfg.min_samples``). Its latency is its fastest
    sample. A model the runtime refuses yields the exception instead of a timing.

    >>> from tacopt.fusion.tflite.writer import serialize_tflite
    >>> t = time_models([serialize_tflite(neg_graph())], MeasureConfig(samples=3))[0]
    >>> 0 < t.cpu_us and t.samples + t.rejected >= 3 and t.instances >= 1
    True
    """
    gate = Gate(cfg) if gate is None else gate
    want = cfg.samples if samples is None else samples
    timers: list[Timer | Exception] = []
    for m in models:
        try:
            timers.append(Timer(m, None, cfg, seed=seed, samples=want))
        except Exception as exc:  # the runtime refused this model
            timers.append(exc)
    run_pass([t for t in timers if isinstance(t, Timer)], cfg, gate)
    return [t.timing(gate) if isinstance(t, Timer) else t for t in timers]


def time_model(
    model: bytes,
    inputs: Mapping[str, np.ndarray] | None,
    cfg: MeasureConfig,
    *,
    seed: int = 0,
    samples: int | None = None,
    gate: Gate | None = None,
) -> Timing:
    """Time one model (see :func:`time_models`), with given ``inputs`` (else random ones)."""
    gate = Gate(cfg) if gate is None else gate
    timer = Timer(
        model, inputs, cfg, seed=seed, samples=cfg.samples if samples is None else samples
    )
    run_pass([timer], cfg, gate)
    return timer.timing(gate)


#: Op kinds whose single-op models get positive float inputs (:class:`Timer`'s ``positive``):
#: LiteRT's builtin kernels take a slow path on the NaN a negative input gives, where a real
#: model feeds them in their domain (an audio front end's LOG reads a SQUARE's output). On the
#: builtin kernels here (Zen 5, 1 thread), inputs drawn from U(-1, 1) against U(0.01, 1): LOG of
#: 1 x 128 x 176 x 16 2,850 / 886 us, SQRT 3,017 / 538, RSQRT 3,138 / 677, POW (1 x 64 x 88 x
#: 16) 518 / 275; EXP, DIV, TANH, LOGISTIC, ABS no different; XNNPACK no different (LOG 40 us).
POSITIVE_DOMAIN = frozenset({"LOG", "SQRT", "RSQRT", "POW"})


def _random_input(
    d: Mapping[str, Any], rng: np.random.Generator, *, positive: bool = False
) -> np.ndarray:
    shape, dtype = tuple(int(x) for x in d["shape"]), np.dtype(d["dtype"])
    if np.issubdtype(dtype, np.floating):
        value = rng.uniform(-1, 1, shape)
        return (np.abs(value) if positive else value).astype(dtype)
    if dtype in (np.int8, np.uint8) and d.get("quantization", (0.0, 0))[0]:
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    return np.zeros(shape, dtype)  # indices, counters, masks: zero is always in range


def neg_graph() -> nx.MultiDiGraph:
    ts = [Tensor("x", (1,), "float32"), Tensor("y", (1,), "float32")]
    return make_graph("empty", ts, [Op("neg_0", "NEG", ("x",), ("y",))], ["x"], ["y"])

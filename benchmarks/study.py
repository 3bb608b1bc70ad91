"""What a study runs: :class:`Study` (the cross product of models, device sets, granularities,
cost models, fusion modes and pickers), its :class:`Case` s (:func:`expand_cases`), and the checks
that refuse a study that cannot run (:func:`check_study`, :func:`check_models`) before any work.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tacopt.benchmarks.zoos import BenchmarkError, ZooItem, resolve_zoo
from tacopt.cost_models.base import get_cost_model
from tacopt.errors import TacoptError
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.partitioner.pickers import get_picker
from tacopt.partitioner.pipeline import GRANULARITIES
from tacopt.partitioner.targets import get_target

#: Device sets of the default study (TAC's examples).
DEFAULT_DEVICE_SETS: tuple[tuple[str, ...], ...] = (
    ("GPU", "CPU"),
    ("NNAPI", "CPU"),
    ("GPU", "NNAPI", "CPU"),
)
DEFAULT_PICKERS = ("exact", "tac", "greedy", "first-fit")
#: Statuses of records whose picker (or problem) failed.
FAILED = frozenset({"ERROR", "CRASH"})


@dataclass(frozen=True, slots=True)
class Study:
    """What to run: the cross product of every field that is a tuple.

    ``time_limit_s`` and ``backend`` go to pickers that take them (``exact``); ``seed`` to the
    synthetic generators and pickers that take one. ``time_limit_s=None`` uses the picker's own
    default.
    """

    zoos: tuple[str, ...] = ("bundled",)
    device_sets: tuple[tuple[str, ...], ...] = DEFAULT_DEVICE_SETS
    granularities: tuple[str, ...] = ("subgraph", "op")
    cost_models: tuple[str, ...] = ("tac",)
    pickers: tuple[str, ...] = DEFAULT_PICKERS
    time_limit_s: float | None = 60.0
    backend: str | None = None
    seed: int = 0
    #: ``"fused"``: the partitioner's pipeline as it is (fuse first); ``"plain"``: ``fuse=False``.
    fusion: tuple[str, ...] = ("fused",)
    #: Device capacities in bytes, applied to every case whose device set holds the device.
    memory: tuple[tuple[str, float], ...] = ()
    #: Pins (pattern, DEVICE) as ``tacopt partition --pin``, applied to every model case whose
    #: device set holds the device; a pin that matches no op of a model is ignored there.
    pins: tuple[tuple[str, str], ...] = ()


#: The values of :attr:`Study.fusion`.
FUSION_MODES = ("fused", "plain")


@dataclass(frozen=True, slots=True)
class Case:
    """One pick problem of a study and the pickers that solve it (``exact`` first).

    Synthetic pick-problem items carry their own devices and costs: their ``devices`` is empty
    and ``granularity`` and ``cost_model`` are ``"-"``.
    """

    item: ZooItem
    devices: tuple[str, ...]
    granularity: str
    cost_model: str
    pickers: tuple[str, ...]
    time_limit_s: float | None = None
    backend: str | None = None
    seed: int = 0
    fusion: str = "fused"
    memory: tuple[tuple[str, float], ...] = ()
    pins: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """Stable identity of the case: zoo, model, devices, granularity, cost model, seed,
        ``|plain`` for a case partitioned without fusing, ``|memory=...`` with capacities and
        ``|pins=...`` with pins."""
        devices = ",".join(self.devices) or "-"
        memory = ",".join(f"{d}={v:.0f}" for d, v in self.memory)
        pins = ",".join(f"{pattern}={d}" for pattern, d in self.pins)
        return (
            f"{self.item.zoo}/{self.item.name}|{devices}|{self.granularity}|{self.cost_model}"
            f"|seed={self.seed}" + ("|plain" if self.fusion == "plain" else "")
            + (f"|memory={memory}" if memory else "") + (f"|pins={pins}" if pins else "")
        )  # fmt: skip

    def record_key(self, picker: str) -> str:
        """Stable identity of one record: the case key and the picker."""
        return f"{self.key}|{picker}"



def expand_cases(study: Study) -> list[Case]:
    """The cases of ``study`` in a fixed order: zoo, model, device set, granularity, cost model.

    Raises
    ------
    BenchmarkError
        For an unknown zoo or an empty field of the study.

    Examples
    --------
    >>> cases = expand_cases(Study(zoos=("transformer:1",)))
    >>> len(cases), cases[0].pickers
    (6, ('exact', 'tac', 'greedy', 'first-fit'))
    >>> cases[0].key
    'transformer/transformer_L1|GPU,CPU|subgraph|tac|seed=0'

    """
    for name in ("zoos", "device_sets", "granularities", "cost_models", "pickers", "fusion"):
        if not getattr(study, name):
            raise BenchmarkError(f"study option {name!r} is empty")
    pickers = tuple(dict.fromkeys(p for p in study.pickers if p == "exact")) + tuple(
        dict.fromkeys(p for p in study.pickers if p != "exact")
    )
    common: dict[str, Any] = dict(
        pickers=pickers, time_limit_s=study.time_limit_s, backend=study.backend, seed=study.seed
    )
    cases: list[Case] = []
    for spec in study.zoos:
        for item in resolve_zoo(spec):
            if item.kind == "problem":
                cases.append(
                    Case(replace(item, seed=item.seed + study.seed), (), "-", "-", **common)
                )
                continue
            for devices in study.device_sets:
                for granularity in study.granularities:
                    for cost_model in study.cost_models:
                        for fusion in study.fusion:
                            memory = tuple((d, v) for d, v in study.memory if d in devices)
                            pins = tuple(
                                (pattern, d) for pattern, d in study.pins
                                if d in devices or d == "CPU"
                            )
                            cases.append(
                                Case(
                                    item, tuple(devices), granularity, cost_model, **common,
                                    fusion=fusion, memory=memory, pins=pins,
                                )
                            )  # fmt: skip
    keys = [c.key for c in cases]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise BenchmarkError(f"study lists case {dup!r} twice (the same model in two zoos?)")
    return cases



def check_study(study: Study) -> None:
    """Refuse a study that cannot run, before any work: one line naming the option and value.

    Checks every device set (no empty name, known devices, none twice), granularity, cost model
    (it builds), picker (it resolves; none twice) and the time limit (positive and finite).
    Zoos are checked by :func:`expand_cases`.

    Raises
    ------
    BenchmarkError

    Examples
    --------
    >>> check_study(Study(device_sets=(("GPU", "", "CPU"),)))
    Traceback (most recent call last):
    ...
    tacopt.benchmarks.zoos.BenchmarkError: devices 'GPU,,CPU': empty device name
    >>> check_study(Study(pickers=("exact", "exact")))
    Traceback (most recent call last):
    ...
    tacopt.benchmarks.zoos.BenchmarkError: pickers: 'exact' is listed twice
    """
    for devices in study.device_sets:
        where = f"devices {','.join(devices)!r}"
        if not devices or devices == ("",):
            raise BenchmarkError(f"{where}: empty device list")
        if any(not d.strip() for d in devices):
            raise BenchmarkError(f"{where}: empty device name")
        for d in devices:
            try:
                get_target(d)
            except TacoptError as exc:
                raise BenchmarkError(f"{where}: {exc}") from None
        _no_twice(where, [d.strip().upper() for d in devices])
    options = {
        "pickers": study.pickers,
        "cost models": study.cost_models,
        "granularities": study.granularities,
        "fusion": study.fusion,
    }
    for option, values in options.items():
        _no_twice(option, values)
    for mode in study.fusion:
        if mode not in FUSION_MODES:
            raise BenchmarkError(f"unknown fusion mode {mode!r}; known: {', '.join(FUSION_MODES)}")
    for granularity in study.granularities:
        if granularity not in GRANULARITIES:
            raise BenchmarkError(
                f"unknown granularity {granularity!r}; known: {', '.join(GRANULARITIES)}"
            )
    in_sets = {d for devices in study.device_sets for d in devices}
    for device, nbytes in study.memory:
        if device not in in_sets:
            raise BenchmarkError(f"memory: device {device!r} is in no device set "
                                 f"({', '.join(sorted(in_sets))})")  # fmt: skip
        if not (math.isfinite(nbytes) and nbytes >= 0):
            raise BenchmarkError(f"memory: capacity of {device} must be bytes >= 0, got {nbytes}")
    for pattern, device in study.pins:
        if device != "CPU" and device not in in_sets:
            raise BenchmarkError(f"pin '{pattern}={device}': device {device} is in no device set "
                                 f"({', '.join(sorted(in_sets))})")  # fmt: skip
    for spec in study.cost_models:
        get_cost_model(spec)  # a CostModelError names the spec
    for picker in study.pickers:
        get_picker(picker)  # a PickerError names the picker
    limit = study.time_limit_s
    if limit is not None and not (math.isfinite(limit) and limit > 0):
        raise BenchmarkError(f"time limit must be a positive number of seconds, got {limit}")


def _no_twice(where: str, values: Sequence[str]) -> None:
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise BenchmarkError(f"{where}: {twice!r} is listed twice")


def check_models(cases: Iterable[Case]) -> None:
    """Read every ``.tflite`` model of ``cases`` once; a broken one raises, naming its file."""
    seen = set()
    for case in cases:
        if case.item.kind == "tflite" and case.item.source not in seen:
            seen.add(case.item.source)
            try:
                read_tflite(case.item.source)
            except TacoptError as exc:
                raise BenchmarkError(f"zoo {case.item.zoo!r}: {exc}") from None

"""Which model prices each (kind, inference type) group of a learned model, chosen on held-out
training configurations: the shared trees, the copy model (data movement), the group's own kind
model, the model of the kind it is an alias of, or its kernel family's model
(:mod:`~tacopt.cost_models.learned.fitting.kind_models`)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tacopt.cost_models.learned.fitting.kind_models import group_of
from tacopt.cost_models.ops import MOVEMENT

#: A data-movement group the copy model prices keeps it unless a kind or family model hits more
#: held-out training configurations by this share of them: the copy model (bytes and runs)
#: extrapolates to network shapes, a model chosen on configurations like its training ones may
#: not (the int8 PAD family model won by a few held-out ops and priced the tuning half's PADs at
#: 0.43x; with the margin 0.85x, tuning half 75.7 / 76.9 -> 75.8 / 77.1 %, MAPE 10.7 -> 10.3 %).
COPY_MODEL_MARGIN = 0.1
#: The same margin for a kernel family's model over a group's shared trees or own kind model: a
#: family model learns the kind from a flag among many kinds, and when it wins by a few held-out
#: ops it may not extrapolate. With the four shipped learns + learn15 + learn16 + layer-norm ops,
#: the GEMM family's model priced Keras ConvNeXt's float 7x7 one-channel-per-group convolutions
#: (8.5 ms) at 0.1x; with the margin their own kind model prices them at 0.4-1.0x (tuning half
#: 79.0 / 79.8 -> 79.2 / 80.7 %). The int8 ones (36 ms) stayed at 0.1x, the family winning by
#: more than the margin, until version 9 priced such convolutions as depthwise ones
#: (features.kernel_kind).
FAMILY_MODEL_MARGIN = 0.1


def fold(record: Mapping[str, Any], folds: int = 5) -> int:
    """The fold (0 .. ``folds`` - 1) of a record, by a hash of its configuration key, so the same
    configuration falls in the same fold on every run.

    >>> sorted({fold({"key": str(i)}) for i in range(50)}), fold({"key": "a"}) == fold({"key": "a"})
    ([0, 1, 2, 3, 4], True)
    """
    return int(hashlib.sha1(str(record.get("key")).encode()).hexdigest()[:8], 16) % folds


def held_out(record: Mapping[str, Any]) -> bool:
    """Whether a record is one of the 1 in 5 held out of a trial fit (:func:`fold` 0)."""
    return fold(record) == 0


def choose_sources(
    records: Sequence[Mapping[str, Any]], trial_fit: Callable[[Sequence[Mapping[str, Any]]], Any]
) -> tuple[list[str], list[str], list[str], list[str]]:
    """``(movement_kinds, kind_groups, alias_groups, family_groups)``: which data-movement kinds
    the copy model prices
    (:func:`~tacopt.cost_models.learned.fitting.movement.movement_fits`), which (kind, inference
    type) groups their own model prices, which the model of the kind they are an alias of, and
    which their kernel family's model, instead of the shared trees.

    Chosen on held-out training configurations: ``trial_fit`` fits a model with every kind model
    on 4 in 5 (by key hash), and ops within ±10 % are counted on the rest. A movement kind
    keeps the copy model (it extrapolates more safely) without 5 held-out ops, or unless the
    shared trees hit :data:`COPY_MODEL_MARGIN` more of them (before, one more: a Zen 4 learn's
    CONCATENATIONs went to the trees by a few held-out ops, and the tuning half's float ones
    came out 6 of 14 within ±10 %, 13 of 14 with the copy model kept; six learns, tuning half:
    83.7 -> 84.8 % for that learn, the others -0.2 to 0.0 points); a group needs 8
    held-out ops and strictly more hits for a kind or family model (ties go to its own, then
    the alias, then the family), a copy-model group :data:`COPY_MODEL_MARGIN` more."""

    def held(r: Mapping[str, Any]) -> bool:
        return r.get("type") == "op" and held_out(r)

    test = [r for r in records if held(r)]
    if len(test) < 5:
        return sorted(MOVEMENT), [], [], []
    trial = trial_fit([r for r in records if not held(r)])
    # per group: n, shared trees, copy model, own kind model, alias, family model
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    for r in test:
        m = r["latency_us"]
        h = hits[group_of(r)]
        h[0] += 1
        trial.movement_kinds, trial.kind_groups = set(), set()
        h[1] += abs(trial.predict(r).latency_us - m) <= 0.1 * m
        trial.movement_kinds = None
        h[2] += abs(trial.predict(r).latency_us - m) <= 0.1 * m
        for i, kw in ((3, {"alias": False}), (4, {"own": False}), (5, {"by_family": True})):
            p = trial.kind_models.predict(r, **kw)
            h[i] += p is not None and abs(p - m) <= 0.1 * m
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for g, h in hits.items():
        for i in range(3):
            by_kind[g.split("|")[0]][i] += h[i]
    movement = sorted(k for k in MOVEMENT if copy_model_kept(*by_kind[k]))
    chosen: tuple[list[str], list[str], list[str]] = ([], [], [])  # own, alias, family
    for g, h in sorted(hits.items()):
        best = model_choice(h, copy_model=g.split("|")[0] in movement)
        if best is not None:
            chosen[best].append(g)
    return movement, *chosen


def copy_model_kept(n: int, trees: int, copy: int) -> bool:
    """Whether a data-movement kind keeps the copy model, from its ``n`` held-out ops and the
    hits of the shared ``trees`` and of the ``copy`` model: the trees need
    :data:`COPY_MODEL_MARGIN` of ``n`` more hits, and 5 held-out ops.

    >>> copy_model_kept(30, 25, 23), copy_model_kept(30, 27, 23), copy_model_kept(4, 4, 0)
    (True, False, True)
    """
    return n < 5 or copy + int(COPY_MODEL_MARGIN * n) >= trees


def model_choice(h: Sequence[int], *, copy_model: bool) -> int | None:
    """Which model replaces a group's shared trees (or copy model), from its held-out hits ``h``
    (n, shared trees, copy model, own kind model, alias, family model): 0 own, 1 alias, 2
    family, None to keep them. A family model needs :data:`FAMILY_MODEL_MARGIN` more hits than
    the others.

    >>> model_choice([20, 10, 12, 11, 0, 14], copy_model=False)  # the family model wins
    2
    >>> model_choice([20, 10, 12, 11, 0, 13], copy_model=True) is None  # not by 10 % of 20
    True
    >>> model_choice([20, 10, 0, 12, 0, 13], copy_model=False)  # the family not by 10 %: own
    0
    """
    shared = h[2] if copy_model else h[1]
    best = max(range(3), key=lambda i: (h[3 + i], -i))  # ties: own, then alias, then family
    family_margin = int(FAMILY_MODEL_MARGIN * h[0])
    if best == 2 and h[5] <= max(h[3], h[4]) + family_margin:
        best = 0 if h[3] >= h[4] else 1  # the family not by the margin: own, then alias
    if best == 2:
        shared += family_margin
    margin = int(COPY_MODEL_MARGIN * h[0]) if copy_model else 0
    return best if h[0] >= 8 and h[3 + best] > shared + margin else None

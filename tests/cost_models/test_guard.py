"""The guarded adaptation and where an adaptation measures (issue 47, item 5):
cost_models/learned/sampling/guard.py and adapt.py's sampler weights, offline on records."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.sampling.adapt import (
    UNPROBED_DISTANCE,
    differing_weights,
    uncertain_weights,
)
from tacopt.cost_models.learned.sampling.guard import MIN_PROBES, choice_lines, guarded_adapt
from tacopt.cost_models.learned.sampling.samplers_tail import TAIL_PRIOR


def _op(kind: str, n: int, i: int, net_us: float, label: str = "m") -> dict:
    t = [[n], "float32"]
    return {"type": "op", "key": f"{kind}{i}", "kind": kind, "inference_type": "FLOAT",
            "model": label, "flops": float(n), "bytes": 12.0 * n, "outputs": [t],
            "options": {}, "inputs": [t, t], "latency_us": 0.5 + net_us, "overhead_us": 0.5,
            "speed": {"add": 10.0, "conv": 10.0}}  # fmt: skip


def _sizes(seed: int, n: int) -> list[int]:
    return [int(v) for v in 10 ** np.random.default_rng(seed).uniform(2, 6, n)]


def test_a_kind_with_nothing_to_gain_keeps_the_base_inside_a_family_that_adapts() -> None:
    """ADD runs 2x slower on the new device, MUL as on the base's: the elementwise family is
    adapted, and MUL, judged on its own probes, keeps the base (a tie goes to the simpler)."""
    sizes = _sizes(1, 160)
    base = fit([_op(k, n, i, n / 1000) for i, n in enumerate(sizes) for k in ("ADD", "MUL")])
    new = [_op("ADD", n, 1000 + i, 2 * n / 1000) for i, n in enumerate(sizes)]
    new += [_op("MUL", n, 2000 + i, n / 1000) for i, n in enumerate(sizes[:80])]
    doc = guarded_adapt(base, new, own=False)
    adapted = doc["adapted"]
    choice, kinds = adapted["family_choice"], adapted["kind_guard"]
    assert choice["elementwise"] != "base"
    assert choice["MUL|FLOAT"] == "base" and kinds["MUL|FLOAT"]["probes"] >= MIN_PROBES
    assert "ADD|FLOAT" not in choice  # it chose as its family: no line of its own
    assert any(line.startswith("  MUL|FLOAT: base") for line in choice_lines(adapted))
    model, unguarded = LearnedCostModel(doc), LearnedCostModel(_as_fitted(doc))
    mul, add = _op("MUL", 30_000, 9998, 30.0), _op("ADD", 30_000, 9999, 60.0)
    # the kind is priced as the base (its own overhead and the base's net), its family adapted
    assert (
        model.predict(mul).latency_us
        == model.choosing({"elementwise": "base"}).predict(mul).latency_us
    )
    assert (
        model.predict(add).latency_us
        == unguarded.choosing({"elementwise": choice["elementwise"]}).predict(add).latency_us
    )


def test_with_the_own_models_folds_the_guard_judges_every_op_and_fits_nothing_more() -> None:
    """With records enough for the device's own model, its five folds (each op held out once)
    judge the ways of pricing: every op is a probe, and the model prices as chosen."""
    sizes = _sizes(3, 150)
    base = fit([_op(k, n, i, n / 1000) for i, n in enumerate(sizes) for k in ("ADD", "MUL")])
    new = [_op("ADD", n, 1000 + i, 2 * n / 1000) for i, n in enumerate(sizes)]
    new += [_op("MUL", n, 2000 + i, n / 1000) for i, n in enumerate(sizes)]
    adapted = guarded_adapt(base, new, workers=1)["adapted"]
    assert "fold_hits" not in adapted
    assert adapted["guard"]["elementwise"]["probes"] == len(new)
    assert adapted["kind_guard"]["MUL|FLOAT"]["probes"] == 150
    assert adapted["family_choice"]["elementwise"] != "base"
    assert adapted["family_choice"]["MUL|FLOAT"] == "base"


def _as_fitted(doc: dict) -> dict:
    """The adapted model without its choice: every family as fitted."""
    return {**doc, "adapted": {k: v for k, v in doc["adapted"].items() if k != "family_choice"}}


def test_an_adaptation_probes_every_prior_then_measures_where_the_device_differs() -> None:
    """The probes reach the tail prior's kinds (PRELU, RESIZE_BILINEAR, LOG, ...), which no
    adaptation measured before; the second phase weighs each sampler by how far the base is
    from its probes: ADD measured 5x slower than the base says gets more than MUL measured as
    it says, and a sampler no probe reached counts as unknown."""
    sizes = _sizes(2, 120)
    base = fit([_op(k, n, i, n / 1000) for i, n in enumerate(sizes) for k in ("ADD", "MUL")])
    uncertain = uncertain_weights(base)
    assert set(TAIL_PRIOR) <= set(uncertain) and uncertain["PRELU"] > 0
    probes = [_op("ADD", n, 100 + i, 5 * n / 1000, f"ADD:7:{i}") for i, n in enumerate(sizes)]
    probes += [_op("MUL", n, 300 + i, n / 1000, f"MUL:7:{i}") for i, n in enumerate(sizes)]
    w = differing_weights(base, probes)
    gain = {k: w[k] / uncertain[k] for k in ("ADD", "MUL", "PRELU")}
    assert gain["ADD"] > 1.0 > gain["MUL"]
    assert gain["PRELU"] == pytest.approx(UNPROBED_DISTANCE + 0.1, rel=1e-3)
    assert differing_weights(base, probes) == w  # the same records: the same plan (resume)

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


def test_a_kind_takes_its_own_way_only_where_it_beats_its_familys_on_its_probes() -> None:
    """CONV_2D runs 2x slower on the new device, FULLY_CONNECTED as on the base's, and the GEMM
    family is corrected as one (FAMILY_ONLY): without trees the family's correction misses
    both, so the family keeps the base while CONV_2D, better corrected on its own probes, takes
    the correction. With trees the family adapts, and FULLY_CONNECTED, as well priced by the
    base as adapted (a tie), stays with its family."""
    sizes = _sizes(1, 160)
    gemm = ("CONV_2D", "FULLY_CONNECTED")
    base = fit([_op(k, n, i, n / 1000) for i, n in enumerate(sizes) for k in gemm])
    new = [_op("CONV_2D", n, 1000 + i, 2 * n / 1000) for i, n in enumerate(sizes)]
    new += [_op("FULLY_CONNECTED", n, 2000 + i, n / 1000) for i, n in enumerate(sizes[:60])]
    doc = guarded_adapt(base, new, own=False, trees=False)
    adapted = doc["adapted"]
    choice, kinds = adapted["family_choice"], adapted["kind_guard"]
    assert choice["gemm_float"] == "base" and choice["CONV_2D|FLOAT"] == "corrected"
    assert kinds["CONV_2D|FLOAT"]["corrected"] > kinds["CONV_2D|FLOAT"]["base"]
    assert kinds["CONV_2D|FLOAT"]["probes"] >= MIN_PROBES
    assert "FULLY_CONNECTED|FLOAT" not in choice  # as its family: no line of its own
    assert any(line.startswith("  CONV_2D|FLOAT: corrected") for line in choice_lines(adapted))
    model = LearnedCostModel(doc)
    conv, fc = _op("CONV_2D", 30_000, 9998, 60.0), _op("FULLY_CONNECTED", 30_000, 9999, 30.0)
    # the kind is priced as it chose, the rest of its family as the family chose
    as_corrected = model.choosing({"gemm_float": "corrected"}).predict(conv).latency_us
    as_base = model.choosing({"gemm_float": "base"}).predict(fc).latency_us
    assert as_corrected != as_base
    assert model.predict(conv).latency_us == as_corrected
    assert model.predict(fc).latency_us == as_base
    with_trees = guarded_adapt(base, new, own=False)["adapted"]
    fc_hits = with_trees["kind_guard"]["FULLY_CONNECTED|FLOAT"]
    assert with_trees["family_choice"]["gemm_float"] == "adapted"
    assert fc_hits["base"] == fc_hits["adapted"]  # a tie: the family's way
    assert "FULLY_CONNECTED|FLOAT" not in with_trees["family_choice"]


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


def _chains(ops: list[dict], add_ratio: float) -> list[dict]:
    """Chain models of four of ``ops`` each (two ADDs, two MULs), timed whole with their ADDs
    running ``add_ratio`` x as long as they did alone (a context effect: the audio family's
    LOG ran 3x slower alone on random inputs than inside its model)."""
    adds = [r for r in ops if r["kind"] == "ADD"]
    muls = [r for r in ops if r["kind"] == "MUL"]
    chains = []
    for i in range(10):
        parts = [adds[2 * i], adds[2 * i + 1], muls[2 * i], muls[2 * i + 1]]
        net = sum((r["latency_us"] - 0.5) * (add_ratio if r["kind"] == "ADD" else 1.0)
                  for r in parts)  # fmt: skip
        chains.append({"type": "model", "model": f"chain_{i}", "latency_us": 0.5 + net,
                       "ops": [[r["key"], 1.0] for r in parts], "overhead_us": 0.5,
                       "speed": {"add": 10.0, "conv": 10.0}})  # fmt: skip
    return chains


def test_a_family_that_wins_on_ops_but_loses_the_chains_timed_whole_goes_back_to_the_base() -> None:
    """ADD runs 2x slower alone on the new device, MUL as on the base's: the ops choose the
    adaptation for the elementwise family. Chain models of those ops timed whole run their ADDs
    at the base's speed (a context effect), so the adaptation prices them worse than the base
    and the family goes back to the base; chains that run as their ops keep the adaptation."""
    sizes = _sizes(3, 150)
    base = fit([_op(k, n, i, n / 1000) for i, n in enumerate(sizes) for k in ("ADD", "MUL")])
    new = [_op("ADD", n, 1000 + i, 2 * n / 1000) for i, n in enumerate(sizes)]
    new += [_op("MUL", n, 2000 + i, n / 1000) for i, n in enumerate(sizes)]
    as_alone = guarded_adapt(base, [*new, *_chains(new, 1.0)], workers=1)["adapted"]
    assert as_alone["guard"]["elementwise"]["adapted"] > as_alone["guard"]["elementwise"]["base"]
    assert as_alone["family_choice"]["elementwise"] != "base"
    whole = as_alone["whole_guard"]
    assert whole["chains"] == 10 and whole["to_base"] == []
    assert whole["chosen_pct"] < whole["base_pct"]
    in_context = guarded_adapt(base, [*new, *_chains(new, 0.5)], workers=1)["adapted"]
    whole = in_context["whole_guard"]
    assert in_context["family_choice"]["elementwise"] == "base"
    assert whole["to_base"] in (["elementwise"], ["*"])
    assert whole["chosen_pct"] <= whole["base_pct"]
    line = [ln for ln in choice_lines(in_context) if ln.startswith("  whole models")]
    assert len(line) == 1 and line[0].endswith(("elementwise", "*"))
    without = guarded_adapt(base, new, workers=1)["adapted"]  # no chains: no check
    assert without["whole_guard"] == {"chains": 0}
    assert without["family_choice"] == as_alone["family_choice"]

"""Kernel-set companions (issue 47 item 5): cost_models/learned/fitting/companion.py, the prior
of an adaptation (model.py, sampling/adapt.py), their schema and ``tacopt companion``."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tacopt.cost_models.learned.fitting.companion import (
    Companion,
    fit_companion,
    pick_companion,
)
from tacopt.cost_models.learned.fitting.fit import fit
from tacopt.cost_models.learned.fitting.model import LearnedCostModel
from tacopt.cost_models.learned.fitting.schema import check_model_doc
from tacopt.cost_models.learned.sampling.adapt import adapt, prior_doc
from tacopt.cost_models.model_file import model_bytes
from tacopt.cost_models.protocol import CostModelError
from tacopt.partitioner.cli import main

SPEED = {"add": 10.0, "conv": 10.0, "move": 10.0}


def _device(resolver: str, threads: int = 1) -> dict:
    return {"type": "device", "device": "d", "fingerprint": {"resolver": resolver,
            "threads": threads, "cpu": "test CPU", "family": "1/2/3"}}  # fmt: skip


def _op(kind: str, n: int, i: int, net_us: float, speed: dict | None = None) -> dict:
    t = [[n], "float32"]
    return {"type": "op", "key": f"{kind}{i}", "kind": kind, "inference_type": "FLOAT",
            "model": f"{kind}:0:{i}", "flops": float(n), "bytes": 12.0 * n, "outputs": [t],
            "options": {}, "inputs": [t, t], "latency_us": 0.5 + net_us, "overhead_us": 0.5,
            "speed": speed or SPEED}  # fmt: skip


def _sizes(seed: int, n: int) -> list[int]:
    return [int(v) for v in 10 ** np.random.default_rng(seed).uniform(3, 6, n)]


def _kernel_sets(n: int = 120) -> tuple[list[dict], list[dict]]:
    """The same ADDs and MULs on two kernel sets of one machine: on the other set an ADD takes
    3x its time, a MUL 3x when small and 1x from 100,000 elements (a kernel that catches up with
    size), and its references run 2x slower (so re-anchoring alone gives 2x)."""
    sizes = _sizes(0, n)
    base = [_device("xnnpack")]
    other = [_device("builtin")]
    slow = {k: 2 * v for k, v in SPEED.items()}
    for i, s in enumerate(sizes):
        for kind in ("ADD", "MUL"):
            base.append(_op(kind, s, i, s / 1000))
            ratio = 3.0 if kind == "ADD" or s < 100_000 else 1.0
            other.append(_op(kind, s, i, 2 * ratio * s / 1000, speed=slow))
    return base, other


def test_a_companion_learns_the_ratio_re_anchoring_leaves_per_kind_and_shape() -> None:
    base, other = _kernel_sets()
    comp = fit_companion(base, other)
    assert (comp["resolver"], comp["threads"], comp["pairs"]) == ("builtin", 1, 240)
    assert comp["base"] == {"resolver": "xnnpack", "threads": 1}
    assert all(comp["kernel_kinds"].values())  # named as this version names kernels
    c = Companion(comp, comp["anchor_speed"])
    add, small, large = _op("ADD", 5000, 9001, 5.0), _op("MUL", 3000, 9002, 3.0), _op(
        "MUL", 500_000, 9003, 500.0
    )
    assert math.exp(c.log_ratio(add, 5.0)) == pytest.approx(3.0, rel=0.1)
    assert math.exp(c.log_ratio(small, 3.0)) == pytest.approx(3.0, rel=0.1)
    assert math.exp(c.log_ratio(large, 500.0)) == pytest.approx(1.0, rel=0.1)
    with pytest.raises(ValueError, match="both records are of kernel set xnnpack/1"):
        fit_companion(base, base)


def test_the_prior_multiplies_the_base_and_the_base_choice_goes_without() -> None:
    """An adaptation starts from base x companion; its "base" way of pricing (the guard's
    never-worse reference) stays the base as shipped."""
    base_recs, other = _kernel_sets()
    base_doc = fit([r for r in base_recs if r.get("type") == "op"])
    comp = fit_companion(base_recs, other)
    doc = {**base_doc, "companions": {"builtin/1": comp}}
    add = _op("ADD", 5000, 9001, 5.0)
    plain = LearnedCostModel(prior_doc(doc, None)).predict_net(add)
    prior = LearnedCostModel(prior_doc(doc, "builtin/1"))
    assert prior.predict_net(add) / plain == pytest.approx(3.0, rel=0.15)
    adapted = adapt(doc, other, own=False, trees=False, companion="builtin/1")
    assert adapted["adapted"]["companion"] == "builtin/1"
    model = LearnedCostModel(adapted)
    # re-anchored to the other set (2x) and its ratio (3x): the corrections are left near 0
    assert abs(adapted["adapted"]["corrections"]["ADD|FLOAT"]) < 0.1
    assert model.predict_net(add) / plain == pytest.approx(3.0, rel=0.15)
    as_base = model.choosing({"elementwise": "base"}).predict_net(add)
    assert as_base == pytest.approx(plain, rel=1e-6)
    without = adapt(doc, other, own=False, trees=False)
    assert abs(without["adapted"]["corrections"]["ADD|FLOAT"] - math.log(3.0)) < 0.1


def test_pick_companion_only_for_another_kernel_set_the_file_holds() -> None:
    doc = {"fingerprint": {"resolver": "builtin", "threads": 1}, "companions": {"xnnpack/1": {}}}
    assert pick_companion(doc, "xnnpack", 1) == "xnnpack/1"
    assert pick_companion(doc, "builtin", 1) is None  # its own
    assert pick_companion(doc, "xnnpack", 2) is None  # none for it


def _doc_with_companion() -> dict:
    base_recs, other = _kernel_sets(60)
    base_doc = fit([r for r in base_recs if r.get("type") == "op"])
    return {**base_doc, "companions": {"builtin/1": fit_companion(base_recs, other)}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.update(version=99), r"companions\.builtin/1\.version: 99 is out of range"),
        (lambda c: c.update(threads=2), r"companions\.builtin/1: its resolver and threads"),
        (lambda c: c["ratios"].update({"*": float("nan")}), r"ratios\.\*: not a finite number"),
        (lambda c: c["kernel_kinds"].update(strided="yes"), r"kernel_kinds\.strided: not true"),
        (lambda c: c["trees"]["elementwise"][0].update(left=[0] * len(
            c["trees"]["elementwise"][0]["left"])), r"trees\.elementwise: tree 0 node 0"),
        (lambda c: c["trees"]["elementwise"][0]["feature"].__setitem__(0, 999),
         r"trees\.elementwise: tree 0 node 0: input 999 is not one of the"),
    ],
)  # fmt: skip
def test_a_hostile_companion_fails_in_one_line_naming_the_field(change, message) -> None:
    doc = _doc_with_companion()
    check_model_doc(doc, "m.json")
    change(doc["companions"]["builtin/1"])
    with pytest.raises(CostModelError, match=message) as err:
        check_model_doc(doc, "m.json")
    assert "\n" not in str(err.value)


def test_an_adapted_model_naming_a_companion_it_lacks_fails_in_one_line() -> None:
    doc = {**_doc_with_companion(), "adapted": {"companion": "xnnpack/4"}}
    with pytest.raises(CostModelError, match=r"adapted.companion 'xnnpack/4' is not one of its "
                       r"companions \(builtin/1\)"):  # fmt: skip
        LearnedCostModel(doc)


def test_tacopt_companion_adds_the_section_and_leaves_the_model(tmp_path: Path, capsys) -> None:
    base_recs, other = _kernel_sets(60)
    model = tmp_path / "m.json.gz"
    base_doc = fit([r for r in base_recs if r.get("type") == "op"])
    base_doc["fingerprint"] = {"resolver": "xnnpack", "threads": 1}
    model.write_bytes(model_bytes(base_doc, model))
    files = {}
    for name, recs in (("base", base_recs), ("other", other)):
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "mc.json.gz"
    assert main(["companion", str(model), str(files["base"]), str(files["other"]),
                 "-o", str(out)]) == 0  # fmt: skip
    assert "companion builtin/1 against xnnpack/1" in capsys.readouterr().out
    written = LearnedCostModel(json.loads(gzip.decompress(out.read_bytes())))
    assert set(written.doc) - set(base_doc) == {"companions"}
    assert all(written.doc[k] == v for k, v in json.loads(json.dumps(base_doc)).items())
    assert main(["inspect-model", str(out)]) == 0
    assert "companion for builtin/1: 120 configurations measured on both" in (
        capsys.readouterr().out
    )
    # the two records swapped: the base records are not of the model's kernel set
    bad = tmp_path / "bad.json.gz"
    assert main(["companion", str(model), str(files["other"]), str(files["base"]),
                 "-o", str(bad)]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert "measured on kernel set builtin/1, the model" in err and "\n" not in err
    assert not bad.exists()

"""The samplers cover the regimes of the axes table (issue 47): every required value of every kind
is drawn, and the check names a value no sampler reaches."""

from __future__ import annotations

from collections import Counter

from tacopt.benchmarks.scripts.learned import check_sampler_axes as axes


def test_every_required_regime_is_drawn(capsys) -> None:
    assert axes.main(["-n", "60", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "0 required values missing" in out and "GAPS" not in out


def test_a_regime_no_sampler_draws_is_named() -> None:
    drawn = axes.draw(30, ["SOFTMAX"], seed=1)["SOFTMAX"]
    covered = axes.coverage(drawn, "SOFTMAX")
    assert covered["beta"]["1"] > 0 and covered["beta"]["other"] > 0
    # the same draws without any sharpened softmax: its regimes are gaps
    plain = [(s, i) for s, i in drawn if float(i["op"].options.get("beta", 1.0)) == 1.0]
    gaps = axes.gaps(axes.coverage(plain, "SOFTMAX"), "SOFTMAX")
    assert "beta/axis=other/>=1024" in gaps and "beta/axis=1/>=1024" not in gaps
    assert axes.gaps({"perm": Counter({"inner kept": 3})}, "TRANSPOSE")[:1] == ["rank=2"]


def test_an_unknown_kind_is_one_line_and_exit_2(capsys) -> None:
    assert axes.main(["--kinds", "NOT_A_KIND"]) == 2
    assert "unknown kind 'NOT_A_KIND'" in capsys.readouterr().err

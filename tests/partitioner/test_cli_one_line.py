"""An error is one line even when what it names holds line breaks or control characters.

(The 100,000-case fuzz campaign of 2026-11-25 found a mutated tensor name with a newline printed
raw by ``tacopt inspect``: three stderr lines.)
"""

from __future__ import annotations

import pytest

from tacopt.partitioner.cli import main


@pytest.mark.parametrize("name", ["G\nPU", "G\rPU\x03", "GPU\u2028X", "GP\udc80U"])
def test_a_name_with_line_breaks_is_shown_escaped_on_one_line(bundled_models, capsys, name):
    model = str(bundled_models["keras__mobilenet_v2_float32.tflite"])
    assert main(["partition", model, "--devices", name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "unknown device" in err and "Traceback" not in err
    err.encode("utf-8")  # printable as UTF-8 (a lone surrogate is escaped)


@pytest.mark.parametrize("command", ["partition", "pick"])
def test_a_picker_spec_that_takes_no_problem_is_one_line(bundled_models, tmp_path, capsys, command):
    model = bundled_models["keras__text_lstm_float32.tflite"]
    problem = tmp_path / "p.json"
    assert main(["partition", str(model), "--devices", "GPU,CPU", "--problem", str(problem)]) == 0
    if command == "partition":
        argv = ["partition", str(model), "--devices", "GPU,CPU", "--html",
                str(tmp_path / "p.html"), "--compare", "exact,os:getcwd"]  # fmt: skip
    else:
        argv = ["pick", str(problem), "--compare", "exact,os:getcwd"]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'os:getcwd': getcwd does not take a problem" in err


def test_learned_page_and_explain_price_the_gpu_as_the_plan_does(bundled_models, tmp_path):
    import json

    model = bundled_models["keras__text_lstm_float32.tflite"]
    base = ["partition", str(model), "--devices", "GPU,CPU", "--cost-model", "learned"]
    assert main([*base, "--plan", str(tmp_path / "a.json")]) == 0
    assert main([*base, "--html", str(tmp_path / "p.html"), "--explain", "add_1",
                 "--plan", str(tmp_path / "b.json")]) == 0  # fmt: skip
    a, b = (json.loads((tmp_path / f"{k}.json").read_text()) for k in "ab")
    assert a["objective"] == b["objective"] and b["priced_by_default"] == {"GPU": "roofline"}
    assert b["explain"]["op"] == "add_1"

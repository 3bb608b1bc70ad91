"""``tacopt partition`` end to end: JSON plan, outputs, user targets, errors (exit 2)."""

from __future__ import annotations

import json

import pytest

from tacopt.partitioner.cli import main

MODEL = "keras__mobilenet_v2_float32.tflite"


def test_json_plan_and_files(bundled_models, tmp_path, capsys):
    out = tmp_path / "m.tflite"
    code = main(
        [
            "partition",
            str(bundled_models[MODEL]),
            "--devices",
            "gpu,cpu",
            "--json",
            "--problem",
            str(tmp_path / "p.json"),
            "--plan",
            str(tmp_path / "plan.json"),
            "--dot",
            str(tmp_path / "m.dot"),
            "--export",
            str(out),
        ]
    )
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    for key in ("objective", "picker", "status", "assignment", "breakdown", "seconds", "units"):
        assert key in plan
    assert set(plan["breakdown"]) >= {"compute", "transfer", "quant"}
    assert plan["picker"] == "exact" and plan["status"] == "OPTIMAL"
    from tacopt.partitioner.problem import load_problem

    assert len(load_problem(tmp_path / "p.json").units) == len(plan["units"])
    assert "fillcolor" in (tmp_path / "m.dot").read_text()
    from tacopt.fusion.reader import read_tflite
    from tacopt.partitioner.export import read_plan

    record = read_plan(read_tflite(out))
    assert len(record["ops"]) == read_tflite(out).number_of_nodes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--devices", "TPU,CPU"], "unknown device 'TPU'; known: CPU, GPU, NNAPI, NPU"),
        (["--devices", "GPU", "--pin", "nothing_*=GPU"], "matches no op"),
        (["--devices", "GPU", "--pin", "conv*=NNAPI"], "not in the device list"),
        (["--devices", "GPU", "--picker", "nope"], "nope"),
        (["--devices", "GPU", "--cost-model", "nope"], "nope"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(bundled_models, capsys, args, message):
    assert main(["partition", str(bundled_models[MODEL]), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_malformed_model_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model")
    assert main(["partition", str(bad), "--devices", "GPU"]) == 2
    assert capsys.readouterr().err.startswith("tacopt partition: error:")


def test_user_target_from_own_module(bundled_models, tmp_path, capsys, monkeypatch):
    import tacopt.partitioner.targets as targets

    monkeypatch.setattr(targets, "_TARGETS", targets._TARGETS.copy())  # DSP vanishes afterwards
    mod = tmp_path / "my_dsp.py"
    mod.write_text(
        "from tacopt.partitioner.targets import SimpleTarget, register_target\n"
        "register_target(SimpleTarget('DSP', denied=frozenset({'SOFTMAX'}),\n"
        "                             advantage_over_cpu=3.0))\n"
    )
    code = main(
        [
            "partition",
            str(bundled_models[MODEL]),
            "--devices",
            "dsp,cpu",
            "--load",
            str(mod),
            "--granularity",
            "op",
            "--json",
        ]
    )
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    devices = {a["device"] for a in plan["assignment"].values()}
    assert "DSP" in devices
    softmax = [u for u, info in plan["units"].items() if u.startswith("softmax")]
    assert softmax and all(plan["assignment"][u]["device"] == "CPU" for u in softmax)


def test_dispatcher_loads_only_the_named_command():
    from tacopt.partitioner.cli import build_parser

    def commands(parser):
        (sub,) = [a for a in parser._actions if a.dest == "command"]
        return set(sub.choices)

    assert commands(build_parser("partition")) == {"partition"}
    everything = commands(build_parser(None))
    assert {"partition", "pick", "fuse"} <= everything
    assert commands(build_parser("no-such-command")) == everything  # argparse then lists them

"""``tacopt partition`` end to end: JSON plan, outputs, user targets, errors (exit 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

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
    from tacopt.fusion.tflite.reader import read_tflite
    from tacopt.partitioner.export import read_plan

    record = read_plan(read_tflite(out))
    assert len(record["ops"]) == read_tflite(out).number_of_nodes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--devices", "TPU,CPU"], "unknown device 'TPU'; known: CPU, GPU, NNAPI, NPU"),
        (["--devices", "GPU", "--pin", "nothing_*=GPU"], "matches no op"),
        (["--devices", "GPU", "--pin", "conv*=NNAPI"], "not in the device list"),
        (["--devices", "GPU", "--pin", "kind:CUMSUM=GPU"], "pin 'kind:CUMSUM=GPU' matches no op"),
        (["--devices", "GPU", "--pin", "kind:=GPU"], "names no op kind"),
        (["--devices", "GPU", "--explain", "nope_0"], "no op 'nope_0'"),
        (["--devices", "GPU", "--picker", "nope"], "nope"),
        (["--devices", "GPU", "--cost-model", "nope"], "nope"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(bundled_models, capsys, args, message):
    assert main(["partition", str(bundled_models[MODEL]), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_explain_names_refusals_costs_and_the_price_of_overriding(bundled_models, tmp_path, capsys):
    int8 = str(bundled_models["keras__mobilenet_v2_int8.tflite"])
    plan = tmp_path / "plan.json"
    args = ["partition", int8, "--devices", "GPU,NNAPI", "--explain", "softmax_64",
            "--granularity", "op", "--plan"]  # fmt: skip
    assert main([*args, str(plan)]) == 0
    text = capsys.readouterr().out
    assert "softmax_64 (SOFTMAX) runs on" in text
    recorded = json.loads(plan.read_text())["explain"]
    assert recorded["op"] == "softmax_64"
    sides = recorded["devices"]
    assert set(sides) == {"GPU", "NNAPI", "CPU"}
    for device, side in sides.items():
        if device == recorded["device"]:
            assert side["status"] == "chosen" and side["pinned_objective"] == recorded["objective"]
        elif side["refusal"] is None:  # overriding costs a re-solve, never less than the plan
            assert side["pinned_objective"] >= recorded["objective"] * (1 - 1e-9)
            assert side["cost"] > 0 and f"{device}: the op alone costs" in text
        else:
            assert f"{device}: refused ({side['refusal']['reason']})" in text


def test_explain_says_why_a_pin_can_beat_a_subgraph_plan(bundled_models, capsys):
    # at subgraph granularity softmax_64 shares a unit; pinning it alone to the GPU splits that
    # unit, and the re-solved plan is cheaper: the text says why rather than show a bare minus
    int8 = str(bundled_models["keras__mobilenet_v2_int8.tflite"])
    assert main(["partition", int8, "--devices", "GPU,NNAPI", "--explain", "softmax_64"]) == 0
    text = capsys.readouterr().out
    assert "GPU: the op alone costs" in text and "(-" in text
    assert "the pin splits unit" in text


def test_kind_pins_are_recorded_in_the_plan(bundled_models, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    args = ["partition", str(bundled_models[MODEL]), "--devices", "GPU", "--pin", "kind:mean=CPU"]
    assert main([*args, "--plan", str(plan)]) == 0
    record = json.loads(plan.read_text())
    assert record["pins"] == [
        {"pin": "kind:MEAN=CPU", "pattern": "kind:MEAN", "device": "CPU", "ops": ["mean_62"]}
    ]
    assert record["pinned"] == {"mean_62": "CPU"}
    (unit,) = [u for u, data in record["units"].items() if data["ops"] == ["mean_62"]]
    assert record["assignment"][unit]["device"] == "CPU"


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


# The start-up (issue 23): a one-unit problem is solved by trying its choices, so neither the
# solver stack (scipy, OR-Tools) nor the other pickers are imported, nor the learned model when
# the tac model prices; --help lists the pickers and cost models without importing one.
STARTUP = """
import sys
from tacopt.partitioner.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m in ("numpy", "networkx")
                or m.split(".")[0] in ("scipy", "ortools", "highspy")
                or m.startswith("tacopt.partitioner.pickers.")
                or m.startswith("tacopt.cost_models.learned.fitting"))
print(code, " ".join(loaded))
"""


def _loaded_after(*argv: str) -> tuple[int, set[str]]:
    done = subprocess.run([sys.executable, "-c", STARTUP, *argv], capture_output=True,
                          text=True, check=True)  # fmt: skip
    code, _, loaded = done.stdout.strip().splitlines()[-1].partition(" ")
    return int(code), set(loaded.split())


def test_a_one_unit_problem_starts_no_solver(bundled_models):
    model = bundled_models["keras__mobilenet_v2_float32.tflite"]
    code, loaded = _loaded_after("partition", str(model), "--devices", "GPU,CPU")
    assert code == 0
    assert not {m for m in loaded if m.startswith(("scipy", "ortools", "highspy"))}, sorted(loaded)
    assert not {m for m in loaded if ".learned." in m}, sorted(loaded)
    picker_modules = {m.rpartition(".")[2] for m in loaded if ".pickers." in m}
    # mip's proof race names the primal search's arrays and toulbar2's windows: both modules load
    # (13 ms), neither starts a solver (pytoulbar2 is imported at the first solve).
    allowed = {"exact", "engine", "baselines", "brute", "greedy", "registry", "reduce", "mip",
               "formulation", "search", "windows"}  # fmt: skip
    assert picker_modules <= allowed, sorted(loaded)
    assert "pytoulbar2" not in loaded, sorted(loaded)


def test_help_names_the_pickers_without_importing_them(capsys):
    code, loaded = _loaded_after("partition", "--help")
    assert code == 0
    assert {m for m in loaded if m.startswith("tacopt.")} <= {"tacopt.partitioner.pickers.registry"}


def test_version_imports_no_numpy():
    code, loaded = _loaded_after("--version")
    assert code == 0 and "numpy" not in loaded  # reporting errors does not load the whole IR


# --------------------------------------------------------------------------------------------
# options checked before any work; outputs all or nothing
# --------------------------------------------------------------------------------------------


def outputs(tmp_path):
    """Every output option, each in ``tmp_path`` (which must stay empty on an error)."""
    return [
        "--problem", str(tmp_path / "p.json"), "--plan", str(tmp_path / "plan.json"),
        "--export", str(tmp_path / "out.tflite"), "--dot", str(tmp_path / "plan.dot"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--devices", "GPU,GPU"], "device 'GPU' is listed twice in 'GPU,GPU'"),
        (["--devices", "GPU,,CPU"], "empty device name in 'GPU,,CPU'"),
        (["--devices", ""], "empty device list"),
        (["--devices", "GPU", "--granularity", "block"], "invalid choice: 'block'"),
        (["--devices", "GPU", "--cost-model", "missing.json"], "'missing.json' does not exist"),
        (["--devices", "GPU", "--picker", "bogus"], "unknown picker 'bogus'"),
        (["--devices", "GPU", "--time-limit", "-1"], "--time-limit: must be positive"),
        (["--devices", "GPU", "--time-limit", "0"], "--time-limit: must be positive"),
        (["--devices", "GPU", "--time-limit", "inf"], "--time-limit: must be positive"),
        (["--devices", "GPU", "--time-limit", "nan"], "--time-limit: must be positive"),
        (["--devices", "GPU", "--load", "no_such_file.py"], "--load no_such_file.py: no such"),
        # list options, checked as they are parsed (an empty or repeated name was dropped)
        (["--devices", "GPU", "--compare", "exact,,tac"],
         "argument --compare: empty name in 'exact,,tac'"),
        (["--devices", "GPU", "--compare", "tac,tac"],
         "argument --compare: 'tac' is listed twice in 'tac,tac'"),
        (["--devices", "GPU", "--memory", "GPU=1MiB,GPU=2MiB"],
         "argument --memory: device 'GPU' given twice"),
    ],
)
def test_bad_options_write_nothing(bundled_models, tmp_path, capsys, args, message):
    work = tmp_path / "out"
    work.mkdir()
    assert main(["partition", str(bundled_models[MODEL]), *args, *outputs(work)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("nodir/OUT.tflite", "--export: folder '{tmp}/nodir' does not exist"),
        (".", "--export: '{tmp}' is a folder, not a file"),
        ("p.json", "--problem and --export name the same file"),
    ],
)
def test_a_bad_output_path_writes_no_other_output(bundled_models, tmp_path, capsys, bad, message):
    argv = ["partition", str(bundled_models[MODEL]), "--devices", "GPU,CPU"]
    argv += ["--problem", str(tmp_path / "p.json"), "--plan", str(tmp_path / "plan.json")]
    bad_path = str(tmp_path) if bad == "." else str(tmp_path / bad)
    assert main([*argv, "--export", bad_path]) == 2
    err = capsys.readouterr().err
    assert message.format(tmp=tmp_path) in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(bundled_models, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    argv = ["partition", str(bundled_models[MODEL]), "--devices", "GPU"]
    assert main([*argv, "--plan", str(tmp_path / "plan.json"), "--dot", str(locked / "g.dot")]) == 2
    assert "not writable" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locked"]


def test_a_failure_after_staging_leaves_nothing(bundled_models, tmp_path, capsys, monkeypatch):
    from tacopt.errors import ModelFormatError
    from tacopt.partitioner.cli import partition_run

    def broken(result, path):
        raise ModelFormatError("cannot write this model")

    monkeypatch.setattr(partition_run, "export_tflite", broken)
    argv = ["partition", str(bundled_models[MODEL]), "--devices", "GPU", *outputs(tmp_path)]
    assert main(argv) == 2
    assert "cannot write this model" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # p.json and plan.json were staged, then removed


def test_the_text_report_names_the_cost_unit(bundled_models, capsys):
    assert main(["partition", str(bundled_models[MODEL]), "--devices", "GPU"]) == 0
    assert " TAC units (compute " in capsys.readouterr().out
    assert main(["partition", str(bundled_models[MODEL]), "--devices", "GPU", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unit"] == "tac"


def test_help_lists_the_registries(capsys):
    assert main(["partition", "--help"]) == 0
    out = capsys.readouterr().out
    assert "devices: CPU, GPU, NNAPI, NPU" in out and "pickers: brute, exact" in out
    assert "cost models: learned, roofline, tac" in out and "one unit per op" in out


SLOW_PICKER = """
import time
from pathlib import Path
from tacopt.partitioner.pickers import register_picker

def started_then_waits(problem, **options):
    Path({marker!r}).write_text("solving")
    while True:
        time.sleep(0.05)

register_picker("waits", started_then_waits)
"""


def test_ctrl_c_mid_solve_exits_130_and_writes_nothing(bundled_models, tmp_path):
    marker = tmp_path / "solving"
    module = tmp_path / "waits.py"
    module.write_text(SLOW_PICKER.format(marker=str(marker)))
    work = tmp_path / "out"
    work.mkdir()
    argv = [sys.executable, "-m", "tacopt.partitioner.cli", "partition",
            str(bundled_models[MODEL]), "--devices", "GPU", "--load", str(module),
            "--picker", "waits", *outputs(work)]  # fmt: skip
    assert interrupt_once_started(argv, marker) == (130, "tacopt partition: interrupted\n")
    assert list(work.iterdir()) == []


def interrupt_once_started(argv: list[str], marker) -> tuple[int, str]:
    """Run ``argv``, send SIGINT once ``marker`` exists (the solve started): (exit code, stderr)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not marker.exists() and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    return proc.returncode, err


def test_a_picker_spec_works_without_load(bundled_models, tmp_path, capsys, monkeypatch):
    (tmp_path / "spec_picker_partition.py").write_text(
        "from tacopt.partitioner.pickers import get_picker\n"
        "def cheapest(problem):\n"
        "    return get_picker('greedy')(problem)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["partition", str(bundled_models[MODEL]), "--devices", "GPU", "--json"]
    assert main([*argv, "--picker", "spec_picker_partition:cheapest"]) == 0
    assert json.loads(capsys.readouterr().out)["picker"] == "greedy"
    assert main([*argv, "--picker", "no_such_module_x:mine"]) == 2
    assert "cannot import 'no_such_module_x'" in capsys.readouterr().err


def test_memory_limits_the_plan_and_json_reports_peaks(bundled_models, tmp_path, capsys):
    model = str(bundled_models[MODEL])
    base = ["partition", model, "--devices", "GPU,CPU", "--granularity", "op", "--json"]
    assert main(base) == 0
    free = json.loads(capsys.readouterr().out)
    gpu_peak = free["peak_memory"]["GPU"]
    assert gpu_peak > 0 and free["capacity"] == {}
    limit = int(gpu_peak // 2)
    assert main([*base, "--memory", f"GPU={limit}B", "--problem", str(tmp_path / "p.json")]) == 0
    half = json.loads(capsys.readouterr().out)
    assert half["capacity"] == {"GPU": limit} and half["fits"] is True
    assert 0 < half["peak_memory"]["GPU"] <= limit
    assert half["objective"] >= free["objective"]
    from tacopt.partitioner.problem import load_problem

    problem = load_problem(tmp_path / "p.json")
    assert problem.capacity == {"GPU": limit}
    assert any(c.memory > 0 for u in problem.units for c in u.choices)


@pytest.mark.parametrize(
    ("memory", "message"),
    [
        ("GPU=12XB", "'GPU=12XB' is not DEVICE=SIZE"),
        ("GPU", "'GPU' is not DEVICE=SIZE"),
        ("GPU=1MiB,GPU=2MiB", "device 'GPU' given twice"),
        ("NPU=1MiB", "capacity of unknown device 'NPU'; devices: GPU, CPU"),
        ("CPU=1KB", "exact picker: no plan fits the capacities"),
    ],
)
def test_bad_memory_is_one_line_and_exit_2(bundled_models, capsys, memory, message):
    code = main(["partition", str(bundled_models[MODEL]), "--devices", "GPU,CPU",
                 "--memory", memory])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_main_collects_garbage_less_often_while_it_runs_and_restores_the_thresholds(
    bundled_models, tmp_path, monkeypatch, capsys
):
    import gc

    from tacopt.partitioner import cli

    module = tmp_path / "peek.py"
    module.write_text("import gc\nSEEN = gc.get_threshold()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = gc.get_threshold()
    argv = ["partition", str(bundled_models[MODEL]), "--devices", "GPU", "--load", "peek"]
    assert cli.main(argv) == 0
    import peek  # type: ignore[import-not-found]

    assert peek.SEEN == (cli.GC_THRESHOLD, *before[1:]) and gc.get_threshold() == before


def test_partition_says_what_it_wrote_and_counts_ops_as_the_page_does(
    bundled_models, tmp_path, capsys
):
    """Issue 46: --plan / --dot / --html were written silently, and the op counts included the
    conversions the applied graph adds (CPU 2, GPU 1, NNAPI 66 against the page's 65 ops)."""
    int8 = str(bundled_models["keras__mobilenet_v2_int8.tflite"])
    files = {"--plan": tmp_path / "plan.json", "--dot": tmp_path / "plan.dot",
             "--html": tmp_path / "plan.html"}  # fmt: skip
    argv = ["partition", int8, "--devices", "GPU,NNAPI,CPU", "--granularity", "op"]
    assert main([*argv, *(a for opt, path in files.items() for a in (opt, str(path)))]) == 0
    out = capsys.readouterr().out
    wrote = out.splitlines()[-1]
    assert wrote == "wrote " + ", ".join(f"{path} ({opt})" for opt, path in files.items())
    plan = json.loads(files["--plan"].read_text())
    counts: dict[str, int] = {}
    for name, unit in plan["units"].items():
        device = plan["assignment"][name]["device"]
        counts[device] = counts.get(device, 0) + len(unit["ops"])
    line = next(x for x in out.splitlines() if x.startswith("ops per device: "))
    shown = line.removeprefix("ops per device: ").split(" (")[0]
    assert shown == ", ".join(f"{d} {n}" for d, n in sorted(counts.items()))
    assert sum(counts.values()) == 65 and "conversions on the CPU" in line
    assert main([*argv, "--json", "--plan", str(files["--plan"])]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # stdout stays one JSON document; the note goes to stderr
    assert captured.err.strip() == f"wrote {files['--plan']} (--plan)"

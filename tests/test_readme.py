"""The README's commands run as written, so the documentation cannot go stale.

Runs, in a scratch folder: the main job of the set-up section (``tacopt bench``), every line of
the Tour (``$M`` is the bundled int8 MobileNetV2, the tour's ``benchmarks/models/`` the clone's;
the full shared-zoo study, the whole contest set and the training sweep are left to the benchmark
scripts), the "From Python" snippet as written, and the "Your own device" example.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
MODEL = ROOT / "benchmarks" / "models" / "keras__mobilenet_v2_int8.tflite"
SLOW_OR_NEEDS_ZOO = ("--zoo shared", "bench report", "--zoo iopddl", "--sweep", "tacopt learn")
#: The contest problems beside the clone (the README's ../shared/iopddl, from the clone's root).
IOPDDL = ROOT.parent / "shared" / "iopddl"


def blocks_after(heading: str, lang: str) -> list[str]:
    """The fenced ``lang`` code blocks of the README section that starts at ``heading``."""
    section = README.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{lang}\n(.*?)```", section, flags=re.S)


def commands(block: str) -> list[str]:
    lines = (line.split("  #", 1)[0].strip() for line in block.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "M="))]


def run(cmd: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "M": str(MODEL)}
    cmd = cmd.replace(" benchmarks/models/", f" {ROOT}/benchmarks/models/")  # from the clone
    return subprocess.run(
        cmd, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_readme_has_exactly_two_set_up_commands() -> None:
    setup = [c for b in blocks_after("## Set up", "sh") for c in commands(b)]
    assert setup == ["pip install . && tacopt bench", "pip install -e '.[test]' && pytest"]


def test_the_main_job_runs_and_prints_the_summary(tmp_path: Path) -> None:
    result = run("tacopt bench", tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "| exact |" in result.stdout and "| tac |" in result.stdout
    assert (tmp_path / "tacopt-bench" / "report.md").is_file()


def test_every_tour_command_runs(tmp_path: Path) -> None:
    tour = [c for b in blocks_after("## Tour", "sh") for c in commands(b)]
    assert len(tour) >= 10
    for cmd in tour:
        if any(skip in cmd for skip in SLOW_OR_NEEDS_ZOO):
            continue
        if "../shared/iopddl" in cmd:
            if not IOPDDL.is_dir():
                continue
            cmd = cmd.replace("../shared/iopddl", str(IOPDDL))
        result = run(cmd, tmp_path)
        assert result.returncode == 0, f"{cmd}\n{result.stderr[-2000:]}"
    assert (tmp_path / "out.tflite").is_file() and (tmp_path / "model.json.gz").is_file()


def test_the_tours_pick_problem_is_one_where_the_pickers_differ(tmp_path: Path) -> None:
    """Issue 23: the tour compared pickers on a one-unit problem, where every picker ties."""
    tour = [c for b in blocks_after("## Tour", "sh") for c in commands(b)]
    (make,) = [c for c in tour if "--problem p.json" in c]
    (compare,) = [c for c in tour if c.startswith("tacopt pick p.json --compare")]
    assert run(make, tmp_path).returncode == 0
    result = run(compare + " --json", tmp_path)
    assert result.returncode == 0, result.stderr
    plans = {p["picker"]: p["objective"] for p in json.loads(result.stdout)["plans"]}
    assert len(json.loads((tmp_path / "p.json").read_text())["units"]) > 1
    assert len(set(plans.values())) > 1 and min(plans.values()) == plans["exact"]


def test_the_device_example_runs(tmp_path: Path) -> None:
    section = "## Your own device"
    (module,) = blocks_after(section, "python")
    (tmp_path / "my_dsp.py").write_text(module)
    (cmd,) = (c for b in blocks_after(section, "sh") for c in commands(b))
    result = run(cmd.replace("model.tflite", str(MODEL)), tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "DSP" in result.stdout


@pytest.mark.parametrize("line", ["tacopt partition $M --devices TPU,CPU"])
def test_a_readme_style_mistake_is_one_line_and_exit_2(tmp_path: Path, line: str) -> None:
    result = run(line, tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr


def test_the_python_example_runs(tmp_path: Path) -> None:
    (block,) = blocks_after("## From Python", "python")
    (tmp_path / "example.py").write_text(block)  # as written: it reads a bundled model
    result = run(f"{sys.executable} example.py", tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    objective, ratio = map(float, result.stdout.split())
    assert objective > 0 and ratio >= 1.0


def test_the_tour_shows_what_tacopt_does(tmp_path: Path) -> None:
    """Issue 46: the tour's float model showed no difference between exact and tac, and its
    ``--explain`` came with a pin, so it only said "refused (pin)"."""
    tour = [c for b in blocks_after("## Tour", "sh") for c in commands(b)]
    (explain,) = [c for c in tour if "--explain" in c]
    assert "--pin" not in explain
    out = run(explain, tmp_path).stdout
    assert "refused (pin)" not in out and out.count("pinned here, the plan costs") >= 2, out
    (tac,) = [c for c in tour if c.startswith("tacopt partition $M") and "--picker tac" in c]
    objective = {}
    for cmd, picker in ((tac.split("--picker")[0], "exact"), (tac, "tac")):
        summary = json.loads(run(cmd + " --json", tmp_path).stdout)
        assert summary["picker"] == picker
        objective[picker] = summary["objective"]
    assert objective["tac"] > objective["exact"] * 1.001
    partition = run(tac.split("--picker")[0], tmp_path).stdout
    assert "(in the applied graph: " in partition  # conversions counted apart, as the page does

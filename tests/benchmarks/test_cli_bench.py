"""``tacopt bench`` and ``tacopt bench report``: options, outputs, exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.benchmarks.cli import bench as cli
from tacopt.benchmarks.cli.bench_run import default_out
from tacopt.benchmarks.harness import DEFAULT_DEVICE_SETS, DEFAULT_PICKERS, read_records
from tacopt.partitioner.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _args(argv: list[str]):
    import argparse

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["bench", *argv])


def test_no_arguments_is_the_default_study() -> None:
    args = _args([])
    assert args.run is cli.run_bench and args.zoo is None and args.devices is None
    assert args.granularity == ("subgraph", "op")
    assert args.pickers is None and DEFAULT_PICKERS == ("exact", "tac", "greedy", "first-fit")
    assert args.out is None and default_out([]) == Path("tacopt-bench/results.jsonl")
    assert DEFAULT_DEVICE_SETS == (("GPU", "CPU"), ("NNAPI", "CPU"), ("GPU", "NNAPI", "CPU"))


def test_options_parse_into_lists() -> None:
    args = _args(["--zoo", "bundled", "layered:10", "--devices", "gpu,cpu", "NNAPI,CPU",
                  "--pickers", "exact,greedy", "--granularity", "op", "--jobs", "3"])  # fmt: skip
    assert args.zoo == ["bundled", "layered:10"]
    assert args.devices == [("GPU", "CPU"), ("NNAPI", "CPU")]
    assert (args.pickers, args.granularity, args.jobs) == (("exact", "greedy"), ("op",), 3)
    report = _args(["report", "r.jsonl", "-o", "out"])
    assert report.run is cli.run_report and report.results == Path("r.jsonl")


def test_bench_runs_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "res" / "r.jsonl"
    code = main(["bench", "--zoo", "layered:10,20", "--pickers", "exact,greedy", "--jobs", "1",
                 "--no-progress", "--out", str(out)])  # fmt: skip
    assert code == 0
    stdout = capsys.readouterr().out
    assert "| exact | 2 | 0 | 1.0000 |" in stdout and "| greedy | 2 | 0 |" in stdout
    assert len(read_records(out)) == 4
    assert (tmp_path / "res" / "report.md").is_file()
    assert (tmp_path / "res" / "time_vs_units.png").is_file()
    code = main(["bench", "report", str(out), "-o", str(tmp_path / "rep"), "--no-plots"])
    assert code == 0
    assert "| greedy | 2 | 0 |" in (tmp_path / "rep" / "report.md").read_text()


def test_a_second_zoo_gets_its_own_folder_and_never_mixes_into_a_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: the tour's two studies appended to one results file, whose report then mixed
    both zoos."""
    monkeypatch.chdir(tmp_path)
    argv = ["bench", "--zoo", "layered:10", "--pickers", "greedy", "--jobs", "1", "--no-progress"]
    assert main(argv) == 0
    assert {r["zoo"] for r in read_records("tacopt-bench/layered-10/results.jsonl")} == {"layered"}
    assert not Path("tacopt-bench/results.jsonl").exists()
    out = tmp_path / "other.jsonl"
    out.write_text('{"key": "shared/m|GPU,CPU|op|tac|seed=0|exact", "zoo": "shared"}\n')
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds the records of another study (zoo shared)" in err and "\n" not in err
    assert out.read_text().count("\n") == 1  # untouched
    study = tmp_path / "tacopt-bench" / "layered-10" / "results.jsonl"
    before = study.read_text()
    assert main(["bench", "--zoo", f"iopddl:{tmp_path}", "--out", str(study)]) == 2
    assert "holds the records of a model study" in capsys.readouterr().err
    assert study.read_text() == before  # the contest's records would have replaced them


def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--zoo", "nope", "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tacopt bench: error: unknown zoo 'nope'") and "\n" not in err
    assert main(["bench", "report", str(tmp_path / "missing.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_python_m_benchmarks_bench_is_the_same_command(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tacopt.benchmarks", "bench", "--zoo", "layered:10", "--pickers",
         "greedy", "--jobs", "1", "--no-progress", "--no-report",
         "--out", str(tmp_path / "r.jsonl")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "| greedy | 1 | 0 |" in result.stdout


# ---------------------------------------------------------------------------------------------
# options checked before any work


def _broken_zoo(root: Path) -> str:
    zoo = root / "zoo"
    zoo.mkdir()
    (zoo / "fine.tflite").write_bytes((ROOT / "benchmarks/models/keras__mobilenet_v2_int8.tflite")
                                      .read_bytes())  # fmt: skip
    (zoo / "torn.tflite").write_bytes(b"TFL3" * 10)
    return f"folder:{zoo}"


BAD_OPTIONS = [
    (["--devices", "TPU,CPU"], "devices 'TPU,CPU': unknown device 'TPU'; known: CPU, GPU"),
    (["--devices", "GPU,GPU"], "devices 'GPU,GPU': 'GPU' is listed twice"),
    (["--devices", ""], "devices '': empty device list"),
    (["--devices", "GPU,,CPU"], "devices 'GPU,,CPU': empty device name"),
    (["--granularity", "block"], "unknown granularity 'block'; known: subgraph, op"),
    (["--cost-model", "nope.json"], "cost model file 'nope.json' does not exist"),
    (["--cost-model", "nope"], "unknown cost model 'nope'"),
    (["--pickers", "exact,bogus"], "unknown picker 'bogus'; known: brute, exact"),
    (["--pickers", "exact,greedy,exact"], "pickers: 'exact' is listed twice"),
    (["--pickers", "exact,nomod_xyz:Mine"], "picker 'nomod_xyz:Mine': cannot import 'nomod_xyz'"),
    (["--zoo", "nope"], "unknown zoo 'nope'"),
    (["--zoo", "folder:{tmp}/missing"], "zoo folder '{tmp}/missing' does not exist"),
    (["--zoo", "folder:{tmp}/afile"], "zoo folder '{tmp}/afile' is a file, not a folder"),
    (["--zoo", "BROKEN"], "torn.tflite: "),
    (["--jobs", "0"], "argument --jobs: must be at least 1, got 0"),
    (["--time-limit", "-1"], "--time-limit: must be positive and finite (seconds), got -1"),
    (["--time-limit", "inf"], "--time-limit: must be positive and finite (seconds), got inf"),
    (["--out", "{tmp}"], "--out: '{tmp}' is a folder, not a file"),
    (["--out", "{tmp}/afile/r.jsonl"], "--out: '{tmp}/afile' is a file, not a folder"),
    (["--report", "{tmp}/afile"], "--report: '{tmp}/afile' is a file, not a folder"),
    (["--load", "{tmp}/nope.py"], "--load {tmp}/nope.py: no such file"),
    (["--memory", "GPU=12XB"], "--memory: 'GPU=12XB' is not DEVICE=SIZE"),
    (["--devices", "GPU,CPU", "--memory", "NPU=1MiB"], "memory: device 'NPU' is in no device set"),
]


@pytest.mark.parametrize(
    ("argv", "message"), BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS]
)
def test_a_bad_option_is_one_line_exit_2_and_nothing_written(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("x")
    broken = _broken_zoo(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    argv = [a.replace("{tmp}", str(tmp_path)).replace("BROKEN", broken) for a in argv]
    out = [] if "--out" in argv else ["--out", str(tmp_path / "res" / "r.jsonl")]
    zoo = [] if "--zoo" in argv else ["--zoo", "layered:5"]  # --zoo extends the list
    code = main(["bench", "--jobs", "1", *zoo, *argv, *out, "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("tacopt bench: error: ") and err.count("\n") == 1, err
    assert message.replace("{tmp}", str(tmp_path)) in err
    assert sorted(tmp_path.rglob("*")) == before  # nothing written


def test_all_failed_records_are_not_a_silent_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # mincut is out of scope on every layered problem: a record each, then a warning and exit 1
    code = main(["bench", "--zoo", "layered:5,6", "--pickers", "mincut", "--jobs", "1",
                 "--no-progress", "--no-report", "--out", str(tmp_path / "r.jsonl")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "warning: 2 of 2 records failed (ERROR / CRASH)" in err and err.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# Ctrl-C


def test_ctrl_c_stops_within_2_s_with_the_resume_hint_and_keeps_records(tmp_path: Path) -> None:
    """The acceptance of issue 11 (10 of 10 trials: ``python -m tacopt.benchmarks
    check_interrupt``); the suite runs 2, one with a second Ctrl-C."""
    from tacopt.benchmarks.scripts.pipeline.check_interrupt import HINT, interrupt_bench

    for i, second in enumerate((None, 0.05)):
        trial = interrupt_bench(tmp_path / f"r{i}.jsonl", jobs=2, second_sigint_s=second)
        assert trial.returncode == 130, trial
        assert trial.seconds < 2.0, trial
        lines = trial.stderr.strip().splitlines()
        assert len(lines) == 1 and HINT in lines[0], trial
        assert lines[0].startswith("tacopt bench: interrupted: ") and " of 5 cases done" in lines[0]
        assert trial.valid and trial.records >= 1, trial
        # the kept records resume: run again and the first case is not redone
        kept = read_records(tmp_path / f"r{i}.jsonl")
        assert {r["model"] for r in kept} >= {"layered_N10"}


# ---------------------------------------------------------------------------------------------
# pickers of one's own

MY_PICKER = '''
from tacopt.partitioner.pickers import get_picker


class MyPicker:
    """The greedy plan, under another name."""

    def __call__(self, problem, **options):
        return get_picker("greedy")(problem)
'''


def _bench(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "tacopt.partitioner.cli", "bench", *argv, "--no-progress"],
        cwd=cwd, capture_output=True, text=True, timeout=300, env={**os.environ, **env},
    )  # fmt: skip


def test_a_user_picker_spec_is_benchmarked_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "mymod.py").write_text(MY_PICKER)
    out = tmp_path / "res" / "r.jsonl"
    result = _bench(["--pickers", "exact,mymod:MyPicker", "--zoo", "layered:10,20,30",
                     "--jobs", "2", "--out", str(out)], tmp_path,
                    PYTHONPATH=str(tmp_path))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "| mymod:MyPicker | 3 | 0 |" in result.stdout
    mine = [r for r in read_records(out) if r["picker"] == "mymod:MyPicker"]
    assert [r["status"] for r in mine] == ["HEURISTIC"] * 3
    assert all(r["ratio_to_exact"] >= 1 - 1e-9 for r in mine)
    assert (tmp_path / "res" / "report.md").is_file()


def test_load_registers_a_picker_here_and_in_every_worker(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        MY_PICKER + '\nfrom tacopt.partitioner.pickers import register_picker\n'
        'register_picker("mine", MyPicker())\n'
    )  # fmt: skip
    out = tmp_path / "r.jsonl"
    result = _bench(["--load", str(tmp_path / "mine.py"), "--pickers", "exact,mine",
                     "--zoo", "layered:10,20", "--jobs", "2", "--no-report", "--out", str(out)],
                    tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [r["status"] for r in read_records(out) if r["picker"] == "mine"] == ["HEURISTIC"] * 2
    unknown = _bench(["--pickers", "exact,mine", "--zoo", "layered:10", "--out", str(out)],
                     tmp_path)  # fmt: skip
    assert unknown.returncode == 2 and "unknown picker 'mine'" in unknown.stderr


STUDY_SCRIPT = """
from tacopt.benchmarks.harness import Study, run_study
from tacopt.partitioner.pickers import get_picker, register_picker
import mymod  # registers "from-module"


def in_main(problem, **options):
    return get_picker("greedy")(problem)


register_picker("in-main", in_main)
records = run_study(Study(zoos=("layered:10,20",), pickers=PICKERS), OUT, jobs=JOBS)
print(sorted({(r["picker"], r["status"]) for r in records}))
"""


@pytest.mark.parametrize(
    ("pickers", "jobs", "expected"),
    [
        # a picker defined in __main__ runs in this process (default jobs)
        (("exact", "in-main"), None, "[('exact', 'OPTIMAL'), ('in-main', 'HEURISTIC')]"),
        # one registered by an importable module runs in worker processes
        (("exact", "from-module"), 2, "[('exact', 'OPTIMAL'), ('from-module', 'HEURISTIC')]"),
        # __main__ and worker processes: refused up front
        (("exact", "in-main"), 2, "BenchmarkError: picker 'in-main' is defined in __main__"),
    ],
)
@pytest.mark.parametrize("how", ["unguarded script", "notebook (python -c)"])
def test_run_study_with_user_pickers_from_a_script_or_notebook(
    tmp_path: Path, pickers: tuple[str, ...], jobs: int | None, expected: str, how: str
) -> None:
    import os

    (tmp_path / "mymod.py").write_text(
        MY_PICKER + '\nfrom tacopt.partitioner.pickers import register_picker\n'
        'register_picker("from-module", MyPicker())\n'
    )  # fmt: skip
    code = STUDY_SCRIPT.replace("PICKERS", repr(pickers)).replace("JOBS", repr(jobs))
    code = code.replace("OUT", repr(str(tmp_path / "r.jsonl")))
    (tmp_path / "study.py").write_text(code)
    argv = ["study.py"] if how == "unguarded script" else ["-c", code]
    result = subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)})  # fmt: skip
    assert expected in result.stdout + result.stderr, result.stderr
    assert "CRASH" not in result.stdout and "ERROR" not in result.stdout


# ---------------------------------------------------------------------------------------------
# reports, help, resume


def test_bench_report_keeps_an_existing_report_unless_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["bench", "--zoo", "layered:10", "--pickers", "exact,greedy", "--jobs", "1",
                 "--no-progress", "--out", str(out)]) == 0  # fmt: skip
    report = tmp_path / "report.md"
    assert report.read_text().startswith("# tacopt benchmark: layered\n")
    report.write_text(report.read_text().replace("# tacopt benchmark: layered", "# My study"))
    before = report.read_text()
    capsys.readouterr()
    assert main(["bench", "report", str(out), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "report.md exists; give -o" in err and err.count("\n") == 1
    assert report.read_text() == before
    assert main(["bench", "report", str(out), "-o", str(tmp_path), "--no-plots"]) == 0
    assert report.read_text().startswith("# My study\n")  # replaced, title kept
    assert main(["bench", "report", str(out), "-o", str(tmp_path / "new"), "--no-plots"]) == 0
    assert (tmp_path / "new" / "report.md").read_text().startswith("# tacopt benchmark: layered")


def test_help_lists_what_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "devices CPU, GPU, NNAPI, NPU" in text
    assert "pickers brute, exact, first-fit, greedy, mincut, tac" in text
    assert "cost models learned, roofline, tac" in text and "zoos bundled, folder, layered" in text
    assert "--granularity G1,G2 units of the pick problem" in text
    assert cli.MAIN_JOB in text


def test_a_resumed_study_with_nothing_to_do_shows_no_progress_bar(tmp_path: Path) -> None:
    argv = ["--zoo", "layered:10", "--pickers", "greedy", "--jobs", "1", "--no-report",
            "--out", str(tmp_path / "r.jsonl")]  # fmt: skip
    run = [sys.executable, "-m", "tacopt.partitioner.cli", "bench", *argv]
    first = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and "1/1" in first.stderr
    again = subprocess.run(run, capture_output=True, text=True, timeout=120)
    # one line says what was kept (a resumed run used to say nothing), and no progress bar
    assert again.returncode == 0 and again.stderr == (
        f"tacopt bench: resuming {tmp_path / 'r.jsonl'}: 1 of 1 records are already there and "
        "are not run again (1 of 1 cases complete); 0 to run\n"
    )


def test_a_resumed_study_says_what_it_skipped_and_what_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.jsonl"
    argv = ["bench", "--zoo", "layered:10,11", "--pickers", "greedy", "--jobs", "1",
            "--no-report", "--no-progress", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    lines = out.read_text().splitlines()
    failed = lines[0].replace('"status": "HEURISTIC"', '"status": "ERROR"')
    out.write_text(failed + "\n")  # one record kept, and it failed; the other case is gone
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "1 of 2 records are already there and are not run again (1 of 2 cases complete; " in err
    assert "1 failed: --retry-failed runs them again); 1 to run" in err


DEVICE_NOTEBOOK = """
from tacopt.benchmarks.harness import Study, run_study
from tacopt.partitioner.targets import SimpleTarget, register_target

register_target(SimpleTarget("DSP", frozenset(), 2.0))
study = Study(zoos=("resnet:2,3",), device_sets=(("DSP", "CPU"),), pickers=("exact", "greedy"))
records = run_study(study, OUT, jobs=JOBS)
print(sorted({(r["devices"], r["status"]) for r in records}))
"""


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        (None, "[('DSP,CPU', 'HEURISTIC'), ('DSP,CPU', 'OPTIMAL')]"),  # runs in this process
        (2, "device 'DSP' is registered here but not in worker processes"),
    ],
)
def test_a_device_registered_in_a_notebook(tmp_path: Path, jobs: int | None, expected: str) -> None:
    code = DEVICE_NOTEBOOK.replace("OUT", repr(str(tmp_path / "r.jsonl")))
    code = code.replace("JOBS", repr(jobs))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    assert expected in result.stdout + result.stderr, result.stderr
    assert (tmp_path / "r.jsonl").exists() == (jobs is None)  # refused: nothing written

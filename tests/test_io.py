"""Outputs of every command (tacopt.io): checked before any work, written all or nothing, and
never onto an input, a device, a FIFO or a symlink; every OSError while writing is one line."""

from __future__ import annotations

import errno
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tacopt.errors import OutputError
from tacopt.io import all_or_nothing, atomic_write, check_output_path
from tacopt.partitioner.cli import main

MODEL = "keras__text_lstm_float32.tflite"


@pytest.fixture
def model(bundled_models, tmp_path) -> Path:
    path = tmp_path / "m.tflite"
    shutil.copyfile(bundled_models[MODEL], path)
    return path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _argvs(model: Path, out: Path) -> list[list[str]]:
    """Every command line that writes ``out`` (``problem.json`` is an input beside the model)."""
    problem = model.with_name("problem.json")
    records = model.with_name("records.jsonl")
    partition = ["partition", str(model), "--devices", "GPU,CPU"]
    return [
        [*partition, "--plan", str(out)],
        [*partition, "--html", str(out)],
        [*partition, "--dot", str(out)],
        [*partition, "--problem", str(out)],
        [*partition, "--export", str(out)],
        ["fuse", str(model), "-o", str(out)],
        ["rehydrate", str(model), str(out)],
        ["pick", str(problem), "--plan", str(out)],
        ["fit", str(records), "-o", str(out)],
    ]


@pytest.fixture
def inputs(model) -> Path:
    """The model, a pick problem and a records file beside it."""
    assert main(["partition", str(model), "--devices", "GPU,CPU",
                 "--problem", str(model.with_name("problem.json"))]) == 0  # fmt: skip
    model.with_name("records.jsonl").write_text('{"type": "op"}\n')
    return model


def test_an_output_that_is_an_input_is_refused_by_every_command(inputs, capsys):
    capsys.readouterr()
    for argv in _argvs(inputs, inputs):
        # The input itself, under its own name and through a hard link.
        the_input = Path(argv[1])
        link = the_input.with_name("link" + the_input.suffix)
        link.unlink(missing_ok=True)
        os.link(the_input, link)
        for out in (the_input, link):
            before = the_input.read_bytes()
            argv_out = [str(out) if a == str(inputs) and i > 1 else a for i, a in enumerate(argv)]
            if argv[0] in ("pick", "fit"):
                argv_out = [*argv[:-1], str(out)]
            assert main(argv_out) == 2, argv_out
            assert "is an input of this command" in _one_line(capsys), argv_out
            assert the_input.read_bytes() == before


def test_no_command_replaces_a_file_of_another_kind(inputs, tmp_path, capsys):
    """``--plan model.tflite`` once turned a model into a plan: an existing file may be replaced
    only by a file of its own kind, and a command may write over its own earlier output."""
    capsys.readouterr()
    foreign = {"tflite": inputs.read_bytes(), "notes": b"my notes, not a plan\n"}
    for argv in _argvs(inputs, tmp_path / "out"):
        writes_model = argv[0] in ("fuse", "rehydrate") or "--export" in argv
        out = tmp_path / "out"
        for name, data in foreign.items():
            if writes_model and name == "tflite":
                continue
            out.write_bytes(data)
            assert main(argv) == 2, argv
            assert "refusing to replace it" in _one_line(capsys), argv
            assert out.read_bytes() == data, argv
        out.unlink()
        if argv[0] == "fit":  # the records here are not enough for a fit
            continue
        for _ in range(2):  # its own output, twice
            assert main(argv) == 0, argv
        capsys.readouterr()
        out.unlink()


def test_the_kind_is_checked_again_before_anything_is_renamed(tmp_path):
    """Without a declared kind, the staged bytes are checked against every target before the
    first rename: nothing is written when one of them would replace a file of another kind."""
    image = tmp_path / "b.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    with pytest.raises(OutputError, match="is a PNG image, and this writes JSON"):
        with all_or_nothing([("--a", tmp_path / "a.json"), ("--b", image)]) as out:
            out.write(tmp_path / "a.json", "{}")
            out.write(image, '{"plan": 1}')
    assert _files(tmp_path) == {"b.png"}
    with pytest.raises(OutputError, match="refusing to replace it"):
        atomic_write(image, "{}")
    assert image.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("kind", ["fifo", "symlink", "device"])
def test_an_existing_path_that_is_not_a_regular_file_is_kept(inputs, tmp_path, kind, capsys):
    out = Path("/dev/null") if kind == "device" else tmp_path / f"out.{kind}"
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "symlink":
        (tmp_path / "target.json").write_text("keep")
        out.symlink_to(tmp_path / "target.json")
    before = os.lstat(out)
    capsys.readouterr()
    for argv in _argvs(inputs, out):
        assert main(argv) == 2, argv
        assert ("symbolic link" if kind == "symlink" else "not a regular file") in _one_line(capsys)
    after = os.lstat(out)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    if kind == "symlink":
        assert (tmp_path / "target.json").read_text() == "keep"


def test_a_path_ending_in_a_slash_is_a_folder(inputs, tmp_path, capsys):
    capsys.readouterr()
    for argv in _argvs(inputs, tmp_path / "x"):
        argv[-1] = str(tmp_path / "newdir") + "/"
        assert main(argv) == 2, argv
        assert "names a folder" in _one_line(capsys)
    assert not (tmp_path / "newdir").exists()


def test_a_name_too_long_and_an_unwritable_folder_are_one_line(inputs, tmp_path, capsys):
    capsys.readouterr()
    argv = ["partition", str(inputs), "--devices", "GPU,CPU", "--plan"]
    assert main([*argv, str(tmp_path / ("a" * 300 + ".json"))]) == 2
    assert "file name too long" in _one_line(capsys)
    # As root os.access says yes to /proc; creating a file there is what fails.
    assert main([*argv, "/proc/x.json"]) == 2
    assert "is not writable" in _one_line(capsys)
    # A name that fits, but whose staging name would not if it were built from the whole name.
    long_ok = tmp_path / ("b" * 250 + ".json")
    assert main([*argv, str(long_ok)]) == 0
    assert long_ok.is_file()


def _files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_a_full_disk_while_staging_leaves_nothing(tmp_path, monkeypatch):
    before = _files(tmp_path)

    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(OutputError, match=r"--plan: cannot write .*No space left on device"):
        with all_or_nothing([("--plan", tmp_path / "p.json")]) as out:
            out.write(tmp_path / "p.json", "x")
    assert _files(tmp_path) == before


def test_atomic_write_turns_an_oserror_into_one_error(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OutputError, match="Read-only file system"):
        atomic_write(tmp_path / "x.json", "{}", what="--plan")
    assert list(tmp_path.iterdir()) == []


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


def test_a_file_size_limit_is_one_line_and_leaves_nothing(inputs, tmp_path):
    out = tmp_path / "page.html"
    done = subprocess.run(
        [sys.executable, "-m", "tacopt.partitioner.cli", "partition", str(inputs),
         "--devices", "GPU,CPU", "--html", str(out)],
        capture_output=True, text=True, preexec_fn=_limit_file_size, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "File too large" in done.stderr
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_stdout_on_a_full_device_is_one_line(inputs):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "tacopt.partitioner.cli", "inspect", str(inputs)],
            stdout=full, stderr=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == "tacopt inspect: error: cannot write standard output: " \
        "No space left on device"  # fmt: skip


def test_stdout_dash_passes_the_check(tmp_path):
    assert check_output_path("-", what="--plan") == Path("-")

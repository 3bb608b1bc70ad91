"""Ctrl-C on ``tacopt bench``: how fast it stops, its exit code, its message, its results file.

    python -m tacopt.benchmarks check_interrupt --trials 10 --jobs 2

Each trial starts ``tacopt bench`` on layered DAGs: a small first case, then large ones
(20,000 units by default) that keep every worker solving. It waits until the first record is
in the results file, sends SIGINT (and, every other trial, a second SIGINT 50 ms later), then
reports how long the command took to exit, its exit code and stderr, and whether the results
file is valid JSONL holding every finished record. The acceptance is: exit within 2 s with code
130, one line on stderr with the resume hint, a valid file, in every trial.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HINT = "run the same command again to resume"


@dataclass(frozen=True, slots=True)
class Trial:
    """One interrupted run: seconds from the first SIGINT to exit, and what it left."""

    seconds: float
    returncode: int | None
    stderr: str
    records: int
    valid: bool

    @property
    def ok(self) -> bool:
        """Stopped within 2 s with code 130, one line with the hint, valid results."""
        one_line = len(self.stderr.strip().splitlines()) == 1
        return (
            self.seconds < 2.0
            and self.returncode == 130
            and one_line
            and HINT in self.stderr
            and self.valid
            and self.records >= 1
        )


def interrupt_bench(
    out: Path,
    *,
    jobs: int = 2,
    sizes: Sequence[int] = (10, 20_000, 20_001, 20_002, 20_003),
    second_sigint_s: float | None = None,
    start_timeout_s: float = 300.0,
) -> Trial:
    """Run ``tacopt bench`` into ``out``, interrupt it after its first record, return the trial.

    Raises
    ------
    RuntimeError
        If the command ends, or writes no record within ``start_timeout_s``, before SIGINT.
    """
    zoo = "layered:" + ",".join(str(n) for n in sizes)
    command = [sys.executable, "-m", "tacopt.partitioner.cli", "bench", "--zoo", zoo,
               "--pickers", "exact,greedy", "--jobs", str(jobs), "--no-progress", "--no-report",
               "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + start_timeout_s
        while not (out.exists() and out.read_bytes().count(b"\n") >= 1):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tacopt bench wrote no record before SIGINT: {command}")
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        if second_sigint_s is not None:
            time.sleep(second_sigint_s)
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        seconds = time.monotonic() - sent
        stderr = proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = out.read_text().splitlines()
    try:
        valid = all(isinstance(json.loads(line), dict) for line in lines)
    except ValueError:
        valid = False
    return Trial(seconds, proc.returncode, stderr, len(lines), valid)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the trials and print one line per trial and a summary; exit 1 if one failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    trials = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.trials):
            second = 0.05 if i % 2 else None
            trial = interrupt_bench(Path(tmp) / f"r{i}.jsonl", jobs=args.jobs,
                                    second_sigint_s=second)  # fmt: skip
            trials.append(trial)
            print(f"trial {i + 1}: {'ok  ' if trial.ok else 'FAIL'} exit {trial.returncode} "
                  f"after {trial.seconds:.3f} s{' (2 SIGINTs)' if second else ''}, "
                  f"{trial.records} records, stderr {trial.stderr.strip()!r}")  # fmt: skip
    worst = max(t.seconds for t in trials)
    passed = sum(t.ok for t in trials)
    print(f"{passed} of {len(trials)} trials ok; slowest exit {worst:.3f} s (--jobs {args.jobs})")
    return 0 if passed == len(trials) else 1


if __name__ == "__main__":
    sys.exit(main())

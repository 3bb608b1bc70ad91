"""Mutated .tflite models for fuzzing, and the harness that runs them through tacopt's commands.

Two families of mutations of real models (the bundled ``benchmarks/models`` and, when present,
``../shared/zoo``), each a pure function of ``(seed, index)`` so any case can be rebuilt alone:

- **structure-aware**, in place: a field of the flatbuffer is overwritten where it lies, so the
  file stays parseable and the edit reaches the checker and the passes: tensor shapes and ranks,
  dtypes, tensor -> buffer indices, op inputs / outputs (another op's output: two producers; a
  later op's output: a cycle; nothing: arity), opcode indices and builtin codes, buffer data
  lengths, offsets and sizes (placeholder size claims), quantization scales, zero points, axes
  and lengths, WHILE / IF / CALL_ONCE subgraph indices (the calling graph itself: recursion) and
  subgraph inputs / outputs;
- **structure-aware**, through the schema's object API (``ModelT``, re-packed; slower, so only
  on the small models): sparsity parameters, new quantization parameters, constant data of
  another length, a WHILE placed inside its own body;
- **byte-level**: bit flips, byte overwrites, zeroed ranges, truncation.

The mutations live in :mod:`~tacopt.benchmarks.fuzz.inplace`,
:mod:`~tacopt.benchmarks.fuzz.objects` and :mod:`~tacopt.benchmarks.fuzz.cases` (byte-level edits
and case selection); this module runs them.

:func:`run_case` runs one mutant in-process through ``tacopt inspect`` (the reader, then the
checker) and, when asked, ``fuse -o``, ``partition`` at both granularities with ``--export``, and
``rehydrate``, and classifies the outcome (:data:`OUTCOMES`). :func:`run_cases` runs a batch in
a worker process whose address space is capped with ``RLIMIT_AS``: an allocation that a corrupt
size claim drives fails at once there (as a ``MemoryError``, counted as ``memory``) instead of
swapping the machine.

Examples
--------
>>> OUTCOMES[:2], sorted(FAILURES)[:3], PIPELINE[0]
(('ok', 'refused'), ['crash', 'died', 'hang'], 'fuse')
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import io
import os
import resource
import tempfile
import traceback
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import tacopt.partitioner.pipeline  # noqa: F401 - heavy libraries mapped before limit_memory
from tacopt.benchmarks.fuzz.cases import (
    BUNDLED_DIR,
    OBJECT_API_MODELS,
    ZOO_DIR,
    Mutant,
    Source,
    load_sources,
    mutant,
    mutants,
    pick_source,
)
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.partitioner import cli
from tacopt.partitioner.cli import main

__all__ = [
    "BUNDLED_DIR",
    "COMMANDS",
    "FAILURES",
    "MEMORY_HEADROOM_BYTES",
    "OBJECT_API_MODELS",
    "OUTCOMES",
    "PIPELINE",
    "ZOO_DIR",
    "Mutant",
    "Outcome",
    "Source",
    "default_seed",
    "load_sources",
    "mutant",
    "mutants",
    "pick_source",
    "run_argv",
    "run_case",
    "run_cases",
    "run_command",
]

#: Outcome classes: the first two are passes, every other one is a failure.
OUTCOMES = ("ok", "refused", "crash", "multiline", "warning", "partial", "memory", "died",
            "hang", "unsafe")  # fmt: skip
FAILURES = frozenset(OUTCOMES[2:])

#: Address-space cap of a worker, above what it maps after its imports: 2 GiB. The largest
#: legitimate need is rehydrating the zoo's ViT-B/16 (344 MB of weights, about 1.1 GB at peak:
#: the values, the flatbuffer being built and the file's bytes).
MEMORY_HEADROOM_BYTES = 2 << 30


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one command handled one mutant: an :data:`OUTCOMES` class and a one-line detail."""

    index: int
    command: str
    outcome: str
    detail: str
    mutation: str



# --------------------------------------------------------------------------------------------
# running a case
# --------------------------------------------------------------------------------------------

#: Command lines per command name; ``{m}`` is the model, ``{o}`` the output folder.
COMMANDS: dict[str, list[str]] = {
    "inspect": ["inspect", "{m}"],
    "fuse": ["fuse", "{m}", "-o", "{o}/fused.tflite"],
    "partition-op": ["partition", "{m}", "--devices", "GPU,CPU", "--granularity", "op"],
    "export": ["partition", "{m}", "--devices", "GPU,CPU", "--export", "{o}/plan.tflite"],
    "rehydrate": ["rehydrate", "{m}", "{o}/full.tflite"],
}
PIPELINE = ("fuse", "partition-op", "export", "rehydrate")


def run_command(command: str, model: Path, out: Path) -> tuple[str, str]:
    """Run one of :data:`COMMANDS` in-process; returns (outcome class, one-line detail)."""
    return run_argv([a.format(m=model, o=out) for a in COMMANDS[command]], out)


def run_argv(
    argv: Sequence[str], out: Path, *, stdout: io.StringIO | None = None,
    stderr: io.StringIO | None = None,
) -> tuple[str, str]:  # fmt: skip
    """Run ``tacopt argv`` in-process, writing only into the empty folder ``out``; classify it.

    ``ok``: exit 0, no warning, and every file in ``out`` is a .tflite that reads back valid (or
    another file); ``refused``: exit 2, one stderr line, nothing in ``out``; anything else is a
    failure class of :data:`OUTCOMES`. ``stdout`` / ``stderr``, when given, receive the
    command's output (for the caller's own checks).
    """
    argv = list(argv)
    err = io.StringIO() if stderr is None else stderr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            shown = io.StringIO() if stdout is None else stdout
            with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(err):
                code = main(argv)
        except MemoryError:
            return "memory", "MemoryError"
        except BaseException as exc:  # noqa: BLE001 - any other exception is the finding
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return "crash", f"{type(exc).__name__}: {exc} at {where.filename}:{where.lineno}"
    lines = err.getvalue().splitlines()
    if caught:
        w = caught[0]
        return "warning", f"{w.category.__name__}: {w.message} at {w.filename}:{w.lineno}"
    written = sorted(p.name for p in out.iterdir())
    if code == 0:
        for name in written:
            if not name.endswith(".tflite"):
                continue
            try:
                read_tflite(out / name)
            except Exception as exc:  # noqa: BLE001 - an unreadable output is the finding
                return "partial", f"exit 0 but {name} does not read back: {exc}"
        return "ok", ""
    if len(lines) != 1:
        return "multiline", f"exit {code} with {len(lines)} stderr lines: {lines[:2]}"
    if code != 2:
        return "crash", f"exit {code}: {lines[0]}"
    if written:
        return "partial", f"exit 2 but wrote {written}: {lines[0]}"
    return "refused", lines[0]


def run_case(m: Mutant, commands: Sequence[str], workdir: Path) -> list[Outcome]:
    """Run ``m`` through each of ``commands``; one :class:`Outcome` each.

    ``inspect`` is the checker's own run: it reads the file without validating, summarises it,
    then runs :func:`~tacopt.fusion.ir.validate_graph` (every other command validates on reading).
    """
    results = []
    model = workdir / "model.tflite"
    model.write_bytes(m.data)
    for command in commands:
        out = workdir / "out"
        out.mkdir(exist_ok=True)
        for stale in out.iterdir():
            stale.unlink()
        outcome, detail = run_command(command, model, out)
        results.append(Outcome(m.index, command, outcome, detail, m.mutation))
    return results


def limit_memory(headroom: int) -> None:
    """Cap this process's address space at what it maps now plus ``headroom`` bytes."""
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    limit = mapped + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _run_chunk(
    zoo: str | None, seed: int, indices: Sequence[int], pipeline: frozenset[int]
) -> list[Outcome]:
    cache_entry_points()
    sources = _sources(zoo)
    results: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="tacopt-fuzz-") as tmp:
        for index in indices:
            m = mutant(sources, seed, index)
            commands = ("inspect", *PIPELINE) if index in pipeline else ("inspect",)
            results += run_case(m, commands, Path(tmp))
    return results


def cache_entry_points() -> None:
    """In a worker only: look the installed entry points up once, not on every command (the CLI
    scans every distribution to build its parser, 60 % of a fast command's time)."""
    if not hasattr(cli.entry_points, "cache_info"):
        cli.entry_points = functools.cache(cli.entry_points)  # type: ignore[assignment]


@functools.cache
def _sources(zoo: str | None) -> list[Source]:
    return load_sources(Path(zoo) if zoo else None)


def run_cases(
    seed: int,
    indices: Sequence[int],
    *,
    pipeline: Sequence[int] = (),
    zoo: Path | None = ZOO_DIR,
    workers: int = 1,
    chunk: int = 100,
    headroom_bytes: int = MEMORY_HEADROOM_BYTES,
) -> Iterator[list[Outcome]]:
    """Run cases ``indices`` of campaign ``seed`` in worker processes with a memory cap.

    Every case goes through ``inspect`` (which runs the checker); those in ``pipeline`` also through
    :data:`PIPELINE`. Yields the outcomes chunk by chunk, in order. A worker that dies (a
    segfault, the kernel's OOM killer) gives one ``died`` outcome per case of its chunk.
    """
    in_pipeline = frozenset(pipeline)
    zoo_arg = str(zoo) if zoo is not None and zoo.is_dir() else None
    chunks = [list(indices[i : i + chunk]) for i in range(0, len(indices), chunk)]
    ctx = get_context("fork")
    with ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=limit_memory, initargs=(headroom_bytes,)
    ) as pool:
        futures = [pool.submit(_run_chunk, zoo_arg, seed, c, in_pipeline) for c in chunks]
        for c, future in zip(chunks, futures):
            try:
                yield future.result()
            except BrokenProcessPool as exc:
                yield [Outcome(i, "worker", "died", str(exc), "") for i in c]
                break


def default_seed() -> int:
    """A seed that rotates with the date, so every day's CI run tries new cases."""
    return int(datetime.date.today().strftime("%Y%m%d"))


if __name__ == "__main__":  # pragma: no cover
    for row in run_cases(default_seed(), range(20)):
        for outcome in row:
            print(outcome)
    os._exit(0)

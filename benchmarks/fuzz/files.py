"""Fuzz cases for the other files users open: learned-model files, records, and the names a
model carries into pages, DOT and the terminal.

Three input kinds, each case a pure function of ``(kind, seed, index)``:

- ``learned``: a small learned model (the shipped one cut to a few trees per set, so a case
  costs milliseconds) with one or two JSON-level edits: a field replaced by a hostile value
  (NaN, infinity, 1e400, 2^63, a string, a list, an object, null, a control character), deleted,
  or, in a tree, a child or input index moved (cycles, out of range, shared nodes); sometimes
  gzipped, sometimes with its bytes cut. It goes through ``evaluate FILE RECORDS`` (ten op
  records) and, every third case each, ``partition --cost-model FILE --plan`` and
  ``inspect-model``;
- ``records``: a records file (40 op records of a real learn, its device record and two whole
  models) with the same edits on one record, or its bytes cut; through ``evaluate`` and (every
  tenth case) ``fit -o``;
- ``names``: a three-op model whose tensor, subgraph, signature and custom-op names and file
  stem are hostile (:mod:`~tacopt.benchmarks.fuzz.names`); through ``partition --html --dot
  --plan --explain`` and ``inspect``, then the page, the DOT text and everything printed are
  checked (:func:`~tacopt.benchmarks.fuzz.names.page_problems`, ``dot_problems``,
  ``terminal_problems``).

Every command runs in-process (:func:`~tacopt.benchmarks.fuzz.models.run_argv`) under a per-case
time limit (:data:`CASE_TIMEOUT_S`, a ``hang`` when it fires) in worker processes whose address
space is capped. Outcomes are those of :data:`~tacopt.benchmarks.fuzz.models.OUTCOMES`; ``unsafe``
is a rendered output or terminal text that fails its check.

Examples
--------
>>> case = file_case("names", seed=1, index=0)
>>> case.kind, sorted(case.files)[0].endswith(".tflite")
('names', True)
"""

from __future__ import annotations

import copy
import functools
import gzip
import io
import json
import random
import re
import signal
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tacopt.benchmarks.fuzz.cases import ROOT
from tacopt.benchmarks.fuzz.models import (
    MEMORY_HEADROOM_BYTES,
    Outcome,
    cache_entry_points,
    limit_memory,
    run_argv,
)
from tacopt.benchmarks.fuzz.names import (
    HOSTILE,
    dot_problems,
    hostile_graph,
    hostile_names,
    page_problems,
    terminal_problems,
)
from tacopt.cost_models.learned.fitting.model import DEFAULT_MODEL
from tacopt.cost_models.model_file import read_model_doc
from tacopt.fusion.ir import Op, Tensor, make_graph
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.fusion.tflite.writer import serialize_tflite

KINDS = ("learned", "records", "names")
#: A case's commands together may take this long before the case counts as a ``hang``.
CASE_TIMEOUT_S = 30.0

#: Values a mutated field takes (JSON can hold each; 1e400 reads as infinity).
HOSTILE_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2, 7, 0.5, -0.0, 2**31, 2**53 + 1, 2**63, -(2**63), 10**30,
    1e308, float("inf"), float("-inf"), float("nan"), "", "1", "x", "\x1b[2J\x07\r", [], [0],
    [1.5, "a"], [[[]]], {}, {"a": 1}, {"w": [1.0]},
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class FileCase:
    """One case: its files (name -> bytes) and the command lines that open them (``{d}``: the
    case's folder, ``{o}``: its empty output folder)."""

    kind: str
    index: int
    mutation: str
    files: dict[str, bytes]
    argvs: tuple[tuple[str, tuple[str, ...]], ...]
    checks: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# the base files
# --------------------------------------------------------------------------------------------


@functools.cache
def base_learned_doc() -> dict[str, Any]:
    """The shipped learned model cut small: four trees per set, four kind models, 12 fits."""
    doc = dict(read_model_doc(DEFAULT_MODEL))
    doc["table"] = dict(list(doc.get("table", {}).items())[:20])
    doc["family_trees"] = {k: v[:4] for k, v in (doc.get("family_trees") or {}).items()}
    if doc.get("trees"):
        doc["trees"] = doc["trees"][:4]
    kinds = list((doc.get("kind_models") or {}).items())[:4]
    doc["kind_models"] = {k: {**v, "trees": (v.get("trees") or [])[:4]} for k, v in kinds}
    if doc.get("kind_groups") is not None:
        doc["kind_groups"] = [k for k in doc["kind_groups"] if k in doc["kind_models"]]
    doc["fits"] = dict(list(doc["fits"].items())[:12]) | {"*": doc["fits"]["*"]}
    doc.pop("trained_on", None)
    doc.pop("adapted", None)
    return copy.deepcopy(doc)


def records_source() -> Path | None:
    """A committed records file of a real learn (the first found), or None."""
    found = sorted((ROOT / "benchmarks" / "results").glob("**/*.records.jsonl.gz"))
    return found[0] if found else None


@functools.cache
def base_records() -> tuple[dict[str, Any], ...]:
    """40 op records of a real learn (every 300th), its device record and two whole models."""
    source = records_source()
    if source is None:
        return ()
    with gzip.open(source, "rt") as f:
        records = [json.loads(line) for line in f if line.strip()]
    ops = [r for r in records if r.get("type") == "op"][::300][:40]
    return tuple([r for r in records if r.get("type") == "device"][:1] + ops +
                 [r for r in records if r.get("type") == "model"][:2])  # fmt: skip


# --------------------------------------------------------------------------------------------
# mutations
# --------------------------------------------------------------------------------------------


def _paths(value: Any, prefix: tuple = (), depth: int = 0) -> Iterator[tuple]:
    """Paths to every node of a JSON value down to depth 6 (long lists: 6 entries sampled)."""
    yield prefix
    if depth >= 6:
        return
    if isinstance(value, dict):
        for key in list(value)[:40]:
            yield from _paths(value[key], (*prefix, key), depth + 1)
    elif isinstance(value, list):
        picks = range(len(value)) if len(value) <= 6 else (0, 1, len(value) // 2, len(value) - 1)
        for i in picks:
            yield from _paths(value[i], (*prefix, i), depth + 1)


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def mutate_json(doc: Any, rng: random.Random) -> str:
    """Edit ``doc`` in place once (a random node replaced, deleted, or a tree index moved);
    returns what was done."""
    trees = [p for p in _paths(doc) if p and p[-1] in ("left", "right", "feature")]
    if trees and rng.random() < 0.35:
        path = rng.choice(trees)
        nodes = _get(doc, path)
        if isinstance(nodes, list) and nodes:  # an earlier edit may have replaced the list
            i = rng.randrange(len(nodes))
            new = rng.choice([-2, -1, 0, i, i - 1, i + 1, len(nodes), len(nodes) - 1, 10**6,
                              2**40, 1e20, 0.5, "1", None])  # fmt: skip
            nodes[i] = new
            return f"{'.'.join(map(str, path))}[{i}] = {new!r}"
    path = rng.choice([p for p in _paths(doc) if p])
    parent, key = _get(doc, path[:-1]), path[-1]
    how = rng.random()
    if how < 0.15 and isinstance(parent, dict):
        del parent[key]
        return f"delete {'.'.join(map(str, path))}"
    if how < 0.3 and isinstance(parent[key], str):
        parent[key] = rng.choice(HOSTILE)
    else:
        parent[key] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
    return f"{'.'.join(map(str, path))} = {parent[key]!r}"[:200]


def _cut(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    keep = rng.randrange(len(data)) if data else 0
    return data[:keep], f"cut at {keep}"


def learned_case(seed: int, index: int) -> FileCase:
    """A mutated learned-model file (module description)."""
    rng = random.Random(f"learned:{seed}:{index}")
    doc = copy.deepcopy(base_learned_doc())
    notes = [mutate_json(doc, rng) for _ in range(rng.choice([1, 1, 2]))]
    data = json.dumps(doc).encode()
    if rng.random() < 0.05:
        data, note = _cut(data, rng)
        notes.append(note)
    name = "model.json"
    if rng.random() < 0.2:
        data, name = gzip.compress(data, mtime=0), "model.json.gz"
    files = {name: data, "tiny.tflite": _tiny_model()}
    argvs: list[tuple[str, tuple[str, ...]]] = []
    if base_records():  # the model built and asked for every op record's latency
        argvs.append(("evaluate", ("evaluate", f"{{d}}/{name}", "{d}/records.jsonl")))
        files["records.jsonl"] = _records_bytes(list(base_records())[:11])
    if index % 3 == 0 or not argvs:
        argvs.append(("partition", ("partition", "{d}/tiny.tflite", "--devices", "GPU,CPU",
                                    "--cost-model", f"{{d}}/{name}", "--plan", "{o}/plan.json")))
    if index % 3 == 1:
        argvs.append(("inspect-model", ("inspect-model", f"{{d}}/{name}")))
    return FileCase("learned", index, "; ".join(notes), files, tuple(argvs))


def records_case(seed: int, index: int) -> FileCase:
    """A mutated records file (module description)."""
    rng = random.Random(f"records:{seed}:{index}")
    records = copy.deepcopy(list(base_records()))
    notes = []
    for _ in range(rng.choice([1, 1, 2])):
        i = rng.randrange(len(records))
        notes.append(f"line {i + 1}: {mutate_json(records[i], rng)}")
    data = _records_bytes(records)
    if rng.random() < 0.05:
        data, note = _cut(data, rng)
        notes.append(note)
    argvs: list[tuple[str, tuple[str, ...]]] = [
        ("evaluate", ("evaluate", "{d}/model.json", "{d}/records.jsonl"))
    ]
    if index % 10 == 0:
        argvs.append(("fit", ("fit", "{d}/records.jsonl", "-o", "{o}/fitted.json")))
    files = {"records.jsonl": data, "model.json": json.dumps(base_learned_doc()).encode()}
    return FileCase("records", index, "; ".join(notes), files, tuple(argvs))


def names_case(seed: int, index: int) -> FileCase:
    """A model named with hostile names, and a hostile file stem (module description)."""
    rng = random.Random(f"names:{seed}:{index}")
    names = hostile_names(rng, 12)
    G = hostile_graph(names)
    stem = re.sub(r"[/\x00]", "_", rng.choice([*HOSTILE, names[0], names[6]]))[:60] or "m"
    model = f"{stem}.tflite"
    explain = next(n for n, d in G.nodes(data=True) if d["op"].is_custom)
    argvs = [
        ("partition", ("partition", f"{{d}}/{model}", "--devices", "GPU,CPU", "--picker",
                       "greedy", "--html", "{o}/page.html", "--dot", "{o}/graph.dot", "--plan",
                       "{o}/plan.json", "--explain", _fused_name(G, explain))),
        ("inspect", ("inspect", f"{{d}}/{model}")),
    ]  # fmt: skip
    note = f"names {names!r} stem {stem!r}"[:200]
    return FileCase("names", index, note, {model: serialize_tflite(G)}, tuple(argvs))


def _fused_name(G: Any, op: str) -> str:
    """The name ``op`` has once the model is read back (the reader names ops itself)."""
    H = read_tflite(serialize_tflite(G))
    return next(n for n, d in H.nodes(data=True) if d["op"].is_custom)


@functools.cache
def _tiny_model() -> bytes:
    G = make_graph("tiny", [Tensor(n, (1, 16, 16, 8), "float32") for n in "xyz"],
                   [Op("add_0", "ADD", ("x", "x"), ("y",)), Op("relu_1", "RELU", ("y",), ("z",))],
                   ["x"], ["z"])  # fmt: skip
    return serialize_tflite(G)


def _records_bytes(records: Sequence[Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


CASES = {"learned": learned_case, "records": records_case, "names": names_case}


def file_case(kind: str, seed: int, index: int) -> FileCase:
    """Case ``index`` of kind ``kind`` in campaign ``seed``."""
    return CASES[kind](seed, index)


# --------------------------------------------------------------------------------------------
# running a case
# --------------------------------------------------------------------------------------------


class _Hang(BaseException):
    """Raised by the case's timer: the case ran past :data:`CASE_TIMEOUT_S`."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Hang(f"past {CASE_TIMEOUT_S:g} s")


def run_file_case(
    case: FileCase, workdir: Path, timeout_s: float = CASE_TIMEOUT_S
) -> list[Outcome]:
    """Run ``case``'s commands; one :class:`Outcome` per command, rendered outputs checked."""
    for stale in workdir.iterdir():
        if stale.is_file():
            stale.unlink()
    for name, data in case.files.items():
        (workdir / name).write_bytes(data)
    out = workdir / "out"
    out.mkdir(exist_ok=True)
    results = []
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        for command, argv in case.argvs:
            for stale in out.iterdir():
                stale.unlink()
            shown, err = io.StringIO(), io.StringIO()
            # str.replace, not format: a hostile name may hold braces
            line = [a.replace("{d}", str(workdir)).replace("{o}", str(out)) for a in argv]
            outcome, detail = run_argv(line, out, stdout=shown, stderr=err)
            if "_Hang" in detail:
                outcome = "hang"
            elif outcome in ("ok", "refused"):
                unsafe = _unsafe(out, shown.getvalue() + err.getvalue())
                if unsafe:
                    outcome, detail = "unsafe", "; ".join(unsafe)[:300]
            results.append(Outcome(case.index, f"{case.kind}/{command}", outcome, detail,
                                   case.mutation))  # fmt: skip
            if outcome == "hang":
                break
    except _Hang:  # between two commands
        results.append(Outcome(case.index, f"{case.kind}/-", "hang", "", case.mutation))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return results


def _unsafe(out: Path, printed: str) -> list[str]:
    """What in the outputs written and the text printed fails its check."""
    problems = terminal_problems(printed)
    for path in sorted(out.iterdir()):
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".html":
            problems += page_problems(text)
        elif path.suffix == ".dot":
            problems += dot_problems(text)
        elif path.suffix == ".json":
            try:
                json.loads(text)
            except ValueError:
                problems.append(f"{path.name} is not whole JSON")
    return problems


def _run_chunk(kind: str, seed: int, indices: Sequence[int], timeout_s: float) -> list[Outcome]:
    cache_entry_points()
    results: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="tacopt-fuzz-files-") as tmp:
        for index in indices:
            results += run_file_case(file_case(kind, seed, index), Path(tmp), timeout_s)
    return results


def run_file_cases(
    kind: str,
    seed: int,
    indices: Sequence[int],
    *,
    workers: int = 1,
    chunk: int = 100,
    timeout_s: float = CASE_TIMEOUT_S,
    headroom_bytes: int = MEMORY_HEADROOM_BYTES,
) -> Iterator[list[Outcome]]:
    """Cases ``indices`` of ``kind`` in worker processes with a memory cap, chunk by chunk."""
    chunks = [list(indices[i : i + chunk]) for i in range(0, len(indices), chunk)]
    with ProcessPoolExecutor(workers, mp_context=get_context("fork"), initializer=limit_memory,
                             initargs=(headroom_bytes,)) as pool:  # fmt: skip
        futures = [pool.submit(_run_chunk, kind, seed, c, timeout_s) for c in chunks]
        for c, future in zip(chunks, futures):
            try:
                yield future.result()
            except BrokenProcessPool as exc:
                yield [Outcome(i, f"{kind}/worker", "died", str(exc), "") for i in c]
                break


__all__ = [
    "CASE_TIMEOUT_S", "KINDS", "FileCase", "base_learned_doc", "base_records", "file_case",
    "learned_case", "mutate_json", "names_case", "records_case", "run_file_case",
    "run_file_cases",
]  # fmt: skip

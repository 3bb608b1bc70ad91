"""The figures page: ``docs/figures.md`` and each study's README, written from the studies' data.

    python -m tacopt.benchmarks figures            # rewrite docs/figures.md and the READMEs
    python -m tacopt.benchmarks figures --check    # exit 1 when a written file is stale

Every study under ``benchmarks/results/`` is a folder holding its records (gzipped JSON lines)
and one small data file, ``figures.json``, which is the only place its figures are typed in:

- ``title``, ``date`` (UTC), ``machine``, ``load`` (the load average while it ran), ``commit``;
- ``command``: the one command that reproduces the study (run from the clone's root);
- ``records``: the study's files in its folder, each with what it holds;
- ``about``: a paragraph of Markdown (optional);
- ``figures``: rows of ``id`` (the anchor others link to), ``what``, ``figure``, and optional
  ``target``, ``command`` (when not the study's), ``date`` and ``load`` (when not the study's).

The page lists the studies in the order of :data:`ORDER` (then by folder name); a figure is
linked as ``docs/figures.md#ID``. A new study needs no code: add its folder and run the command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacopt.errors import TacoptError, print_error, run_as_program
from tacopt.io import atomic_write, read_json

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "figures.md"
#: Studies shown first, in this order (the README's order); others follow by folder name.
ORDER = ("shared", "scaling", "memory", "iopddl", "pipeline", "learned")
REQUIRED = ("title", "date", "machine", "load", "command", "records", "figures")


class FiguresError(TacoptError):
    """A study's ``figures.json`` that cannot be shown (one line naming the file and field)."""


@dataclass(frozen=True, slots=True)
class Study:
    """One folder of ``benchmarks/results/`` and its ``figures.json``."""

    folder: str
    data: Mapping[str, Any]


def read_studies(results: Path = RESULTS) -> list[Study]:
    """Every study folder with a ``figures.json``, in page order.

    Raises
    ------
    FiguresError
        A ``figures.json`` that is not JSON, lacks a field, repeats a figure id, or lists a
        records file that is not in its folder.
    """
    studies = []
    for path in sorted(results.glob("*/figures.json")):
        data = read_json(path, "figures file", 1 << 20, error=FiguresError)
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            raise FiguresError(f"{path}: no {', '.join(missing)}")
        for name in data["records"]:
            if not (path.parent / name).is_file():
                raise FiguresError(f"{path}: records file '{name}' is not in its folder")
        studies.append(Study(path.parent.name, data))
    rank = {name: i for i, name in enumerate(ORDER)}
    studies.sort(key=lambda s: (rank.get(s.folder, len(ORDER)), s.folder))
    ids = [f["id"] for s in studies for f in s.data["figures"]] + [s.folder for s in studies]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise FiguresError(f"figure ids used twice in {results}: {', '.join(repeated)}")
    return studies


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _rows(study: Study) -> list[str]:
    """The study's table; a figure run at another time or by another command says so in a last
    column (the others: "as above")."""
    d = study.data
    own = [f for f in d["figures"] if {"date", "load", "command"} & set(f)]
    lines = ["| what | figure | target |" + (" run, reproduce |" if own else ""),
             "|:--|:--|:--|" + (":--|" if own else "")]  # fmt: skip
    for f in d["figures"]:
        row = f'| <a id="{f["id"]}"></a>{_cell(f["what"])} | {_cell(f["figure"])} | '
        row += f"{_cell(f.get('target', '—'))} |"
        if own:
            when = f"{f.get('date', d['date'])}, load {f.get('load', d['load'])}"
            how = f"`{_cell(f['command'])}`" if "command" in f else "the study's command"
            row += f" {_cell(when)}; {how} |" if f in own else " as above |"
        lines.append(row)
    return lines


def _header(study: Study, link: str) -> list[str]:
    d = study.data
    records = ", ".join(f"[`{name}`]({link}{name}) ({what})" for name, what in d["records"].items())
    lines = [
        f"- **reproduce:** `{d['command']}`",
        f"- **run:** {d['date']} at commit {d.get('commit', '—')}; {d['machine']}; "
        f"load {d['load']}",
        f"- **files:** {records or 'none (the figures are printed by the commands)'}",
    ]
    return lines + ([""] + [d["about"]] if d.get("about") else [])


def figures_page(studies: Sequence[Study]) -> str:
    """The text of ``docs/figures.md`` (a study folder without a ``figures.json`` is not on it:
    its README alone holds its figures until it gets one)."""
    out = [
        "# Figures",
        "",
        "Every figure tacopt reports, with the command that reproduces it, when and where it was",
        "measured, and the load average beside it. Written by `python -m tacopt.benchmarks "
        "figures`",
        "from each study's `benchmarks/results/STUDY/figures.json` (do not edit this page; edit "
        "that",
        "file and run the command). Earlier sessions' figures, kept as they were reported, are in",
        "[figures-history.md](figures-history.md).",
        "",
    ]
    out += [f"- [{s.data['title']}](#{s.folder})" for s in studies]
    for s in studies:
        out += ["", f'<a id="{s.folder}"></a>', "", f"## {s.data['title']}", ""]
        out += _header(s, f"../benchmarks/results/{s.folder}/")
        out += [""] + _rows(s)
    return "\n".join(out) + "\n"


def study_readme(study: Study) -> str:
    """The text of a study's ``README.md``."""
    out = [f"# {study.data['title']}", ""]
    out += [
        f"The figures of this folder, with the rest, are on "
        f"[docs/figures.md](../../../docs/figures.md#{study.folder}). Written by `python -m "
        "tacopt.benchmarks figures` from `figures.json`.",
        "",
    ]
    out += _header(study, "")
    out += [""] + _rows(study)
    return "\n".join(out) + "\n"


def written_files(results: Path = RESULTS, page: Path = PAGE) -> dict[Path, str]:
    """Each file the command writes, with its text."""
    studies = read_studies(results)
    files = {page: figures_page(studies)}
    files.update({results / s.folder / "README.md": study_readme(s) for s in studies})
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tacopt.benchmarks figures",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when a file is not what it would write",
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="the studies' folder")
    parser.add_argument("--page", type=Path, default=PAGE, help="the figures page to write")
    args = parser.parse_args(argv)
    try:
        files = written_files(args.results, args.page)
    except TacoptError as e:
        return print_error(parser.prog, e)
    stale = [p for p, text in files.items() if not p.is_file() or p.read_text() != text]
    if args.check:
        for p in stale:
            print(f"stale: {p} (run python -m tacopt.benchmarks figures)", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        atomic_write(p, files[p])
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    run_as_program(main)

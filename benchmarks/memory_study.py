"""Memory study: what a plan costs as the accelerators' memory shrinks (issue 14).

For each model and device set the pick problem is built once (every choice holding its view's
weights). The exact picker's unconstrained plan gives each accelerator (every device but the
CPU) its peak; the study then limits every accelerator at once to 75 %, 50 % and 25 % of that
peak and runs every picker at every capacity. Each plan is checked with ``validate_plan`` (which
refuses one over a capacity); a picker that finds none records INFEASIBLE (proven) or UNKNOWN.
The price of a limit is the exact objective over the unconstrained one.

:func:`check_records` holds the study to its claims: every plan fits, the exact picker is never
worse than another picker's plan that fits, and the exact objective never decreases as the
capacity shrinks (an infeasible limit counts as infinitely dear).

Run (prints the table and the checks; ``--out`` keeps the records, ``--plot`` draws the prices)::

    python -m tacopt.benchmarks memory_study --zoo bundled --granularity op
    python -m tacopt.benchmarks memory_study --zoo shared --out memory.jsonl --plot memory.png
    python -m tacopt.benchmarks memory_study --records memory.jsonl   # the tables again

Examples
--------
>>> from tacopt.benchmarks.zoos import load_item, resolve_zoo
>>> item = resolve_zoo("transformer:1")[0]
>>> records = study_model(load_item(item), item.name, ("GPU", "CPU"), "op")
>>> sorted({r["fraction"] for r in records}, key=str)
[0.25, 0.5, 0.75, None]
>>> check_records(records)
[]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from tacopt.benchmarks.plots import pyplot
from tacopt.benchmarks.zoos import load_item, resolve_zoo
from tacopt.errors import TacoptError
from tacopt.io import atomic_write, read_json_lines
from tacopt.partitioner.pickers import pick
from tacopt.partitioner.pipeline import build_pick_problem, with_capacity
from tacopt.partitioner.plan import NoPlanError, validate_plan

FRACTIONS: tuple[float | None, ...] = (None, 0.75, 0.5, 0.25)
PICKERS = ("exact", "greedy", "tac", "first-fit")
DEVICE_SETS: tuple[tuple[str, ...], ...] = (
    ("GPU", "CPU"),
    ("NNAPI", "CPU"),
    ("GPU", "NNAPI", "CPU"),
)


def study_model(
    G: Any,
    name: str,
    devices: Sequence[str],
    granularity: str = "subgraph",
    *,
    pickers: Sequence[str] = PICKERS,
    fractions: Sequence[float | None] = FRACTIONS,
    time_limit_s: float = 60.0,
) -> list[dict[str, Any]]:
    """One record per (capacity, picker) of model ``G`` on ``devices``; see the module docstring."""
    base = build_pick_problem(G, list(devices), granularity=granularity).problem
    free = pick(base, "exact", time_limit_s=time_limit_s)
    accelerators = [d for d in free.peak_memory if d != "CPU" and free.peak_memory[d] > 0]
    head = {"model": name, "devices": ",".join(devices), "granularity": granularity,
            "units": len(base.units), "free_objective": free.objective,
            "free_peak": dict(free.peak_memory)}  # fmt: skip
    records: list[dict[str, Any]] = []
    for fraction in fractions:
        if fraction is not None and not accelerators:
            continue  # nothing runs on an accelerator: no limit to study
        capacity = {
            d: float(math.floor(fraction * free.peak_memory[d])) for d in accelerators
        } if fraction is not None else {}  # fmt: skip
        problem = with_capacity(base, capacity)
        for picker in pickers:
            record = {**head, "fraction": fraction, "capacity": capacity, "picker": picker}
            options = {"time_limit_s": time_limit_s} if picker == "exact" else {}
            started = time.perf_counter()
            try:
                plan = pick(problem, picker, **options)
                validate_plan(problem, plan)
            except NoPlanError as exc:
                record.update(status=exc.status, objective=None, error=str(exc))
            except TacoptError as exc:
                record.update(status="ERROR", objective=None, error=str(exc))
            else:
                record.update(status=plan.status, objective=plan.objective, fits=plan.fits,
                              peak_memory=dict(plan.peak_memory), gap=plan.gap)  # fmt: skip
            record["seconds"] = round(time.perf_counter() - started, 6)
            records.append(record)
    exact = {r["fraction"]: r["objective"] for r in records if r["picker"] == "exact"}
    for r in records:
        price = exact.get(r["fraction"])
        r["price"] = None if price is None or not free.objective else price / free.objective
    return records


def check_records(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The study's claims that do not hold, one line each (empty: all hold)."""
    problems: list[str] = []
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["model"], r["devices"], r["granularity"]), []).append(r)
    for key, rows in groups.items():
        where = "|".join(key)
        exact = {r["fraction"]: r for r in rows if r["picker"] == "exact"}
        for r in rows:
            at = f"{where} at {_label(r['fraction'])}, {r['picker']}"
            if r["objective"] is not None and not r.get("fits", False):
                problems.append(f"{at}: the plan does not fit")
            if r["status"] in ("ERROR", "CRASH"):
                problems.append(f"{at}: {r.get('error')}")
            mine = exact.get(r["fraction"])
            if r["objective"] is not None and mine is not None:
                if mine["objective"] is None:
                    problems.append(f"{at}: a plan fits but exact found none")
                elif mine["objective"] > r["objective"] * (1 + 1e-9) + 1e-9:
                    problems.append(f"{at}: exact {mine['objective']:.6g} > {r['objective']:.6g}")
        ordered = [exact[f] for f in FRACTIONS if f in exact]
        for looser, tighter in zip(ordered, ordered[1:]):
            a = math.inf if looser["objective"] is None else looser["objective"]
            b = math.inf if tighter["objective"] is None else tighter["objective"]
            if b < a * (1 - 1e-9) - 1e-9:
                problems.append(f"{where}: exact objective drops from {a:.6g} at "
                                f"{_label(looser['fraction'])} to {b:.6g} at "
                                f"{_label(tighter['fraction'])}")  # fmt: skip
    return problems


def _label(fraction: float | None) -> str:
    return "∞" if fraction is None else f"{100 * fraction:.0f}%"


def memory_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: per model and device set, each picker's objective over the unconstrained
    exact one at every capacity (– where it found no plan)."""
    fractions = [f for f in FRACTIONS if any(r["fraction"] == f for r in records)]
    pickers = list(dict.fromkeys(r["picker"] for r in records))
    header = ["model", "devices", "units", "accelerator peak (MiB)", "picker",
              *[f"price at {_label(f)}" for f in fractions]]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    cells: dict[tuple[Any, ...], Mapping[str, Any]] = {
        (r["model"], r["devices"], r["granularity"], r["picker"], r["fraction"]): r
        for r in records
    }
    cases = list(dict.fromkeys((r["model"], r["devices"], r["granularity"]) for r in records))
    for model, devices, granularity in cases:
        first = next(r for r in records if (r["model"], r["devices"]) == (model, devices))
        peaks = ", ".join(f"{d} {v / 2**20:.2f}" for d, v in sorted(first["free_peak"].items())
                          if d != "CPU")  # fmt: skip
        for picker in pickers:
            row = [model, devices, str(first["units"]), peaks or "–", picker]
            for f in fractions:
                r = cells.get((model, devices, granularity, picker, f))
                if r is None or r["objective"] is None:
                    row.append("–" if r is None else r["status"].lower())
                else:
                    row.append(f"{r['objective'] / first['free_objective']:.4f}"
                               if first["free_objective"] else "–")  # fmt: skip
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def summary_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: per capacity, the cases, exact's plans and geometric-mean / largest price, and
    each other picker's plans and geometric-mean ratio to exact over them."""
    pickers = [p for p in dict.fromkeys(r["picker"] for r in records) if p != "exact"]
    header = ["capacity", "cases", "exact plans", "proven", "infeasible", "geomean price",
              "max price"]  # fmt: skip
    header += [f"{p}: plans · ratio" for p in pickers]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for fraction in FRACTIONS:
        rows = [r for r in records if r["fraction"] == fraction]
        exact = {_case(r): r for r in rows if r["picker"] == "exact"}
        if not exact:
            continue
        prices = [r["price"] for r in exact.values() if r["price"]]
        row = [_label(fraction), str(len(exact)), str(len(prices)),
               str(sum(r["status"] == "OPTIMAL" for r in exact.values())),
               str(sum(r["status"] == "INFEASIBLE" for r in exact.values())),
               f"{_geomean(prices):.3f}" if prices else "–",
               f"{max(prices):.2f}" if prices else "–"]  # fmt: skip
        for picker in pickers:
            ratios = [r["objective"] / exact[_case(r)]["objective"] for r in rows
                      if r["picker"] == picker and r["objective"] is not None
                      and exact.get(_case(r), {}).get("objective")]  # fmt: skip
            row.append(f"{len(ratios)} · {_geomean(ratios):.4f}" if ratios else "0")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _case(record: Mapping[str, Any]) -> tuple[str, str, str]:
    return record["model"], record["devices"], record["granularity"]


def _geomean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def plot_prices(records: Sequence[Mapping[str, Any]], path: str) -> str:
    """Draw each picker's geometric-mean price per capacity (over the cases where it found a
    plan) and every case's exact price as a thin line, to ``path`` (PNG)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    fractions = list(FRACTIONS)
    x = [100.0 if f is None else 100 * f for f in fractions]
    for key in dict.fromkeys((r["model"], r["devices"], r["granularity"]) for r in records):
        rows = {r["fraction"]: r for r in records
                if (r["model"], r["devices"], r["granularity"]) == key
                and r["picker"] == "exact"}  # fmt: skip
        xs = [xv for xv, f in zip(x, fractions) if rows.get(f, {}).get("price") is not None]
        ys = [rows[f]["price"] for f in fractions if rows.get(f, {}).get("price") is not None]
        ax.plot(xs, ys, color="0.85", linewidth=0.6, zorder=1)
    for picker in dict.fromkeys(r["picker"] for r in records):
        means = []
        for f in fractions:
            prices = [r["objective"] / r["free_objective"] for r in records
                      if r["picker"] == picker and r["fraction"] == f and r["objective"]
                      and r["free_objective"]]
            means.append(math.exp(sum(map(math.log, prices)) / len(prices)) if prices else None)
        pts = [(xv, m) for xv, m in zip(x, means) if m is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=picker, zorder=2)
    ax.set_xlabel("accelerator capacity, % of the unconstrained exact plan's peak (100 = none)")
    ax.set_ylabel("objective / unconstrained exact (geomean)")
    ax.invert_xaxis()
    ax.set_yscale("log")
    ax.legend(title="picker (geomean over its plans)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(zoo: str, device_sets: Sequence[Sequence[str]], granularity: str,
        time_limit_s: float, partial: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Every model of ``zoo`` (``.tflite`` items) on every device set; each finished case's
    records are appended to ``partial`` (JSON lines) when given, so a long run stopped midway
    keeps them."""
    records: list[dict[str, Any]] = []
    for item in resolve_zoo(zoo):
        if item.kind == "problem":
            continue
        G = load_item(item)
        for devices in device_sets:
            started = time.perf_counter()
            try:
                done = study_model(G, item.name, devices, granularity,
                                   time_limit_s=time_limit_s)  # fmt: skip
            except TacoptError as exc:
                print(f"{item.name} on {','.join(devices)}: skipped: {exc}", file=sys.stderr)
                continue
            records += done
            if partial:
                with open(partial, "a", encoding="utf-8") as f:
                    f.write("".join(json.dumps(r) + "\n" for r in done))
            print(f"{item.name} on {','.join(devices)}: {time.perf_counter() - started:.1f} s",
                  file=sys.stderr)  # fmt: skip
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zoo", default="bundled", help="a zoo spec (default: bundled)")
    parser.add_argument("--devices", action="append", default=None,
                        help="a device set such as GPU,CPU (repeatable; default: TAC's three)")
    parser.add_argument("--granularity", default="subgraph", choices=("subgraph", "op"))
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", help="write the records here (JSON lines)")
    parser.add_argument("--plot", help="draw the exact prices here (PNG)")
    parser.add_argument("--records", help="report on these records (JSON lines) instead of running")
    args = parser.parse_args(argv)
    device_sets = [tuple(s.split(",")) for s in args.devices] if args.devices else DEVICE_SETS
    started = time.perf_counter()
    if args.records:
        records = read_json_lines(args.records, what="records file", error=TacoptError)
    else:
        partial = f"{args.out}.partial" if args.out else None
        records = run(args.zoo, device_sets, args.granularity, args.time_limit, partial)
    print(memory_table(records))
    print()
    print(summary_table(records))
    problems = check_records(records)
    plans = [r for r in records if r["objective"] is not None]
    print(f"\n{len(records)} picker runs, {len(plans)} plans, all validated "
          f"({sum(bool(r.get('fits')) for r in plans)} fit); "
          f"{len(problems)} claim(s) broken; {time.perf_counter() - started:.1f} s")  # fmt: skip
    for line in problems:
        print("BROKEN:", line)
    if args.out:
        atomic_write(args.out, "".join(json.dumps(r) + "\n" for r in records))
        if not args.records and os.path.exists(f"{args.out}.partial"):
            os.remove(f"{args.out}.partial")
    if args.plot:
        plot_prices(records, args.plot)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

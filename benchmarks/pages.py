"""Plan pages for a report: one page (:mod:`tacopt.partitioner.page`) per model of a study.

For each model the report covers, :func:`plan_pages` picks one case -- the one where its pickers
differ most (the largest ratio to exact), fused cases first -- rebuilds that case's pick problem
from the model's zoo (:func:`tacopt.benchmarks.zoos.resolve_zoo`), plans it with each picker of
the study (exact first) and renders the page. Kept cheap: one case per model, no per-op costs
(the units' view costs are on the page), and models that cannot be rebuilt (a pick-problem zoo, a
zoo not on this machine, a cost model that cannot be named) get a reason instead of a page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tacopt.benchmarks.zoos import BenchmarkError, load_item, resolve_zoo
from tacopt.errors import TacoptError
from tacopt.partitioner.page import compare_plans, page_data, render_page
from tacopt.partitioner.pickers import picker_names
from tacopt.partitioner.pipeline import partition


@dataclass(frozen=True, slots=True)
class PlanPage:
    """A model's page (``html``) for one case, or why it has none (``html`` is None)."""

    model: str
    file: str
    case: str
    html: str | None
    reason: str = ""


def _case_of(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records of the model's case where the pickers differ most (fused cases first)."""
    cases: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in records:
        key = (r.get("devices"), r.get("granularity"), r.get("cost_model"), r.get("fusion"))
        cases.setdefault(key, []).append(r)

    def spread(rows: list[Mapping[str, Any]]) -> tuple[bool, float]:
        ratios = [r.get("ratio_to_exact") or 1.0 for r in rows if not r.get("error")]
        return rows[0].get("fusion") != "plain", max(ratios, default=1.0)

    return max(cases.values(), key=spread)


def plan_pages(records: Sequence[Mapping[str, Any]]) -> list[PlanPage]:
    """One :class:`PlanPage` per model of ``records`` (a study's results), models sorted.

    Examples
    --------
    >>> rec = {"model": "resnet_B2", "zoo": "resnet", "kind": "graph", "devices": "GPU,CPU",
    ...        "granularity": "op", "cost_model": "tac", "picker": "exact"}
    >>> [(p.model, p.file, p.html is not None) for p in plan_pages([rec])]
    [('resnet_B2', 'resnet_B2.html', True)]
    """
    by_model: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in records:
        by_model.setdefault((str(r.get("zoo")), str(r.get("model"))), []).append(r)
    out = []
    for (zoo, model), rows in sorted(by_model.items(), key=lambda item: item[0][::-1]):
        case = _case_of(rows)
        first = case[0]
        label = f"{first.get('devices')}, {first.get('granularity')}, {first.get('cost_model')}"
        file = re.sub(r"[^A-Za-z0-9_.-]+", "_", model) + ".html"
        if len(by_model) > len({m for _, m in by_model}):  # a model name in two zoos
            file = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{zoo}__{model}") + ".html"
        try:
            html = _page(zoo, model, case)
            out.append(PlanPage(model, file, label, html))
        except (TacoptError, OSError) as exc:
            out.append(PlanPage(model, file, label, None, str(exc).splitlines()[0]))
    return out


def _page(zoo: str, model: str, case: Sequence[Mapping[str, Any]]) -> str:
    first = case[0]
    if first.get("kind") not in ("tflite", "graph"):
        raise BenchmarkError("a pick problem, not a model: no graph to draw")
    item = next((i for i in resolve_zoo(zoo) if i.name == model), None)
    size = re.search(r"(\d+)$", model)
    if item is None and size:  # a generated model of a size not in its zoo's default list
        item = next((i for i in resolve_zoo(f"{zoo}:{size[1]}") if i.name == model), None)
    if item is None:
        raise BenchmarkError(f"zoo {zoo!r} has no model {model!r} here")
    known = set(picker_names())
    pickers = list(dict.fromkeys(
        str(r["picker"]) for r in case if not r.get("error") and r.get("picker") in known
    ))  # fmt: skip
    pickers.sort(key=lambda p: p != "exact")
    if not pickers:
        raise BenchmarkError("no picker of this case gave a plan")
    result = partition(
        load_item(item),
        str(first["devices"]),
        picker=pickers[0],
        cost_model=str(first.get("cost_model", "tac")),
        granularity=str(first.get("granularity", "subgraph")),
        fuse=first.get("fusion") != "plain",
        capacity=dict(first.get("capacity") or {}),
    )
    results, failed = compare_plans(result, pickers)
    return render_page(page_data(results, title=model, failed=failed))


def pages_markdown(pages: Sequence[PlanPage], folder: str) -> str:
    """The report's "Plan pages" section: a link per model, or why it has no page."""
    lines = [
        "## Plan pages\n",
        "One page per model, for the case where its pickers differ most: the fused DAG coloured "
        "by device, each picker's plan and the ops whose device differs (open in a browser; "
        "each file is self-contained).\n",
    ]
    for p in pages:
        if p.html is None:
            lines.append(f"- {p.model}: no page ({p.reason})")
        else:
            lines.append(f"- [{p.model}]({folder}/{p.file}) ({p.case})")
    return "\n".join(lines) + "\n"

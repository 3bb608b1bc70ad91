"""The plan page (``tacopt partition --html``): its size, the time to build it, and its load time
in headless Chromium.

For each model the page is built once (partition with the exact picker, ``--compare exact,tac``
as the CLI does, then the page's data and HTML), then opened ``--runs`` times, each in a fresh
browser page. The load time is ``performance.now()`` when the page's first frame after drawing
is painted (from navigation start: parsing, the data, drawing every op and edge, layout); the
wall time is Playwright's goto until the page says it is ready. Medians with min-max.

Needs Playwright and the system's Chromium (``apt-get install chromium``). Usage::

    python -m tacopt.benchmarks bench_page [--runs 5] [--synthetic 2000] [MODEL.tflite ...]

Default models: the zoo's NASNetMobile int8 (567 ops) and unrolled GRU (1,085 ops), per op on
GPU,NNAPI,CPU, if the shared zoo is there; ``--synthetic N`` adds a random layered N-op model.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tacopt.benchmarks.zoos import BenchmarkError, resolve_zoo
from tacopt.cost_models.base import get_cost_model
from tacopt.fusion.ir import Op, Tensor, make_graph
from tacopt.fusion.tflite.reader import read_tflite
from tacopt.partitioner.page import compare_plans, page_data, render_page
from tacopt.partitioner.pipeline import partition

DEFAULT_MODELS = ("keras__nasnet_mobile_int8.tflite", "keras__text_gru_unrolled_float32.tflite")
BUDGET_S = 2.0


def synthetic_graph(n_ops: int, *, width: int = 6, seed: int = 0):
    """A layered model of ``n_ops`` float ops: each reads one or two ops of the layers above."""
    rng = random.Random(seed)
    kinds = ("ADD", "MUL", "RELU", "TANH", "LOGISTIC", "SUB", "FLOOR", "ABS")
    shape = (1, 8, 8, 16)
    tensors = [Tensor("input", shape, "float32")]
    ops, made = [], ["input"]
    for i in range(n_ops):
        kind = rng.choice(kinds)
        window = made[-2 * width :]
        a = rng.choice(window)
        inputs = (a, rng.choice(window)) if kind in ("ADD", "MUL", "SUB") else (a,)
        out = f"t{i}"
        tensors.append(Tensor(out, shape, "float32"))
        ops.append(Op(f"{kind.lower()}_{i}", kind, inputs, (out,)))
        made.append(out)
    read = {t for op in ops for t in op.inputs}
    outputs = [t for t in made[1:] if t not in read]
    return make_graph(f"synthetic_{n_ops}", tensors, ops, ["input"], outputs)


def build_page(G, devices: str, granularity: str) -> tuple[str, float, int]:
    """The page's HTML, the seconds to build it (partition included), and its op count."""
    start = time.perf_counter()
    model = get_cost_model("tac")
    result = partition(G, devices, granularity=granularity, cost_model=model)
    results, failed = compare_plans(result, ["exact", "tac"])
    data = page_data(results, cost_model=model, failed=failed)
    html = render_page(data)
    return html, time.perf_counter() - start, len(data["ops"])


def load_times(
    path: Path, runs: int, executable: str
) -> tuple[list[float], list[float], list[float]]:
    """Load ms by the page's clock, wall s by Playwright, and the renderer's main-thread busy s
    (Chromium's TaskDuration: what the page costs, less sensitive to a loaded machine) of
    ``runs`` fresh opens."""
    # Deferred: Playwright is a test extra, needed only by this timing of the page.
    from playwright.sync_api import sync_playwright

    loads, walls, busy = [], [], []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        for _ in range(runs + 1):  # the first warms the browser's caches; not counted
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")
            page.on("pageerror", lambda e: errors.append(str(e)))
            start = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)
            walls.append(time.perf_counter() - start)
            loads.append(float(page.evaluate("document.body.dataset.loadMs")))
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            busy.append(float(metrics.get("TaskDuration", float("nan"))))
            if errors:
                raise RuntimeError(f"{path.name}: {errors[0]}")
            page.close()
        browser.close()
    return loads[1:], walls[1:], busy[1:]


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--devices", default="GPU,NNAPI,CPU")
    parser.add_argument("--granularity", default="op")
    parser.add_argument("--synthetic", type=int, default=0, metavar="N", help="add an N-op model")
    parser.add_argument("--keep", type=Path, help="keep the pages in this folder")
    args = parser.parse_args()
    executable = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
    if executable is None:
        parser.error("chromium is not installed (apt-get install chromium)")

    graphs = [(m.name, read_tflite(m)) for m in args.models]
    if not args.models:
        try:
            zoo = {Path(i.source).name: i.source for i in resolve_zoo("shared")}
        except BenchmarkError as exc:  # the shared zoo is not on this machine
            print(f"no default models: {exc}")
            zoo = {}
        graphs = [(m, read_tflite(zoo[m])) for m in DEFAULT_MODELS if m in zoo]
    if args.synthetic:
        graphs.append((f"synthetic ({args.synthetic} ops)", synthetic_graph(args.synthetic)))
    print(f"CPU: {_cpu()}; load average before: {os.getloadavg()}")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench_page_"))
    folder.mkdir(parents=True, exist_ok=True)
    worst = 0.0
    for name, G in graphs:
        html, build_s, n_ops = build_page(G, args.devices, args.granularity)
        path = folder / (Path(name).stem.replace(" ", "_") + ".html")
        path.write_text(html, encoding="utf-8")
        loads, walls, busy = load_times(path, args.runs, executable)
        med = statistics.median(loads)
        worst = max(worst, max(loads))
        print(
            f"{name}: {n_ops} ops, page {len(html.encode()) / 1e6:.2f} MB built in {build_s:.2f} s;"
            f" load {med:.0f} ms (min-max {min(loads):.0f}-{max(loads):.0f} over {args.runs}),"
            f" wall to ready {statistics.median(walls):.2f} s"
            f" ({min(walls):.2f}-{max(walls):.2f}); renderer main thread busy"
            f" {statistics.median(busy):.2f} s ({min(busy):.2f}-{max(busy):.2f})"
        )
    verdict = "met" if worst / 1000 <= BUDGET_S else "NOT met"
    print(
        f"load average after: {os.getloadavg()}; budget {BUDGET_S:.0f} s: {verdict}"
        f" (slowest load {worst:.0f} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

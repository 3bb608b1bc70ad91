"""The plan page in a real browser: headless Chromium (the system's) driven by Playwright.

Skipped when Playwright or Chromium is missing, except under CI (``CI=true``), where .ci/run
installs both and these tests must run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tacopt.partitioner.cli import main

RESNET = "torch__resnet18_float32.tflite"  # exact and tac differ on GPU,NNAPI,CPU per op
MOBILENET_INT8 = "keras__mobilenet_v2_int8.tflite"  # GPU,NPU,CPU: a float unit and an int8 one
# NNAPI,CPU per op: greedy runs GATHER on the CPU as exact does, but in another type
TEXT_LSTM_INT8 = "keras__text_lstm_tfkeras_int8.tflite"


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    under_ci = os.environ.get("CI", "").lower() == "true"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if under_ci:
            raise
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    executable = _chromium()
    if executable is None:
        if under_ci:
            pytest.fail("chromium is not installed; .ci/run installs it with apt-get")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield b
        b.close()


class Page:
    """One opened plan page, with the console errors and every request it made."""

    def __init__(self, browser, path: Path, width: int = 1500, height: int = 950) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else 0)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready='1']", timeout=30_000)

    def text(self, selector: str) -> str:
        return self.page.locator(selector).inner_text().strip()

    def select(self, name: str) -> None:
        """Find op ``name`` with the search box (Enter centres and opens it), then click it."""
        self.page.fill("#search", name)
        self.page.press("#search", "Enter")
        i = self.page.evaluate("(n) => tacoptPage.data.ops.findIndex((op) => op.name === n)", name)
        self.page.click(f"g.op[data-i='{i}']")


def _write_page(model: Path, out: Path, devices: str, *extra: str) -> dict:
    plan = out.with_suffix(".json")
    code = main(["partition", str(model), "--devices", devices, "--html", str(out),
                 "--plan", str(plan), *extra])  # fmt: skip
    assert code == 0
    return json.loads(plan.read_text())


def _per_device_ops(summary: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, unit in summary["units"].items():
        device = summary["assignment"][name]["device"]
        counts[device] = counts.get(device, 0) + len(unit["ops"])
    return counts


def _plan_of(model: Path, tmp: Path, picker: str, devices: str, *extra: str) -> dict:
    return _write_page(model, tmp / f"{picker}.html", devices, "--picker", picker, *extra)


def test_page_counts_panel_and_pickers(browser, bundled_models, tmp_path):
    model = bundled_models[RESNET]
    args = ("--granularity", "op")
    summary = _write_page(model, tmp_path / "plan.html", "GPU,NNAPI,CPU", *args,
                          "--compare", "exact,tac")  # fmt: skip
    page = Page(browser, tmp_path / "plan.html")
    assert page.errors == []
    assert page.requests == [(tmp_path / "plan.html").as_uri()]  # nothing else is fetched

    # counts against the plan JSON: ops, units, ops per device
    n_ops = sum(len(u["ops"]) for u in summary["units"].values())
    assert int(page.text("#n-ops")) == n_ops == page.page.locator("g.op").count()
    assert int(page.text("#n-units")) == len(summary["units"])
    shown = {d: int(page.text(f"#device-ops [data-device='{d}'] .n")) for d in summary["devices"]}
    expected = _per_device_ops(summary)
    assert {d: n for d, n in shown.items() if n} == expected

    # click an op: its kind and every device's cost or why it was refused
    unit = next(iter(summary["units"]))
    op = summary["units"][unit]["ops"][0]
    page.select(op)
    assert page.text("#op-name") == op
    # the op's tooltip is made when the pointer reaches it (not for every op at load)
    i = page.page.evaluate("(n) => tacoptPage.data.ops.findIndex((o) => o.name === n)", op)
    assert page.page.locator(f"g.op[data-i='{i}'] title").text_content().startswith(f"{op} (")
    rows = page.page.locator("#op-costs tbody tr")
    assert {rows.nth(i).get_attribute("data-device") for i in range(rows.count())} == set(
        summary["devices"]
    )
    chosen = summary["assignment"][unit]
    row = page.page.locator(
        f"#op-costs tr[data-device='{chosen['device']}'][data-type='{chosen['type']}']"
    )
    assert float(row.locator(".cost").inner_text().replace(",", "")) == pytest.approx(
        chosen["cost"], rel=1e-4
    )
    assert "chosen" in row.get_attribute("class")

    # switch pickers: counts follow the tac plan; the differences are exactly the moved ops
    tac = _plan_of(model, tmp_path, "tac", "GPU,NNAPI,CPU", *args)
    page.page.click("#picker-bar button[data-picker='tac']")
    assert page.page.evaluate("document.body.dataset.plan") == "tac"
    shown = {d: int(page.text(f"#device-ops [data-device='{d}'] .n")) for d in summary["devices"]}
    assert {d: n for d, n in shown.items() if n} == _per_device_ops(tac)
    moved = {
        op
        for name, unit in summary["units"].items()
        if summary["assignment"][name]["device"] != tac["assignment"][name]["device"]
        for op in unit["ops"]
    }
    assert moved, "the test needs plans that differ"
    page.page.check("#diff")
    highlighted = page.page.eval_on_selector_all(
        "g.op.diff", "(els) => els.map((el) => tacoptPage.data.ops[+el.dataset.i].name)"
    )
    assert set(highlighted) == moved
    assert int(page.text("#n-diff")) == len(moved)
    delta = tac["objective"] - summary["objective"]
    cell = page.text("#plans-table tr[data-picker='tac'] .delta")
    assert float(cell.split(" ")[0].replace(",", "")) == pytest.approx(delta, rel=1e-3)

    page.page.screenshot(path=str(tmp_path / "resnet.png"))
    assert (tmp_path / "resnet.png").stat().st_size > 10_000
    assert page.errors == []


def test_compare_counts_type_changes_apart_from_moves(browser, bundled_models, tmp_path):
    model = bundled_models[TEXT_LSTM_INT8]
    args = ("NNAPI,CPU", "--granularity", "op")
    exact = _write_page(model, tmp_path / "c.html", *args, "--compare", "exact,greedy")
    greedy = _plan_of(model, tmp_path, "greedy", *args)
    ops = {name: unit["ops"] for name, unit in exact["units"].items()}
    a, b = exact["assignment"], greedy["assignment"]
    moved = {op for u in ops if a[u]["device"] != b[u]["device"] for op in ops[u]}
    retyped = {op for u in ops if a[u]["device"] == b[u]["device"] and a[u]["type"] != b[u]["type"]
               for op in ops[u]}  # fmt: skip
    assert retyped, "the test needs plans that differ only in type somewhere"
    page = Page(browser, tmp_path / "c.html")
    assert page.errors == []
    assert int(page.text("#n-diff")) == len(moved) and int(page.text("#n-retyped")) == len(retyped)
    row = "#plans-table tr[data-picker='greedy']"
    assert int(page.text(f"{row} .differ")) == len(moved)
    assert int(page.text(f"{row} .retyped")) == len(retyped)
    page.page.check("#diff")
    shown = "(els) => els.map((el) => tacoptPage.data.ops[+el.dataset.i].name)"
    assert set(page.page.eval_on_selector_all("g.op.retyped", shown)) == retyped
    assert set(page.page.eval_on_selector_all("g.op.diff", shown)) == moved
    op = sorted(retyped)[0]
    page.select(op)
    unit = next(u for u in ops if op in ops[u])
    assert f"greedy {b[unit]['device']}/{b[unit]['type']}" in page.text("#op-plans")


def test_graph_inputs_and_outputs_are_nodes(browser, bundled_models, tmp_path):
    model = bundled_models[MOBILENET_INT8]
    _write_page(model, tmp_path / "io.html", "GPU,CPU")
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(model)
    page = Page(browser, tmp_path / "io.html")
    assert page.errors == []
    inputs, outputs = G.graph["inputs"], G.graph["outputs"]
    assert page.page.locator("g.io.input").count() == len(inputs)
    assert page.page.locator("g.io.output").count() == len(outputs)
    tops = page.page.evaluate("Math.min(...tacoptPage.data.ops.map((op) => op.y))")
    bottoms = page.page.evaluate("Math.max(...tacoptPage.data.ops.map((op) => op.y))")
    io = page.page.evaluate("tacoptPage.data.io")
    assert all(n["y"] < tops for n in io if n["kind"] == "input")
    assert all(n["y"] > bottoms for n in io if n["kind"] == "output")
    assert page.page.locator("#io-edges path").count() == sum(len(n["ops"]) for n in io)
    page.page.click("g.io.input")
    assert page.text("#io-name") == inputs[0]
    reader = page.page.evaluate("tacoptPage.data.ops[tacoptPage.data.io[0].ops[0]].name")
    assert reader in page.text("#io-ops")


def test_units_quantize_marks_and_memory(browser, bundled_models, tmp_path):
    summary = _write_page(bundled_models[MOBILENET_INT8], tmp_path / "m.html", "GPU,NPU,CPU",
                          "--memory", "GPU=64MiB")  # fmt: skip
    page = Page(browser, tmp_path / "m.html")
    assert page.errors == []
    assert page.page.locator("#units rect.unit").count() == len(summary["units"])
    # an edge between an int8 and a float view is marked as a conversion
    formats = {
        name: "FLOAT" if a["type"] == "FLOAT" else a["type"]
        for name, a in summary["assignment"].items()
    }
    assert len(set(formats.values())) > 1, "the test needs float and int8 units"
    assert page.page.locator("g.mark.quant").count() > 0
    assert page.page.locator("path.edge.quant").count() > 0
    # each device's memory timeline, with its capacity and the plan's peak
    for d in summary["devices"]:
        assert page.page.locator(f"#memory-charts .mem-head[data-device='{d}']").count() == 1
    assert page.page.locator("#memory-charts line.cap").count() == 1
    head = page.text("#memory-charts .mem-head[data-device='GPU']")
    assert "capacity 64.00 MiB" in head
    page.page.screenshot(path=str(tmp_path / "mobilenet.png"))


def test_pinned_ops_are_marked(browser, bundled_models, tmp_path):
    summary = _write_page(bundled_models[RESNET], tmp_path / "p.html", "GPU,CPU",
                          "--granularity", "op", "--pin", "kind:CONV_2D=CPU")  # fmt: skip
    page = Page(browser, tmp_path / "p.html")
    pinned = page.page.eval_on_selector_all(
        "g.op.pinned", "(els) => els.map((el) => tacoptPage.data.ops[+el.dataset.i].name)"
    )
    assert pinned and set(pinned) == set(summary["pinned"])  # the plan JSON's pinned ops
    for name in pinned:
        unit = next(u for u, rec in summary["units"].items() if name in rec["ops"])
        assert summary["assignment"][unit]["device"] == "CPU"
    assert "pins kind:CONV_2D=CPU" in page.text("#meta")
    page.select(pinned[0])
    assert "pin: " in page.text("#op-costs tr[data-device='GPU'] .why")


def test_nasnet_page_shows_every_op(browser, zoo_dir, tmp_path):
    model = zoo_dir / "keras__nasnet_mobile_int8.tflite"
    summary = _write_page(model, tmp_path / "n.html", "GPU,NNAPI,CPU", "--granularity", "op",
                          "--compare", "exact,tac")  # fmt: skip
    page = Page(browser, tmp_path / "n.html")
    assert page.errors == []
    n_ops = sum(len(u["ops"]) for u in summary["units"].values())
    assert n_ops > 500 and page.page.locator("g.op").count() == n_ops
    page.page.fill("#search", "CONV_2D")
    assert int(page.text("#n-hits").split()[0]) > 50
    page.page.screenshot(path=str(tmp_path / "nasnet.png"))


def test_a_model_without_ops_opens_empty(browser, zoo_dir, tmp_path):
    model = zoo_dir.parent / "repro" / "no_ops.tflite"  # the reproducer
    if not model.is_file():
        pytest.skip(f"{model} is not here")
    _write_page(model, tmp_path / "empty.html", "GPU,CPU", "--compare", "exact,tac")
    page = Page(browser, tmp_path / "empty.html")
    assert page.errors == []
    assert page.text("#n-ops") == "0" and page.page.locator("g.op").count() == 0


#: Set before the page's own script: any call from injected markup or script is recorded.
_TRAP = """
window.__ran = [];
for (const f of ["alert", "confirm", "prompt", "print", "open"]) {
  window[f] = (...a) => { window.__ran.push(f + ":" + a.join(",")); };
}
"""


def _hostile_roles(k: int) -> list[str]:
    """The hostile names rotated by ``k``, so each lands in every role over a few models."""
    from tacopt.benchmarks.fuzz.names import HOSTILE

    names = [HOSTILE[(k + i) % len(HOSTILE)] for i in range(len(HOSTILE))]
    return names[:12]


@pytest.mark.parametrize("k", range(0, 17, 3))
def test_pages_of_hostile_names_run_no_script_and_draw_every_op(browser, tmp_path, k):
    from tacopt.benchmarks.fuzz.names import hostile_graph, page_problems
    from tacopt.fusion.tflite.writer import write_tflite

    names = _hostile_roles(k)
    folder = tmp_path / "m"
    folder.mkdir()
    stems = ("<!--<script", "<img src=x onerror=alert(9)>", "a\u2028b", "x\"'&<b>")
    model = write_tflite(hostile_graph(names), folder / f"{stems[k % len(stems)]}.tflite")
    out = tmp_path / "page.html"
    summary = _write_page(model, out, "GPU,CPU", "--compare", "exact,greedy")
    html = out.read_text()
    assert "<!--<script" not in html.split('id="plan-data">', 1)[1].split("</script>", 1)[0]

    page = browser.new_page()
    ran_dialogs: list[str] = []
    requests: list[str] = []
    errors: list[str] = []
    page.on("dialog", lambda d: (ran_dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else 0)
    page.add_init_script(_TRAP)
    page.goto(out.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    n_ops = sum(len(u["ops"]) for u in summary["units"].values())
    assert n_ops == 3
    assert page.locator("g.op").count() == n_ops
    assert int(page.locator("#n-ops").inner_text()) == n_ops
    shown = page.evaluate("() => tacoptPage.data.ops.map((op) => op.kind)")
    assert "CUSTOM:" + names[6] in shown  # the custom code reads back as it was written
    # Open every op's panel and every graph input / output: names go into the panel's HTML too.
    for i in range(n_ops):
        page.click(f"g.op[data-i='{i}']")
    for i in range(page.locator("g.io").count()):
        page.click(f"g.io[data-io='{i}']")
    page.fill("#search", names[6])
    page.press("#search", "Enter")
    assert page.evaluate("() => window.__ran") == []
    assert ran_dialogs == [] and errors == []
    assert requests == [out.as_uri()]
    data = page.evaluate("() => tacoptPage.data")
    assert page_problems(html, data) == []
    page.close()


def test_header_counts_follow_the_shown_plans_row(browser, bundled_models, tmp_path):
    """Issue 46: with three plans the header counted ops moved in any plan (2) while the tac
    row said 1; the header now compares the shown plan (or the second) with the first."""
    model = bundled_models[MOBILENET_INT8]
    args = ("GPU,NNAPI,CPU", "--granularity", "op", "--compare", "exact,tac,first-fit")
    _write_page(model, tmp_path / "three.html", *args)
    page = Page(browser, tmp_path / "three.html")
    assert page.errors == []
    for picker in ("tac", "first-fit", "exact"):
        page.page.click(f"#picker-bar button[data-picker='{picker}']")
        row = "tac" if picker == "exact" else picker  # the first plan shown: the second's row
        assert page.text("#n-diff") == page.text(f"#plans-table tr[data-picker='{row}'] .differ")
        assert page.text("#diff-vs") == f"exact and {row}"


def test_fit_shows_the_whole_graph_and_the_wheel_scrolls(browser, zoo_dir, tmp_path):
    """Issue 46: "fit" fitted the width only, and the wheel zoomed instead of scrolling."""
    out = tmp_path / "nasnet.html"
    model = zoo_dir / "keras__nasnet_mobile_int8.tflite"
    assert main(["partition", str(model), "--devices", "GPU,CPU", "--granularity", "op",
                 "--html", str(out)]) == 0  # fmt: skip
    page = Page(browser, out, width=1200, height=800)
    transform = "() => document.getElementById('viewport').getAttribute('transform')"

    def scale_and_y() -> tuple[float, float]:
        t = page.page.evaluate(transform)
        return float(t.split("scale(")[1].rstrip(")")), float(t.split(",")[1].split(")")[0])

    k0, y0 = scale_and_y()
    box = page.page.locator("#graph").bounding_box()
    page.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.page.mouse.wheel(0, 300)
    k1, y1 = scale_and_y()
    assert k1 == k0 and y1 < y0  # scrolled down, not zoomed
    page.page.keyboard.down("Control")
    page.page.mouse.wheel(0, 300)
    page.page.keyboard.up("Control")
    assert scale_and_y()[0] < k1  # ctrl+wheel zooms out
    page.page.click("#fit")
    k, _ = scale_and_y()
    height = page.page.evaluate("tacoptPage.data.size[1]")
    assert height * k <= box["height"]  # the whole height is in view
    assert page.errors == []

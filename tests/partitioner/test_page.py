"""The plan page (``tacopt partition --html``): its data, its layout, its refusals, its file.

The page in a real browser is tests/partitioner/test_page_browser.py.
"""

from __future__ import annotations

import json
import re

import pytest

from tacopt.fusion.ir import Op, Tensor, make_graph
from tacopt.partitioner.cli import main
from tacopt.partitioner.page import compare_plans, layout_units, page_data, render_page
from tacopt.partitioner.pipeline import partition

RESNET = "torch__resnet18_float32.tflite"  # exact and tac differ on GPU,NNAPI,CPU per op


def _chain() -> object:
    """x -> relu_0 -> y -> pack_1 (with x) -> z -> floor_2 -> w

    PACK is not a GPU kind (the GPU view lowers it); FLOOR is not one at all.
    """
    ts = [Tensor("x", (1, 4), "float32"), Tensor("y", (1, 4), "float32"),
          Tensor("z", (2, 1, 4), "float32"), Tensor("w", (2, 1, 4), "float32")]  # fmt: skip
    ops = [Op("relu_0", "RELU", ("x",), ("y",)),
           Op("pack_1", "PACK", ("x", "y"), ("z",), {"axis": 0}),
           Op("floor_2", "FLOOR", ("z",), ("w",))]  # fmt: skip
    return make_graph("chain", ts, ops, ["x"], ["w"])


def test_layout_puts_every_op_below_its_producers_and_inside_its_unit():
    G = _chain()
    units = [("a", ("relu_0", "pack_1")), ("b", ("floor_2",))]
    lay = layout_units(G, units)
    for u, v in G.edges():
        assert lay.centers[u][1] < lay.centers[v][1]
    for name, ops in units:
        x, y, w, h = lay.boxes[name]
        for op in ops:
            cx, cy = lay.centers[op]
            assert x < cx < x + w and y < cy < y + h
    assert lay.width > 0 and lay.height >= lay.centers["floor_2"][1]


def test_graph_inputs_sit_above_the_ops_and_outputs_below():
    G = _chain()
    data = page_data([partition(G, "GPU,CPU", granularity="op")])
    io = {(n["kind"], n["tensor"]): n for n in data["io"]}
    assert set(io) == {("input", "x"), ("output", "w")}
    names = [op["name"] for op in data["ops"]]
    assert [names[i] for i in io["input", "x"]["ops"]] == ["relu_0", "pack_1"]  # both read x
    assert [names[i] for i in io["output", "w"]["ops"]] == ["floor_2"]
    ys = [op["y"] for op in data["ops"]]
    assert io["input", "x"]["y"] < min(ys) and io["output", "w"]["y"] > max(ys)
    assert io["output", "w"]["y"] < data["size"][1] and io["input", "x"]["y"] > 0
    assert io["input", "x"]["info"] == ["x", [1, 4], "float32", False]


def test_layout_refuses_units_in_a_cycle_and_ops_in_no_unit():
    G = _chain()
    from tacopt.partitioner.targets import PartitionError

    with pytest.raises(PartitionError, match="DAG"):
        layout_units(G, [("a", ("relu_0", "floor_2")), ("b", ("pack_1",))])
    with pytest.raises(PartitionError, match="floor_2"):
        layout_units(G, [("a", ("relu_0", "pack_1"))])


def test_page_data_says_why_a_device_refuses_an_op_and_what_it_costs_alone():
    from tacopt.cost_models.base import get_cost_model

    G = _chain()
    result = partition(G, "GPU,CPU")
    data = page_data([result], cost_model=get_cost_model("tac"))
    ops = {op["name"]: op for op in data["ops"]}
    assert ops["floor_2"]["refused"]["GPU"].startswith("kind: ")
    assert "FLOOR" in ops["floor_2"]["refused"]["GPU"]
    assert ops["pack_1"]["refused"] == {}  # the GPU runs PACK lowered
    assert set(ops["floor_2"]["costs"]) == {"CPU"}
    assert set(ops["relu_0"]["costs"]) == {"GPU", "CPU"}
    assert page_data([result])["ops"][0]["costs"] == {}  # no cost model given


def test_page_data_counts_match_the_plan(bundled_models):
    from tacopt.fusion.tflite.reader import read_tflite

    result = partition(read_tflite(bundled_models[RESNET]), "GPU,NNAPI,CPU", granularity="op")
    results, failed = compare_plans(result, ["exact", "tac"])
    assert failed == {}
    data = page_data(results)
    summary = result.summary()
    assert len(data["ops"]) == sum(len(u["ops"]) for u in summary["units"].values())
    assert len(data["units"]) == len(summary["units"])
    assert [p["picker"] for p in data["plans"]] == ["exact", "tac"]
    for plan, r in zip(data["plans"], results):
        assert plan["objective"] == r.plan.objective
        for unit, k in zip(data["units"], plan["choice"]):
            chosen = r.plan.assignment[unit["name"]]
            assert (unit["views"][k]["device"], unit["views"][k]["type"]) == (
                chosen.device, chosen.type)  # fmt: skip
        peaks = r.summary()["peak_memory"]  # what tacopt partition reports (each op a step)
        for d, use in plan["memory"].items():
            assert max(use) == pytest.approx(peaks.get(d, 0.0), abs=1)
    # every op refused by a device has no view there when it is a unit of its own
    for op in data["ops"]:
        devices = {v["device"] for v in data["units"][op["unit"]]["views"]}
        for d in op["refused"]:
            assert d != "CPU"
            assert d not in devices or any(
                v["lowerings"] for v in data["units"][op["unit"]]["views"] if v["device"] == d
            )


def test_page_data_refuses_plans_of_different_problems():
    from tacopt.partitioner.targets import PartitionError

    G = _chain()
    with pytest.raises(PartitionError, match="one pick problem"):
        page_data([partition(G, "GPU,CPU"), partition(G, "GPU,CPU")])
    with pytest.raises(PartitionError, match="no plan"):
        page_data([])


def _loads_nothing(html: str) -> None:
    """No element or style of the page fetches anything."""
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, re.I)
    assert not re.search(r"<link\b", html, re.I)
    assert not re.search(r"<(img|iframe|embed|object|audio|video|source)\b", html, re.I)
    assert not re.search(r"\b(src|href|srcset|action)\s*=\s*[\"']?\s*(https?:)?//", html, re.I)
    assert not re.search(r"url\(\s*[\"']?\s*(https?:)?//", html, re.I)
    assert not re.search(r"@import|\bfetch\(|XMLHttpRequest|WebSocket|EventSource", html)
    assert not re.search(r"https?://", html)


def test_page_is_one_file_that_loads_nothing_and_escapes_names():
    G = _chain()
    G = nx_relabel(G, {"relu_0": "</script><script>alert(1)</script>"})
    html = render_page(page_data([partition(G, "GPU,CPU")]))
    _loads_nothing(html)
    assert html.count("</script>") == 2  # the data's and the code's; the name is escaped
    payload = html.split('id="plan-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(payload)["ops"][0]["name"] == "</script><script>alert(1)</script>"


def nx_relabel(G, mapping):
    """``G`` with ops renamed (the op records too)."""
    from dataclasses import replace

    ops = [replace(d["op"], name=mapping.get(n, n)) for n, d in G.nodes(data=True)]
    return make_graph(G.graph["name"], list(G.graph["tensors"].values()), ops,
                      G.graph["inputs"], G.graph["outputs"])  # fmt: skip


def test_cli_html_and_compare(bundled_models, tmp_path, capsys):
    page, plan = tmp_path / "plan.html", tmp_path / "plan.json"
    code = main(["partition", str(bundled_models[RESNET]), "--devices", "GPU,NNAPI,CPU",
                 "--granularity", "op", "--html", str(page), "--compare", "exact,tac",
                 "--plan", str(plan)])  # fmt: skip
    assert code == 0
    html = page.read_text()
    _loads_nothing(html)
    data = json.loads(html.split('id="plan-data">', 1)[1].split("</script>", 1)[0])
    assert [p["picker"] for p in data["plans"]] == ["exact", "tac"]
    assert data["plans"][0]["objective"] == json.loads(plan.read_text())["objective"]


def test_cli_compare_needs_html_and_known_pickers(bundled_models, tmp_path, capsys):
    model = str(bundled_models[RESNET])
    assert main(["partition", model, "--devices", "GPU,CPU", "--compare", "exact,tac"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--compare" in err and "--html" in err and len(err.splitlines()) == 1
    page = tmp_path / "p.html"
    code = main(["partition", model, "--devices", "GPU,CPU", "--html", str(page),
                 "--compare", "exact,nosuch"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "nosuch" in err and len(err.splitlines()) == 1
    assert not page.exists()


def test_a_compared_picker_without_a_plan_is_a_row_that_says_why(bundled_models, tmp_path, capsys):
    page = tmp_path / "p.html"
    code = main(["partition", str(bundled_models["keras__mobilenet_v2_int8.tflite"]),
                 "--devices", "NNAPI,CPU", "--granularity", "op", "--memory", "NNAPI=2MiB",
                 "--html", str(page), "--compare", "exact,tac,greedy"])  # fmt: skip
    assert code == 0  # tac's plan does not fit in 2 MiB: the others are still shown
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--compare tac: no plan" in err[0] and "capacity" in err[0]
    data = json.loads(page.read_text().split('id="plan-data">', 1)[1].split("</script>", 1)[0])
    assert [p["picker"] for p in data["plans"]] == ["exact", "greedy"]
    assert list(data["failed"]) == ["tac"] and "capacity" in data["failed"]["tac"]

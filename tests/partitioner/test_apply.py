"""Applying a plan: a valid, fully tagged graph; conversions where formats meet; all-CPU = input."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.fusion.ir import validate_graph
from tacopt.fusion.tflite.litert import random_inputs, run_graph
from tacopt.partitioner.annotate import annotate_targets
from tacopt.partitioner.apply import apply_plan, chosen_views
from tacopt.partitioner.subgraphs import op_units, raise_subgraphs
from tacopt.partitioner.targets import PartitionError, resolve_devices
from tacopt.partitioner.views import enumerate_views
from tests.partitioner.test_costing import float_net, int8_net
from tests.partitioner.test_subgraphs import tac_readme_graph


def proposed(G, devices, granularity="subgraph"):
    targets = resolve_devices(devices)
    raise_units = raise_subgraphs if granularity == "subgraph" else op_units
    part = raise_units(G, annotate_targets(G, targets))
    views = {u.subgraph.name: u.views for u in enumerate_views(G, part, targets)}
    return part, views


def kinds(G):
    return [G.nodes[n]["op"].kind for n in G]


def all_on(part, device, types=None):
    return {s.name: (device, (types or {}).get(s.name, s.inference_type)) for s in part.subgraphs}


@pytest.mark.parametrize("granularity", ["subgraph", "op"])
@pytest.mark.parametrize("net", [float_net, int8_net, tac_readme_graph])
def test_all_cpu_plan_reproduces_the_original(net, granularity):
    G = net()
    part, views = proposed(G, "GPU,NNAPI,CPU", granularity)
    H = apply_plan(G, part, views, all_on(part, "CPU"))
    validate_graph(H)
    assert sorted(H) == sorted(G)  # subgraph order may interleave program order differently
    if granularity == "op":
        assert kinds(H) == kinds(G) and list(H) == list(G)
    assert H.graph["inputs"] == G.graph["inputs"] and H.graph["outputs"] == G.graph["outputs"]
    assert {H.nodes[n]["device"] for n in H} == {"CPU"}
    assert all(H.nodes[n]["op"] == G.nodes[n]["op"] for n in G)
    feeds = random_inputs(G, seed=0)
    want, got = run_graph(G, feeds), run_graph(H, feeds)
    for t in G.graph["outputs"]:
        np.testing.assert_array_equal(got[t], want[t])


@pytest.mark.parametrize("net", [float_net, int8_net, tac_readme_graph])
def test_every_view_choice_gives_a_valid_fully_tagged_graph(net):
    G = net()
    part, views = proposed(G, "GPU,NNAPI,CPU", "op")
    for k in range(max(len(v) for v in views.values())):
        assignment = {
            u: (vs[k % len(vs)].device, vs[k % len(vs)].inference_type) for u, vs in views.items()
        }
        H = apply_plan(G, part, views, assignment)
        validate_graph(H)
        for _, data in H.nodes(data=True):
            assert data["device"] in {"CPU", "GPU", "NNAPI"}
            assert data["inference_type"] in {"FLOAT", "QUANTIZED_INT8"}
        assert [H.graph["tensors"][t].dtype for t in H.graph["outputs"]] == [
            G.graph["tensors"][t].dtype for t in G.graph["outputs"]
        ]


def test_gpu_plan_tags_ops_with_their_views_device_and_inlines_lowerings():
    G = tac_readme_graph()
    part, views = proposed(G, "GPU,CPU")
    H = apply_plan(G, part, views, all_on(part, "GPU"))
    validate_graph(H)
    assert "PACK" not in kinds(H) and "CONCATENATION" in kinds(H)
    assert {H.nodes[n]["device"] for n in H} == {"GPU"}
    feeds = random_inputs(G, seed=1)
    np.testing.assert_allclose(run_graph(H, feeds)["p"], run_graph(G, feeds)["p"], rtol=1e-6)


def test_float_unit_between_int8_ones_gets_dequantize_and_quantize():
    """x (int8) ─ DEQUANTIZE ─ conv_2d_0 (GPU, FLOAT) ─ QUANTIZE ─ max_pool_2d_1 (CPU, int8)"""
    G = int8_net()
    part, views = proposed(G, "GPU,CPU", "op")
    H = apply_plan(
        G, part, views, {"conv_2d_0": ("GPU", "FLOAT"), "max_pool_2d_1": ("CPU", "QUANTIZED_INT8")}
    )
    validate_graph(H)
    assert kinds(H) == ["DEQUANTIZE", "CONV_2D", "QUANTIZE", "MAX_POOL_2D"]
    tags = [(H.nodes[n]["device"], H.nodes[n]["inference_type"]) for n in H]
    assert tags == [("CPU", "FLOAT"), ("GPU", "FLOAT"), ("CPU", "FLOAT"), ("CPU", "QUANTIZED_INT8")]
    tensors = H.graph["tensors"]
    quantize = H.nodes[list(H)[2]]["op"]
    assert tensors[quantize.outputs[0]] == G.graph["tensors"]["conv_2d_0"]  # same scale, zero
    assert tensors[quantize.inputs[0]].dtype == "float32"
    # float conv + quantize is the int8 conv up to one rounding step
    feeds = random_inputs(G, seed=0)
    want, got = run_graph(G, feeds), run_graph(H, feeds)
    (y,) = G.graph["outputs"]
    assert got[y].dtype == np.int8
    assert np.abs(got[y].astype(int) - want[y].astype(int)).max() <= 1


def test_graph_outputs_of_float_units_are_quantized_back():
    G = int8_net()
    part, views = proposed(G, "GPU,CPU", "subgraph")
    H = apply_plan(G, part, views, all_on(part, "GPU", {"subgraph_0": "FLOAT"}))
    assert kinds(H)[0] == "DEQUANTIZE" and kinds(H)[-1] == "QUANTIZE"
    assert H.graph["outputs"] == G.graph["outputs"]


def test_apply_leaves_the_input_alone():
    G = tac_readme_graph()
    before = [(n, dict(d)) for n, d in G.nodes(data=True)]
    part, views = proposed(G, "GPU,CPU")
    apply_plan(G, part, views, all_on(part, "GPU"))
    assert [(n, dict(d)) for n, d in G.nodes(data=True)] == before


def test_bad_assignments_are_named():
    G = tac_readme_graph()
    part, views = proposed(G, "GPU,CPU")
    first = part.subgraphs[0].name
    with pytest.raises(PartitionError, match=f"plan has no choice for unit '{first}'"):
        chosen_views(part, views, {})
    bad = {**all_on(part, "CPU"), first: ("NNAPI", "FLOAT")}
    with pytest.raises(PartitionError, match=f"unit '{first}' has no view NNAPI/FLOAT"):
        apply_plan(G, part, views, bad)

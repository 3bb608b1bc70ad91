"""The pipeline fuses first: fused ops are units with device views, lowered where a device lacks
them, and plans on the fused DAG are never worse than on the model as it is."""

from __future__ import annotations

import numpy as np
import pytest

from tacopt.benchmarks.scripts.pipeline.check_partition import check_model
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.partitioner.pipeline import build_pick_problem, partition
from tacopt.partitioner.targets import OpSupport, TableTarget


def gelu_graph():
    """x -> CONV_2D -> GELU(approximate) -> CONV_2D -> y   (GPU has no GELU kernel)."""
    b = GraphBuilder("gelu")
    x = b.input("x", (1, 8, 8, 4))
    w = np.full((4, 1, 1, 4), 0.1, np.float32)
    h = b.op("CONV_2D", x, w, np.zeros(4, np.float32))
    g = b.op("GELU", h, approximate=True)
    return b.build(outputs=[b.op("CONV_2D", g, w, np.zeros(4, np.float32))])


@pytest.mark.parametrize("devices", ["GPU,CPU", "NNAPI,CPU", "GPU,NNAPI,CPU"])
@pytest.mark.parametrize("granularity", ["subgraph", "op"])
def test_the_fused_transformer_plan_is_no_worse(bundled_models, devices, granularity):
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(bundled_models["keras__text_transformer_float32.tflite"])
    fused = partition(G, devices, granularity=granularity)
    plain = partition(G, devices, granularity=granularity, fuse=False)
    assert fused.fusions == {"layer_norm": 4}
    # no device runs a LayerNorm kernel: it is unfused again rather than pinned to one device
    assert fused.unfused == {"CUSTOM:LayerNorm": 4}
    assert fused.plan.objective <= plain.plan.objective * (1 + 1e-12)


def test_a_fused_op_a_device_lacks_gets_a_lowered_view_there():
    proposal = build_pick_problem(gelu_graph(), "GPU,CPU", granularity="op")
    (gelu,) = [n for n in proposal.graph if proposal.graph.nodes[n]["op"].kind == "GELU"]
    views = {v.device: v for v in proposal.views[gelu]}
    assert set(views) == {"CPU", "GPU"}
    assert views["CPU"].lowerings == ()  # LiteRT's CPU runs GELU as one op
    assert views["GPU"].lowerings == ("unfuse_gelu",)
    kinds = sorted(d["op"].kind for _, d in views["GPU"].graph.nodes(data=True))
    assert "GELU" not in kinds and "TANH" in kinds


def test_a_device_that_declares_a_fused_kind_keeps_it_fused(bundled_models):
    from tacopt.fusion.tflite.reader import read_tflite

    table = {"CUSTOM:LayerNorm": OpSupport(frozenset({"FLOAT"}))}
    npu = TableTarget("LNPU", table, cost_device="GPU")
    G = read_tflite(bundled_models["keras__text_transformer_float32.tflite"])
    proposal = build_pick_problem(G, [npu, "CPU"], granularity="op")
    assert proposal.unfused == {}
    norms = [n for n in proposal.graph if proposal.graph.nodes[n]["op"].kind == "CUSTOM:LayerNorm"]
    assert len(norms) == 4
    for n in norms:  # fused on the device that has the kernel, unfused on the CPU: by the
        # lowering, and as the model had it (the region's original ops, issue 23)
        assert {(v.device, v.lowerings) for v in proposal.views[n]} == {
            ("LNPU", ()),
            ("CPU", ("unfuse_custom:layernorm",)),
            ("CPU", ("unfused_form",)),
        }


def test_no_fuse_partitions_the_model_as_it_is(bundled_models):
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(bundled_models["keras__text_lstm_float32.tflite"])
    plain = partition(G, "GPU,CPU", fuse=False)
    fused = partition(G, "GPU,CPU")
    assert plain.fusions == {} and "WHILE" in {
        d["op"].kind for _, d in plain.graph.nodes(data=True)
    }
    kinds = {d["op"].kind for _, d in fused.graph.nodes(data=True)}
    assert fused.fusions == {"lstm": 1} and "UNIDIRECTIONAL_SEQUENCE_LSTM" in kinds
    assert "WHILE" not in kinds


def test_the_fused_transformer_exports_and_matches_in_litert(bundled_models):
    """The exported plan of the fused model runs in LiteRT with the original model's outputs."""
    check = check_model(bundled_models["keras__text_transformer_float32.tflite"], "NNAPI,CPU", "op")
    assert check.ok, check


def test_the_rehydrated_keras_lstm_exports_one_fused_lstm_that_matches(bundled_models, tmp_path):
    """Issue 13: the Keras-3 LSTM (a WHILE loop) partitions over one UNIDIRECTIONAL_SEQUENCE_LSTM
    and its export gives the original's outputs in LiteRT."""
    from tacopt.benchmarks.scripts.pipeline.check_partition import run_litert
    from tacopt.fusion.ir import ops_of
    from tacopt.fusion.tflite.litert import random_inputs
    from tacopt.fusion.tflite.reader import read_tflite
    from tacopt.fusion.tflite.rehydrate import rehydrate
    from tacopt.fusion.tflite.writer import serialize_tflite
    from tacopt.partitioner.export import export_tflite

    G = rehydrate(read_tflite(bundled_models["keras__text_lstm_float32.tflite"]), seed=0)
    result = partition(G, "GPU,CPU")
    out = export_tflite(result, tmp_path / "out.tflite")
    kinds = [op.kind for _, op in ops_of(read_tflite(out))]
    assert kinds.count("UNIDIRECTIONAL_SEQUENCE_LSTM") == 1 and "WHILE" not in kinds
    feeds = random_inputs(G, seed=0)
    inputs = [feeds[t] for t in G.graph["inputs"]]
    (want,), (got,) = run_litert(serialize_tflite(G), inputs), run_litert(out.read_bytes(), inputs)
    assert np.max(np.abs(want - got)) <= 1e-5 * max(np.max(np.abs(want)), 1e-12)


def test_every_choice_holds_its_views_weight_bytes(bundled_models):
    from tacopt.fusion.tflite.reader import read_tflite
    from tacopt.partitioner.views import view_weight_bytes

    G = read_tflite(bundled_models["keras__mobilenet_v2_int8.tflite"])
    proposal = build_pick_problem(G, "GPU,CPU", granularity="op")
    tensors = proposal.graph.graph["tensors"]
    read = {i for _, d in proposal.graph.nodes(data=True) for i in d["op"].inputs if i}
    for unit in proposal.problem.units:
        for choice, view in zip(unit.choices, proposal.views[unit.name]):
            assert choice.memory == view_weight_bytes(view)
        by_type = {c.type: c.memory for c in unit.choices if c.device == "CPU"}
        if by_type.get("QUANTIZED_INT8"):  # dequantized weights take 4 bytes an element
            assert by_type["FLOAT"] >= by_type["QUANTIZED_INT8"]
    # The int8 views are the model's own ops: together they hold exactly its weights.
    initial = sum(u.choices[u.initial].memory for u in proposal.problem.units)
    assert initial == sum(tensors[n].nbytes for n in read if tensors[n].is_constant) > 0


def test_capacities_reach_the_problem_in_execution_order(bundled_models):
    from tacopt.fusion.tflite.reader import read_tflite
    from tacopt.partitioner.pipeline import PartitionError

    G = read_tflite(bundled_models["keras__text_transformer_float32.tflite"])
    proposal = build_pick_problem(G, "GPU,CPU", granularity="op", capacity={"GPU": 1e6})
    assert proposal.problem.capacity == {"GPU": 1e6}
    with pytest.raises(PartitionError, match="capacity of unknown device 'NPU'"):
        build_pick_problem(G, "GPU,CPU", capacity={"NPU": 1.0})
    result = partition(G, "GPU,CPU", granularity="op", capacity={"GPU": 1e6})
    assert result.plan.fits and result.plan.peak_memory["GPU"] <= 1e6


# -- a cost model that does not know every device (issue 23) ---------------------------------


def test_learned_on_gpu_cpu_prices_the_cpu_learned_and_the_gpu_by_roofline(bundled_models):
    from tacopt.cost_models.base import get_cost_model
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(bundled_models["keras__mobilenet_v2_float32.tflite"])
    result = partition(G, "GPU,CPU", cost_model="learned", granularity="op", picker="greedy")
    assert result.defaulted == {"GPU": "roofline"}
    assert result.cost_model == "learned+roofline"
    assert result.summary()["priced_by_default"] == {"GPU": "roofline"}
    learned, roofline = get_cost_model("learned"), get_cost_model("roofline")
    op = "conv_2d_0"
    (unit,) = [u for u in result.problem.units if u.name == op]
    view = {v.device: v for v in result.views[op]}
    costs = {c.device: c.cost for c in unit.choices}
    for device, model in (("CPU", learned), ("GPU", roofline)):
        H = view[device].graph
        assert costs[device] == pytest.approx(model.view_cost(H, list(H), device, "FLOAT"))


def test_a_model_that_knows_every_device_is_used_as_it_is(bundled_models):
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(bundled_models["keras__mobilenet_v2_float32.tflite"])
    result = partition(G, "GPU,CPU", cost_model="roofline", picker="greedy")
    assert result.defaulted == {} and result.cost_model == "roofline"


def test_the_cli_says_which_devices_the_default_priced(bundled_models, capsys):
    from tacopt.partitioner.cli import main

    model = str(bundled_models["keras__mobilenet_v2_float32.tflite"])
    assert main(["partition", model, "--devices", "GPU,CPU", "--cost-model", "learned"]) == 0
    out = capsys.readouterr().out
    assert "cost model learned+roofline" in out
    assert "priced by default: GPU by roofline (learned does not know it)" in out
    assert main(["partition", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "a device the model does not know is priced by its unit's default" in text

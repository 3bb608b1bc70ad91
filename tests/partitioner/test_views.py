"""Alternative views: TAC's PACK-on-GPU view, float views of int8 units, dropped views."""

from __future__ import annotations

from tacopt.fusion.ir import Buffer, Op, Quantization, Tensor, make_graph, validate_graph
from tacopt.partitioner.annotate import annotate_targets
from tacopt.partitioner.subgraphs import raise_subgraphs
from tacopt.partitioner.targets import resolve_devices
from tacopt.partitioner.views import enumerate_views, float_view
from tests.partitioner.test_subgraphs import tac_readme_graph


def test_pack_subgraph_gets_a_gpu_view_of_reshapes_and_a_concatenation():
    G = tac_readme_graph()
    targets = resolve_devices("GPU,CPU")
    units = enumerate_views(G, raise_subgraphs(G, annotate_targets(G, targets)), targets)
    pack = next(u for u in units if u.subgraph.ops == ("pack_3",))
    gpu = next(v for v in pack.views if v.device == "GPU")
    validate_graph(gpu.graph)
    kinds = sorted(gpu.graph.nodes[n]["op"].kind for n in gpu.graph)
    assert "PACK" not in kinds and kinds.count("CONCATENATION") == 1
    assert set(kinds) == {"RESHAPE", "CONCATENATION"}
    assert [v.device for v in pack.views] == ["CPU", "GPU"]  # the annotated view first


def test_int8_unit_gets_float_views_and_no_int8_gpu_view():
    q = Quantization((0.1,), (0,))
    G = make_graph(
        "q",
        [
            Tensor("x", (1, 4, 4, 2), "int8", quantization=q),
            Tensor("y", (1, 4, 4, 2), "int8", quantization=q),
        ],
        [Op("relu_0", "RELU", ("x",), ("y",))],
        ["x"],
        ["y"],
    )
    targets = resolve_devices("GPU,NNAPI,CPU")
    (unit,) = enumerate_views(G, raise_subgraphs(G, annotate_targets(G, targets)), targets)
    labels = {(v.device, v.inference_type) for v in unit.views}
    assert labels == {
        ("NNAPI", "QUANTIZED_INT8"),
        ("CPU", "QUANTIZED_INT8"),
        ("GPU", "FLOAT"),
        ("NNAPI", "FLOAT"),
        ("CPU", "FLOAT"),
    }
    F = float_view(G)
    assert F.graph["tensors"]["y__float"].dtype == "float32"


def test_view_with_an_op_the_device_lacks_is_dropped_but_cpu_stays():
    ts = [Tensor("x", (4,), "float32"), Tensor("y", (4,), "bool")]
    G = make_graph("g", ts, [Op("isnan_0", "CUSTOM:IsNan", ("x",), ("y",))], ["x"], ["y"])
    targets = resolve_devices("GPU,NNAPI")
    (unit,) = enumerate_views(G, raise_subgraphs(G, annotate_targets(G, targets)), targets)
    assert [v.device for v in unit.views] == ["CPU"]


def test_pinned_unit_has_views_on_its_device_only():
    G = tac_readme_graph()
    targets = resolve_devices("GPU,CPU")
    ann = annotate_targets(G, targets, pins=[("add_*", "CPU")])
    units = enumerate_views(G, raise_subgraphs(G, ann), targets)
    pinned = [u for u in units if u.subgraph.pinned]
    assert pinned and all(v.device == "CPU" for u in pinned for v in u.views)


def test_float_view_dequantizes_per_channel_weights_and_skips_packed_ones():
    #  x (int8) -> [FULLY_CONNECTED w] -> y (int8);  w: 3 x 2, one scale per output row
    q = Quantization((0.5,), (0,))
    wq = Quantization((1.0, 2.0, 4.0), (0, 0, 0), axis=0)
    w = Tensor("w", (3, 2), "int8", quantization=wq, buffer=Buffer.from_bytes(bytes([1] * 6)))
    ts = [Tensor("x", (1, 2), "int8", quantization=q), w,
          Tensor("y", (1, 3), "int8", quantization=q)]  # fmt: skip
    S = make_graph("s", ts, [Op("fc_0", "FULLY_CONNECTED", ("x", "w"), ("y",))], ["x"], ["y"])
    F = float_view(S)
    assert F is not None
    validate_graph(F)
    assert F.graph["tensors"]["w__float"].data().tolist() == [[1, 1], [2, 2], [4, 4]]
    # int4 weights stored two per byte have no element-wise float counterpart
    w4 = Tensor("w", (3, 2), "int4", quantization=wq, buffer=Buffer.from_bytes(bytes(3)))
    S4 = make_graph("s", [ts[0], w4, ts[2]], [Op("fc_0", "FULLY_CONNECTED", ("x", "w"), ("y",))],
                    ["x"], ["y"])  # fmt: skip
    validate_graph(S4)
    assert float_view(S4) is None


# -- a fused op's unfused form as an alternative view (issue 23) -----------------------------


def test_the_lstm_region_gets_an_unfused_view_and_its_plan_is_no_worse(bundled_models):
    """Fusing the LSTM (a WHILE loop) made keras__text_lstm_float32's exact plan 1.04x dearer."""
    from tacopt.fusion.ir import validate_graph
    from tacopt.fusion.tflite.reader import read_tflite
    from tacopt.partitioner.pipeline import partition
    from tacopt.partitioner.views import UNFUSED

    G = read_tflite(bundled_models["keras__text_lstm_float32.tflite"])
    for devices in ("GPU,CPU", "NNAPI,CPU", "GPU,NNAPI,CPU"):
        for granularity in ("subgraph", "op"):
            fused = partition(G, devices, granularity=granularity)
            plain = partition(G, devices, granularity=granularity, fuse=False)
            assert fused.plan.objective <= plain.plan.objective * (1 + 1e-9), devices
            lstm = [u for u, vs in fused.views.items() if any(UNFUSED in v.lowerings for v in vs)]
            assert len(lstm) == 1  # the unit holding the LSTM and its last-step slice
            kinds = {
                d["op"].kind for v in fused.views[lstm[0]] if UNFUSED in v.lowerings
                for _, d in v.graph.nodes(data=True)
            }  # fmt: skip
            assert "WHILE" in kinds and "UNIDIRECTIONAL_SEQUENCE_LSTM" not in kinds
            validate_graph(fused.graph)


def test_a_fused_conv_with_its_activation_is_no_region():
    from dataclasses import replace

    from tacopt.partitioner.views import fusion_regions

    ts = [Tensor(n, (1, 4), "float32") for n in "xyz"]
    G = make_graph("g", ts, [Op("a", "ADD", ("x", "x"), ("y",)), Op("b", "RELU", ("y",), ("z",))],
                   ["x"], ["z"])  # fmt: skip
    add = Op("a", "ADD", ("x", "x"), ("z",), {"fused_activation_function": "RELU"})
    F = make_graph("f", [ts[0], ts[2]], [replace(add, origin=(0, 1))], ["x"], ["z"])
    assert fusion_regions(F, G) == []

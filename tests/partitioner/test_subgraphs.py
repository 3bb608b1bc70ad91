"""Raising target subgraphs: TAC's README example, cycle safety, and the partition checker."""

from __future__ import annotations

import pytest

from tacopt.fusion.ir import Op, Tensor, make_graph
from tacopt.partitioner.annotate import Annotation, annotate_targets
from tacopt.partitioner.subgraphs import (
    Partition,
    Subgraph,
    extract_subgraph,
    raise_subgraphs,
    validate_partition,
)
from tacopt.partitioner.targets import PartitionError, resolve_devices


def tac_readme_graph():
    """TAC's README example::

    a  b   c  d
     \\/    \\/
    add_0  add_2
      |      |
    mul_1 (c)|
       \\    /
       pack_3
    """
    ts = [Tensor(n, (1, 4), "float32") for n in ("a", "b", "c", "d", "s", "m", "t")]
    ts.append(Tensor("p", (2, 1, 4), "float32"))
    act = {"fused_activation_function": "NONE"}
    return make_graph(
        "readme",
        ts,
        [
            Op("add_0", "ADD", ("a", "b"), ("s",), act),
            Op("mul_1", "MUL", ("s", "c"), ("m",), act),
            Op("add_2", "ADD", ("c", "d"), ("t",), act),
            Op("pack_3", "PACK", ("m", "t"), ("p",), {"axis": 0, "values_count": 2}),
        ],
        ["a", "b", "c", "d"],
        ["p"],
    )


def test_tac_readme_example_raises_gpu_and_cpu_subgraphs():
    G = tac_readme_graph()
    part = raise_subgraphs(G, annotate_targets(G, resolve_devices("GPU,CPU")))
    validate_partition(G, part)
    assert part.as_sets() == {frozenset({"add_0", "mul_1", "add_2"}), frozenset({"pack_3"})}
    assert [(s.device, s.inference_type) for s in part.subgraphs] == [
        ("GPU", "FLOAT"),
        ("CPU", "FLOAT"),
    ]


def diamond():
    """gpu_0 -> cpu_1 -> gpu_2 and gpu_0 -> gpu_2: merging gpu_0 with gpu_2 would make a cycle.

    x ─ relu_0 ─┬─ neg_1 ─┐
                └─────────┴─ add_2
    """
    ts = [Tensor(n, (4,), "float32") for n in ("x", "a", "b", "c")]
    return make_graph(
        "diamond",
        ts,
        [
            Op("relu_0", "RELU", ("x",), ("a",)),
            Op("neg_1", "NEG", ("a",), ("b",)),
            Op("add_2", "ADD", ("a", "b"), ("c",)),
        ],
        ["x"],
        ["c"],
    )


def test_merging_never_creates_a_cycle():
    G = diamond()
    ann = {
        "relu_0": Annotation("GPU", "FLOAT"),
        "neg_1": Annotation("CPU", "FLOAT"),
        "add_2": Annotation("GPU", "FLOAT"),
    }
    part = raise_subgraphs(G, ann)
    validate_partition(G, part)
    assert part.as_sets() == {frozenset({"relu_0"}), frozenset({"neg_1"}), frozenset({"add_2"})}


def test_non_adjacent_ops_of_one_label_merge():
    #   x ─ relu_0(GPU) ─ neg_1(CPU) ─ out1 ;  relu_0 ─ tanh_2(GPU): tanh_2 joins relu_0
    ts = [Tensor(n, (4,), "float32") for n in ("x", "a", "b", "c")]
    G = make_graph(
        "g",
        ts,
        [
            Op("relu_0", "RELU", ("x",), ("a",)),
            Op("neg_1", "NEG", ("a",), ("b",)),
            Op("tanh_2", "TANH", ("a",), ("c",)),
        ],
        ["x"],
        ["b", "c"],
    )
    ann = {
        "relu_0": Annotation("GPU", "FLOAT"),
        "neg_1": Annotation("CPU", "FLOAT"),
        "tanh_2": Annotation("GPU", "FLOAT"),
    }
    assert raise_subgraphs(G, ann).as_sets() == {
        frozenset({"relu_0", "tanh_2"}),
        frozenset({"neg_1"}),
    }


def test_validate_partition_catches_a_cycle_and_a_missing_op():
    G = diamond()
    bad = Partition(
        (
            Subgraph("s0", "GPU", "FLOAT", ("relu_0", "add_2")),
            Subgraph("s1", "CPU", "FLOAT", ("neg_1",)),
        )
    )
    with pytest.raises(PartitionError, match="cycle"):
        validate_partition(G, bad)
    with pytest.raises(PartitionError, match="'neg_1' is in no subgraph"):
        validate_partition(G, Partition((Subgraph("s0", "GPU", "FLOAT", ("relu_0", "add_2")),)))


def test_extract_subgraph_has_boundary_inputs_and_outputs():
    G = tac_readme_graph()
    part = raise_subgraphs(G, annotate_targets(G, resolve_devices("GPU,CPU")))
    S = extract_subgraph(G, part.subgraphs[0])
    assert S.graph["inputs"] == ("a", "b", "c", "d")
    assert S.graph["outputs"] == ("m", "t")
    assert G.number_of_nodes() == 4  # untouched


def test_zoo_model_partition_is_valid(zoo_dir):
    from tacopt.fusion.tflite.reader import read_tflite

    G = read_tflite(zoo_dir / "keras__convnext_tiny_float32.tflite")
    part = raise_subgraphs(G, annotate_targets(G, resolve_devices("NNAPI,CPU")))
    validate_partition(G, part)
    assert 1 < len(part.subgraphs) < G.number_of_nodes()

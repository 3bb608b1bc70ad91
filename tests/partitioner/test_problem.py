"""The pick-problem data model: JSON round trip, validation errors, flat index."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tacopt.benchmarks.synthetic import layered_dag_problem
from tacopt.fusion.errors import TacoptError
from tacopt.partitioner.errors import ProblemError
from tacopt.partitioner.problem import (
    Choice,
    Link,
    PickProblem,
    TensorEdge,
    Unit,
    index_problem,
    load_problem,
    save_problem,
    type_of_dtype,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "pick-problem.md"


def small_problem() -> dict:
    """x -> a -> t -> b -> y

    ``a`` runs on GPU or CPU, ``b`` on CPU only; y is a graph output.
    """
    return {
        "transfer": {"per_byte": 5.0, "fixed": 10.0},
        "quant": {"per_element": 2.0},
        "host": "CPU",
        "units": [
            {"name": "a", "initial": "CPU/FLOAT", "choices": [
                {"device": "GPU", "type": "FLOAT", "cost": 40.0},
                {"device": "CPU", "type": "FLOAT", "cost": 200.0}]},
            {"name": "b", "choices": [{"device": "CPU", "type": "FLOAT", "cost": 1.0}]},
        ],
        "tensors": [
            {"name": "x", "producer": None, "consumers": ["a"], "shape": [10], "dtype": "float32"},
            {"name": "t", "producer": "a", "consumers": ["b"], "shape": [10], "dtype": "float32"},
            {"name": "y", "producer": "b", "consumers": [], "output": True, "shape": [2],
             "dtype": "float32"},
        ],
    }  # fmt: skip


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "problem.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    problem = load_problem(write(tmp_path, small_problem()))
    assert problem.units[0].initial == 1
    assert save_problem(problem, tmp_path / "again.json") == tmp_path / "again.json"
    assert load_problem(tmp_path / "again.json") == problem
    assert PickProblem.from_dict(problem.to_dict()) == problem


def test_synthetic_problem_round_trips() -> None:
    problem = layered_dag_problem(40, seed=3)
    assert PickProblem.from_dict(problem.to_dict()) == problem


def test_links_round_trip() -> None:
    data = small_problem() | {"links": [{"from": "CPU", "to": "GPU", "per_byte": 2, "fixed": 50}]}
    problem = PickProblem.from_dict(data)
    assert problem.link("CPU", "GPU") == Link(2, 50)
    assert problem.link("GPU", "CPU") == Link(5.0, 10.0)
    assert PickProblem.from_dict(problem.to_dict()) == problem


def test_the_documented_example_loads() -> None:
    text = DOC.read_text()
    example = text.split("```json\n", 1)[1].split("```", 1)[0]
    problem = PickProblem.from_dict(json.loads(example), source=str(DOC))
    assert [u.name for u in problem.units] == ["func_0", "func_1", "func_2"]


def _set(path: list, value: object) -> dict:
    data = small_problem()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


BAD = {
    "malformed JSON": ('{"units": [', "not valid JSON"),
    "unknown consumer": (
        _set(["tensors", 1, "consumers"], ["nope"]),
        "tensor 't': unknown consumer unit 'nope'",
    ),
    "unknown producer": (
        _set(["tensors", 1, "producer"], "zz"),
        "tensor 't': unknown producer unit 'zz'",
    ),
    "no choices": (_set(["units", 1, "choices"], []), "unit 'b': no choices"),
    "NaN cost": (
        _set(["units", 0, "choices", 0, "cost"], math.nan),
        "unit 'a' choice GPU/FLOAT cost",
    ),
    "negative cost": (
        _set(["units", 0, "choices", 0, "cost"], -1.0),
        "must be finite, >= 0 and <= 1e+18",
    ),
    "duplicate unit": (_set(["units", 1, "name"], "a"), "duplicate unit name 'a'"),
    "duplicate tensor": (_set(["tensors", 1, "name"], "x"), "duplicate tensor name 'x'"),
    "unknown type": (_set(["units", 1, "choices", 0, "type"], "INT4"), "unknown inference type"),
    "bad initial": (_set(["units", 0, "initial"], "NPU/FLOAT"), "initial 'NPU/FLOAT'"),
    "unknown dtype": (_set(["tensors", 1, "dtype"], "float8"), "unknown dtype 'float8'"),
    "missing field": ({"units": [], "tensors": []}, "missing field 'transfer'"),
    "negative price": (_set(["transfer", "fixed"], -3), "transfer.fixed"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_naming_the_file(tmp_path: Path, case: str) -> None:
    data, expected = BAD[case]
    path = write(tmp_path, data)
    with pytest.raises(ProblemError) as info:
        load_problem(path)
    message = str(info.value)
    assert isinstance(info.value, TacoptError)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


def test_a_cycle_among_units_is_refused(tmp_path: Path) -> None:
    data = small_problem()
    data["tensors"].append(
        {"name": "back", "producer": "b", "consumers": ["a"], "shape": [1], "dtype": "float32"}
    )
    with pytest.raises(ProblemError, match=r"problem.json: cycle among units through unit"):
        load_problem(write(tmp_path, data))


def test_missing_file() -> None:
    with pytest.raises(ProblemError, match="cannot read"):
        load_problem("/nonexistent/problem.json")


def test_type_of_dtype() -> None:
    assert [type_of_dtype(d) for d in ("float16", "int8", "uint8", "int32")] == [
        "FLOAT", "QUANTIZED_INT8", "QUANTIZED_UINT8", "FLOAT"
    ]  # fmt: skip


def test_index_keeps_graph_inputs_only_with_boundaries() -> None:
    problem = PickProblem.from_dict(small_problem())
    assert index_problem(problem).tensor_names == ("x", "t", "y")
    inner = PickProblem.from_dict(small_problem() | {"boundaries": False})
    assert index_problem(inner).tensor_names == ("t", "y")
    assert not index_problem(inner).to_host.any()


def test_units_out_of_order_get_a_topological_order() -> None:
    c = (Choice("CPU", "FLOAT", 1.0),)
    problem = PickProblem(
        (Unit("late", c), Unit("early", c)),
        (TensorEdge("t", "early", ("late",), (1,), "float32"),),
        Link(1.0, 1.0),
        0.0,
    )
    assert index_problem(problem).order.tolist() == [1, 0]

"""The pick-problem data model: JSON round trip, validation errors, flat index."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from tacopt.errors import TacoptError
from tacopt.partitioner.errors import ProblemError
from tacopt.partitioner.problem import (
    MAX_TOTAL,
    Choice,
    Link,
    PickProblem,
    TensorEdge,
    Unit,
    index_problem,
    load_problem,
    save_problem,
    type_of_dtype,
    validate_problem,
)
from tacopt.partitioner.problem.synthetic import layered_dag_problem

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "pick-problem.md"


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
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _text(data: dict, old: str, new: str) -> str:
    """The JSON text of ``data`` with one literal replaced (for what json.dumps cannot write)."""
    text = json.dumps(data)
    assert old in text
    return text.replace(old, new, 1)


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
    # Issue 12 D: hostile files get one line too.
    "UTF-16": (json.dumps(small_problem()).encode("utf-16"), "not UTF-8 text (UTF-16"),
    "invalid UTF-8": (
        json.dumps(small_problem()).replace('"a"', '"\u00e9"').encode("latin-1"),
        "not UTF-8 text (byte 0xe9 at offset",
    ),
    "a TFLite model": (
        (ROOT / "benchmarks/models/keras__mobilenet_v2_int8.tflite").read_bytes()[:4096],
        "a TFLite model, not a pick problem",
    ),
    "1,000 nested arrays": (
        _text(small_problem(), "true", "[" * 1000 + "]" * 1000),
        "nested too deeply",
    ),
    "5,000-digit integer": (
        _text(small_problem(), "40.0", "1" + "0" * 5000),
        "unit 'a' choice GPU/FLOAT cost must be finite, >= 0 and <= 1e+18, got inf",
    ),
    "10**400 cost": (
        _text(small_problem(), "40.0", str(10**400)),
        "unit 'a' choice GPU/FLOAT cost must be",
    ),
    "10**400 shape": (
        _text(small_problem(), "[2]", f"[{10**400}]"),
        "tensor 'y': shape [inf] must be integers from 0 to 2**63 - 1",
    ),
    "2**63 bytes": (
        _set(["tensors", 1, "shape"], [2**31, 2**31]),
        "tensor 't': shape [2147483648, 2147483648] holds 2**63 bytes or more",
    ),
    "per_byte 1e308": (_set(["transfer", "per_byte"], 1e308), "transfer.per_byte must be"),
    "quant 1e308": (_set(["quant", "per_element"], 1e308), "quant.per_element must be"),
    "fixed 1e308": (_set(["transfer", "fixed"], 1e308), "transfer.fixed must be"),
    "one transfer past the limit": (
        _set(["transfer", "per_byte"], 1e17),
        "tensor 'x': one transfer of its 40 bytes may cost 4e+18 (transfer.per_byte = 1e+17)",
    ),
    "a self-link": (
        small_problem()
        | {"links": [{"from": "GPU", "to": "GPU", "per_byte": 1e308, "fixed": 1e308}]},
        "link GPU->GPU: a tensor never moves to the device it is on",
    ),
    "costs adding up past the limit": (
        _set(
            ["units"],
            [
                dict(u, choices=[c | {"cost": 6e17} for c in u["choices"]])
                for u in small_problem()["units"]
            ],
        ),
        "a plan may cost up to 1.2e+18 (compute 1.2e+18, transfer 470, quant 0), more than the"
        " 1e+18 any total may reach; scale down the units' costs",
    ),
    # Issue 11: a misspelled field or a host no unit runs on.
    "misspelled field": (small_problem() | {"tranfser": {}}, "top level: unknown field 'tranfser'"),
    "misspelled tensor field": (
        _set(["tensors", 2, "outptu"], True),
        "tensor 'y': unknown field 'outptu'",
    ),
    "misspelled choice field": (
        _set(["units", 0, "choices", 1, "cots"], 1.0),
        "unit 'a' choices[1]: unknown field 'cots'",
    ),
    "unknown host": (small_problem() | {"host": "TPU"}, "host 'TPU' is not a device of any unit"),
    "a newline in a name": (_set(["tensors", 1, "name"], "t\n"), "holds a control character"),
    "a lone surrogate": (
        _text(small_problem(), '"GPU"', '"\\ud800"'),
        "unit 'a' choices[0] device '\\ud800' holds a control character or a lone surrogate",
    ),
    "a number as a device": (_set(["units", 0, "choices", 0, "device"], 5), "must be strings"),
    "a string cost": (_set(["units", 1, "choices", 0, "cost"], "1"), "must be a number"),
    "boolean cost": (_set(["units", 1, "choices", 0, "cost"], True), "must be a number"),
    "a choice twice": (
        _set(
            ["units", 1, "choices"], [{"device": "CPU", "type": "FLOAT", "cost": c} for c in (1, 2)]
        ),
        "unit 'b' choice CPU/FLOAT: listed twice",
    ),
    "empty cost unit": (small_problem() | {"cost_unit": ""}, "cost_unit must be a non-empty"),
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


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, b"\xef\xbb\xbf" + json.dumps(small_problem()).encode())
    assert load_problem(path) == PickProblem.from_dict(small_problem())


def test_the_cost_unit_round_trips(tmp_path: Path) -> None:
    assert PickProblem.from_dict(small_problem()).cost_unit == "cost"
    problem = PickProblem.from_dict(small_problem() | {"cost_unit": "us"})
    assert problem.cost_unit == "us"
    assert load_problem(save_problem(problem, tmp_path / "p.json")) == problem


def test_totals_up_to_the_limit_are_accepted() -> None:
    data = _set(["units", 1, "choices", 0, "cost"], MAX_TOTAL / 2)
    data["units"][0]["choices"][1]["cost"] = MAX_TOTAL / 4
    assert PickProblem.from_dict(data).units[1].choices[0].cost == MAX_TOTAL / 2


def test_huge_python_numbers_are_refused_not_overflowed() -> None:
    problem = PickProblem.from_dict(small_problem())
    unit = problem.units[1]
    big = Unit(unit.name, (Choice("CPU", "FLOAT", 10**400),))
    with pytest.raises(ProblemError, match="cost must be finite"):
        validate_problem(PickProblem(problem.units[:1] + (big,), problem.tensors, *_rest(problem)))
    shape = TensorEdge("t", "a", ("b",), (10**400,), "float32")
    with pytest.raises(ProblemError, match="shape"):
        validate_problem(PickProblem(problem.units, (shape,), *_rest(problem)))


def test_numpy_integers_in_shapes_are_fine() -> None:
    problem = PickProblem.from_dict(small_problem())
    edge = TensorEdge("t", "a", ("b",), (np.int64(10), np.int32(2)), "float32")
    validate_problem(PickProblem(problem.units, (edge,), *_rest(problem)))


def _rest(problem: PickProblem) -> tuple:
    return (problem.transfer, problem.quant_per_element, problem.host, problem.boundaries)


def test_links_to_devices_without_units_are_ignored() -> None:
    """The partitioner writes a link for every pair of targets, used or not."""
    links = [{"from": "NPU", "to": "CPU", "per_byte": 1e18, "fixed": 0}]
    problem = PickProblem.from_dict(small_problem() | {"links": links})
    assert index_problem(problem).devices == ("CPU", "GPU")


def test_the_documented_memory_example_loads_and_solves_as_described() -> None:
    from tacopt.partitioner.pickers import pick

    text = DOC.read_text().split("## Memory and pairwise costs", 1)[1]
    example = text.split("```json\n", 1)[1].split("```", 1)[0]
    problem = PickProblem.from_dict(json.loads(example), source=str(DOC))
    assert problem.capacity == {"GPU": 1000} and problem.pairwise[0].cost[0][1] == 2.0
    assert PickProblem.from_dict(problem.to_dict()) == problem
    for name in ("exact", "brute"):
        plan = pick(problem, name)
        assert plan.objective == 7.0 and plan.peak_memory["GPU"] == 900.0
        assert [c.device for c in plan.assignment.values()] == ["GPU", "CPU"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"capacity": {"NPU": 5}}, "capacity of device 'NPU', which no unit runs on"),
        ({"capacity": {"GPU": -1}}, "capacity of GPU must be bytes from 0 to 2**63"),
        ({"capacity": [1]}, "'capacity' must be an object"),
        ({"pairwise": [{"a": "a", "b": "a", "cost": [[0, 1], [1, 0]]}]}, "paired with itself"),
        ({"pairwise": [{"a": "a", "b": "zz", "cost": [[0]]}]}, "unknown unit 'zz'"),
        ({"pairwise": [{"a": "a", "b": "b", "cost": [[0, 1]]}]}, "cost must be 2 x 2"),
        ({"pairwise": [{"a": "a", "b": "b", "cost": [[0, -1], [1, 0]]}]}, "cost[0][1] must be"),
        ({"pairwise": [{"a": "a", "b": "b"}]}, "must have 'a', 'b' and 'cost'"),
    ],
)
def test_bad_capacity_or_pairwise_is_one_line(change: dict, message: str) -> None:
    text = DOC.read_text().split("## Memory and pairwise costs", 1)[1]
    data = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0]) | change
    with pytest.raises(ProblemError, match=re.escape(message)):
        PickProblem.from_dict(data, source="p.json")


def test_with_capacities_units_must_come_in_execution_order() -> None:
    text = DOC.read_text().split("## Memory and pairwise costs", 1)[1]
    data = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    data["units"] = data["units"][::-1]
    with pytest.raises(ProblemError, match="execution order: unit 'b' reads tensor 't'"):
        PickProblem.from_dict(data, source="p.json")
    data["capacity"] = {}
    assert PickProblem.from_dict(data).units[0].name == "b"  # without capacities any order


@pytest.mark.parametrize("bad", [-5, "8", True, float("nan"), 2.0**63])
def test_a_bad_choice_memory_is_one_line(bad: object) -> None:
    text = DOC.read_text().split("## Memory and pairwise costs", 1)[1]
    data = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    data["units"][0]["choices"][0]["memory"] = bad
    with pytest.raises(ProblemError, match=r"p.json: unit 'a' choice GPU/FLOAT memory must be"):
        PickProblem.from_dict(data, source="p.json")

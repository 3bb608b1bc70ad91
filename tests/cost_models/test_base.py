"""The CostModel protocol, the registry and the checkers."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tacopt.cost_models.base import (
    CheckedCostModel,
    CostModel,
    CostModelError,
    LinkCost,
    check_cost,
    get_cost_model,
    register_cost_model,
    registered_cost_models,
    view_cost,
)
from tacopt.fusion.ir import Op, Tensor, make_graph

USER_MODULE = '''
from tacopt.cost_models.base import LinkCost, priced


class MyModel:
    """A user's model: every op costs its output elements; DIV unsupported; SUB returns {bad}."""

    name = "mine"
    unit = "us"

    def op_cost(self, G, node, device, inference_type):
        op = G.nodes[node]["op"]
        if op.kind == "DIV":
            return None
        if op.kind == "SUB":
            return {bad}
        return float(G.graph["tensors"][op.outputs[0]].num_elements)

    def op_costs(self, G, nodes, device, inference_type):
        costs = [self.op_cost(G, n, device, inference_type) for n in nodes]
        return priced([0.0 if c is None else c for c in costs], [c is None for c in costs])

    def link_cost(self, src_device, dst_device):
        return LinkCost(1.0, 0.0)

    def conversion_cost_per_element(self, src_type, dst_type):
        return 0.5


INSTANCE = MyModel()
'''


def chain() -> object:
    #  x -> [ADD] -> a -> [DIV] -> b -> [SUB] -> y
    ts = [Tensor(n, (2, 3), "float32") for n in ("x", "a", "b", "y")]
    ops = [
        Op("add_0", "ADD", ("x", "x"), ("a",)),
        Op("div_1", "DIV", ("a", "x"), ("b",)),
        Op("sub_2", "SUB", ("b", "x"), ("y",)),
    ]
    return make_graph("g", ts, ops, ["x"], ["y"])


@pytest.fixture
def user_module(tmp_path: Path, request: pytest.FixtureRequest):
    def write(name: str, bad: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(USER_MODULE.format(bad=bad)))
        return name

    sys.path.insert(0, str(tmp_path))
    yield write
    sys.path.remove(str(tmp_path))


def test_user_model_plugs_in_by_module_spec(user_module) -> None:
    mod = user_module("tacopt_user_ok", "1.0")
    G = chain()
    for spec in (f"{mod}:MyModel", f"{mod}:INSTANCE"):
        model = get_cost_model(spec)
        assert isinstance(model, CostModel)
        assert (model.name, model.unit) == ("mine", "us")
        assert model.op_cost(G, "add_0", "X", "FLOAT") == 6.0
        assert model.op_cost(G, "div_1", "X", "FLOAT") is None
        costs = model.op_costs(G, ["add_0", "div_1"], "X", "FLOAT")
        assert costs.tolist() == [6.0, None]  # None: explicitly cannot price
        assert view_cost(model, G, ["add_0", "sub_2"], "X", "FLOAT") == 7.0
        assert view_cost(model, G, ["add_0", "div_1"], "X", "FLOAT") is None


@pytest.mark.parametrize("bad", ["float('nan')", "-1.0", "float('inf')"])
def test_bad_user_costs_raise_naming_op_and_model(user_module, bad: str) -> None:
    mod = user_module(f"tacopt_user_bad_{abs(hash(bad))}", bad)
    model = get_cost_model(f"{mod}:MyModel")
    with pytest.raises(CostModelError, match=r"cost model 'mine' returned .* op 'sub_2' on GPU"):
        model.op_cost(chain(), "sub_2", "GPU", "FLOAT")
    with pytest.raises(CostModelError, match="op 'sub_2'"):
        model.op_costs(chain(), ["add_0", "sub_2"], "GPU", "FLOAT")
    with pytest.raises(CostModelError, match=r"cost model 'mine' returned .* op 'sub_2' on GPU"):
        view_cost(model, chain(), ["add_0", "sub_2"], "GPU", "FLOAT")


def test_nan_from_a_plain_array_is_an_error_not_unsupported() -> None:
    class Plain:
        name, unit = "plain", "us"

        def op_costs(self, G, nodes, device, inference_type):
            return np.array([1.0, np.nan])

    with pytest.raises(CostModelError, match="returned nan for op 'div_1' on GPU .*never NaN"):
        view_cost(Plain(), chain(), ["add_0", "div_1"], "GPU", "FLOAT")  # type: ignore[arg-type]


def test_bad_specs() -> None:
    with pytest.raises(CostModelError, match=r"unknown cost model 'nope' \(known: .*tac"):
        get_cost_model("nope")
    with pytest.raises(CostModelError, match="cannot import 'no_such_module_xyz'"):
        get_cost_model("no_such_module_xyz:Model")
    with pytest.raises(CostModelError, match="'tacopt.cost_models.base' has no 'Nope'"):
        get_cost_model("tacopt.cost_models.base:Nope")
    with pytest.raises(CostModelError, match="is not a CostModel"):
        get_cost_model("tacopt.cost_models.base:INFERENCE_TYPES")
    with pytest.raises(CostModelError, match=r"cannot call 'LinkCost\(\)'"):
        get_cost_model("tacopt.cost_models.base:LinkCost")


def test_model_files(tmp_path: Path) -> None:
    with pytest.raises(CostModelError, match="does not exist"):
        get_cost_model(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CostModelError, match="not valid JSON"):
        get_cost_model(str(bad))
    other = tmp_path / "other.json"
    other.write_text('{"format": "something-else"}')
    with pytest.raises(CostModelError, match="unknown format 'something-else'"):
        get_cost_model(str(other))


def test_registry_rejects_duplicates_and_lists_builtins() -> None:
    assert {"tac"} <= set(registered_cost_models())
    with pytest.raises(CostModelError, match="already registered"):
        register_cost_model("tac", lambda: None)


def test_checked_wrapper_and_checkers() -> None:
    model = get_cost_model("tac")
    assert isinstance(model, CheckedCostModel)
    assert get_cost_model(model) is model
    assert check_cost(None, model="m", op="o", device="CPU") is None
    with pytest.raises(CostModelError, match="returned -2.0 for op 'o' on CPU"):
        check_cost(-2, model="m", op="o", device="CPU")
    with pytest.raises(CostModelError, match="not a number"):
        check_cost("x", model="m", op="o", device="CPU")
    assert LinkCost(2.0, 3.0).cost(10, crossings=2) == 26.0

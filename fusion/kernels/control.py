"""Control flow and resource variables: WHILE, IF, CALL_ONCE, VAR_HANDLE, READ/ASSIGN_VARIABLE.

These kernels are ``raw``: loop-carried values travel as stored, quantized or not.
"""

from __future__ import annotations

import numpy as np

from tacopt.fusion.kernels.common import OpCall, kernel_table

KERNELS, kernel = kernel_table()


def _subgraph(call: OpCall, key: str) -> str:
    name = call.option(key)
    if not isinstance(name, str):
        raise call.fail(f"option '{key}' names no subgraph")
    return name


@kernel("WHILE", raw=True)
def _while(call: OpCall) -> list[np.ndarray]:
    cond, body = _subgraph(call, "cond_subgraph"), _subgraph(call, "body_subgraph")
    values = [call.input(i) for i in range(len(call.inputs))]
    while bool(np.asarray(call.call_graph(cond, values)[0]).reshape(-1)[0]):
        values = call.call_graph(body, values)
    return values


@kernel("IF", raw=True)
def _if(call: OpCall) -> list[np.ndarray]:
    flag = bool(np.asarray(call.input(0)).reshape(-1)[0])
    branch = _subgraph(call, "then_subgraph" if flag else "else_subgraph")
    return call.call_graph(branch, [call.input(i) for i in range(1, len(call.inputs))])


@kernel("CALL_ONCE", raw=True)
def _call_once(call: OpCall) -> list[np.ndarray]:
    name = _subgraph(call, "init_subgraph")
    done = call.state.setdefault("called_once", set())
    if name not in done:
        done.add(name)
        call.call_graph(name, [])
    return []


def _handle(call: OpCall) -> str:
    return str(np.asarray(call.input(0)).reshape(-1)[0])


@kernel("VAR_HANDLE", raw=True)
def _var_handle(call: OpCall) -> np.ndarray:
    key = f"{call.option('container', '') or ''}/{call.option('shared_name', '') or ''}"
    return np.array([key], dtype=object)


@kernel("ASSIGN_VARIABLE", raw=True)
def _assign_variable(call: OpCall) -> list[np.ndarray]:
    call.state.setdefault("variables", {})[_handle(call)] = np.array(call.input(1))
    return []


@kernel("READ_VARIABLE", raw=True)
def _read_variable(call: OpCall) -> np.ndarray:
    variables = call.state.get("variables", {})
    key = _handle(call)
    if key not in variables:
        raise call.fail(f"variable '{key}' read before it was assigned")
    return variables[key]


@kernel("CALL", raw=True)
def _call(call: OpCall) -> list[np.ndarray]:
    return call.call_graph(_subgraph(call, "subgraph"), _all_inputs(call))


@kernel("STABLEHLO_COMPOSITE", raw=True)
def _composite(call: OpCall) -> list[np.ndarray]:
    # A composite kept as one node runs its decomposition.
    return call.call_graph(_subgraph(call, "decomposition_subgraph"), _all_inputs(call))


def _all_inputs(call: OpCall) -> list[np.ndarray]:
    return [call.input(i) for i in range(len(call.inputs))]

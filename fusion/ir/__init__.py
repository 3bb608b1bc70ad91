"""The graph IR every tacopt pass reads and writes.

A model is a :class:`networkx.MultiDiGraph` ``G``:

- a **node** is an op name (``str``) with attribute ``op``: a frozen :class:`Op`;
- an **edge** ``u -> v`` (key = tensor name, attribute ``tensor``: a frozen :class:`Tensor`) exists
  for every activation tensor that ``u`` produces and ``v`` consumes, one edge per consumer;
- ``G.graph`` holds ``name``, ``tensors`` (name -> :class:`Tensor`, every tensor of the graph,
  constants included), ``inputs`` and ``outputs`` (tuples of tensor names), and on the main graph
  ``model`` (a :class:`ModelInfo`) and ``subgraphs`` (name -> nested graph, the bodies of WHILE /
  IF / CALL_ONCE ops, which reference them by name in their options and are never inlined).

Node insertion order is a valid execution order. :func:`validate_graph` is the one checker of
these invariants; every pass calls it on its output in the tests.

This module gathers the IR under one import path: the records (:mod:`tacopt.fusion.ir.records`),
graph building and queries (:mod:`tacopt.fusion.ir.graph`) and the checker
(:mod:`tacopt.fusion.ir.validate`). The names load on first access, as ``import tacopt``'s do:
importing a light sub-module such as :mod:`tacopt.fusion.ir.vocabulary` then imports neither
numpy nor networkx. Errors, file I/O, option types and registries are not IR: they are the
ground floor every stage shares (:mod:`tacopt.errors`, :mod:`tacopt.io`,
:mod:`tacopt.cli_options`, :mod:`tacopt.registry`).

Examples
--------
>>> from tacopt.fusion.ir import Op, Tensor, make_graph, validate_graph
>>> G = make_graph(
...     "g",
...     tensors=[Tensor("x", (1, 4), "float32"), Tensor("y", (1, 4), "float32"),
...              Tensor("z", (1, 4), "float32")],
...     ops=[Op("relu_0", "RELU", ("x",), ("y",)), Op("neg_1", "NEG", ("y",), ("z",))],
...     inputs=("x",), outputs=("z",))
>>> validate_graph(G)
>>> list(G.edges(keys=True))
[('relu_0', 'neg_1', 'y')]
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names are, for type checkers (at run time they load on first use)
    from tacopt.fusion.ir.graph import (  # noqa: F401
        add_op,
        all_graphs,
        consumers,
        ir_diff,
        make_graph,
        op_of,
        ops_of,
        producers,
    )
    from tacopt.fusion.ir.records import (  # noqa: F401
        DTYPE_NBYTES,
        DTYPE_TO_TFLITE,
        FLOAT_DTYPES,
        TFLITE_DTYPES,
        Buffer,
        Composite,
        ModelInfo,
        Op,
        Quantization,
        SignatureDef,
        Tensor,
        numpy_dtype,
    )
    from tacopt.fusion.ir.validate import (  # noqa: F401
        MAX_TENSOR_BYTES,
        tensor_problem,
        validate_graph,
    )

# name -> the sub-module that defines it
_NAMES: dict[str, str] = {
    **dict.fromkeys(
        ("add_op", "all_graphs", "consumers", "ir_diff", "make_graph", "op_of", "ops_of",
         "producers"), "graph"),
    **dict.fromkeys(
        ("DTYPE_NBYTES", "DTYPE_TO_TFLITE", "FLOAT_DTYPES", "TFLITE_DTYPES", "Buffer",
         "Composite", "ModelInfo", "Op", "Quantization", "SignatureDef", "Tensor", "numpy_dtype"),
        "records"),
    **dict.fromkeys(("MAX_TENSOR_BYTES", "tensor_problem", "validate_graph"), "validate"),
}  # fmt: skip

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

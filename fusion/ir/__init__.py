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
(:mod:`tacopt.fusion.ir.validate`).

Examples
--------
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

from tacopt.fusion.ir.graph import (
    add_op,
    all_graphs,
    consumers,
    ir_diff,
    make_graph,
    op_of,
    ops_of,
    producers,
)
from tacopt.fusion.ir.records import (
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
from tacopt.fusion.ir.validate import MAX_TENSOR_BYTES, tensor_problem, validate_graph

__all__ = [
    "DTYPE_NBYTES",
    "DTYPE_TO_TFLITE",
    "FLOAT_DTYPES",
    "MAX_TENSOR_BYTES",
    "TFLITE_DTYPES",
    "Buffer",
    "Composite",
    "ModelInfo",
    "Op",
    "Quantization",
    "SignatureDef",
    "Tensor",
    "add_op",
    "all_graphs",
    "consumers",
    "ir_diff",
    "make_graph",
    "numpy_dtype",
    "op_of",
    "ops_of",
    "producers",
    "tensor_problem",
    "validate_graph",
]

"""Custom ops priced by rules: a stand-in graph of builtin ops doing the op's work, or a table.

A custom op (``CUSTOM:<code>``) is code of its framework's: MediaPipe's landmark and
segmentation models hold ``Convolution2DTransposeBias`` (which the XNNPACK delegate runs),
``TransformLandmarks``, ``Landmarks2TransformMatrix`` and ``TransformTensorBilinear`` (which
plain LiteRT cannot resolve). The partitioner still has to place them, so each is priced by a
rule registered for its code (:data:`CUSTOM_OP_RULES`):

- a *stand-in*: a function of the op's features (operand shapes and types, as
  :func:`~tacopt.cost_models.learned.measurement.singleop.op_features` gives them) returning a
  graph of builtin ops of the same work (``Convolution2DTransposeBias`` is a TRANSPOSE_CONV with
  its bias; a landmark transform is element-wise or gather work sized by its tensors; a bilinear
  warp is a bilinear resize to the output's plane). ``tacopt measure`` times the stand-in when
  the runtime cannot run the op itself, and the op's record says so (``priced_by``); a learned
  model that never measured the kind prices the stand-in's ops (source ``rule <code>``);
- a *table* (:class:`MeasuredTable`): latencies a user measured on the device, by op
  configuration key.

A user registers a rule from their own module: ``register_custom_op("MyOp", my_stand_in)`` or
``register_custom_op("MyOp", MeasuredTable({key: latency_us}))``.

>>> from tacopt.fusion.ir.builder import GraphBuilder
>>> feats = {"kind": "CUSTOM:TransformTensorBilinear", "inference_type": "FLOAT",
...          "inputs": [[[1, 64, 64, 8], "float32", False, False],
...                     [[1, 4, 4], "float32", False, False]],
...          "outputs": [[[1, 32, 32, 8], "float32", False, False]]}
>>> name, S = stand_in(feats)
>>> name, [S.nodes[n]["op"].kind for n in S]
('TransformTensorBilinear: RESIZE_BILINEAR to the output plane', ['RESIZE_BILINEAR'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.measurement.singleop import fill_constants
from tacopt.errors import TacoptError
from tacopt.fusion.ir.builder import GraphBuilder
from tacopt.fusion.tflite.writer import serialize_tflite
from tacopt.registry import Registry


class CustomOpError(TacoptError):
    """A custom-op rule that is unknown, registered twice, or cannot price an op."""


#: What a stand-in rule is: the op's features -> a graph of builtin ops doing its work, or None
#: when the rule does not cover this configuration.
StandIn = Callable[[Mapping[str, Any]], "nx.MultiDiGraph | None"]


@dataclass(frozen=True, slots=True)
class MeasuredTable:
    """A custom op's latencies (us, invoke overhead included, as a single-op record's
    ``latency_us``) measured by the user, by op configuration key
    (:func:`~tacopt.cost_models.learned.measurement.singleop.op_key`)."""

    latency_us: Mapping[str, float] = field(default_factory=dict)

    def lookup(self, key: str | None) -> float | None:
        return None if key is None else self.latency_us.get(key)


@dataclass(frozen=True, slots=True)
class CustomOpRule:
    """A registered rule: its ``description`` (what the record and the prediction name), and a
    ``stand_in`` function or a ``table``."""

    description: str
    stand_in: StandIn | None = None
    table: MeasuredTable | None = None


#: Custom-op rules by custom code (the part after ``CUSTOM:``).
CUSTOM_OP_RULES: Registry[CustomOpRule] = Registry("custom-op rule", CustomOpError)


def register_custom_op(
    code: str,
    rule: StandIn | MeasuredTable,
    *,
    description: str | None = None,
    replace: bool = False,
) -> CustomOpRule:
    """Register how the custom op ``code`` is priced: a stand-in function or a measured table.

    Parameters
    ----------
    code : str
        The custom code (``"Convolution2DTransposeBias"``), without ``CUSTOM:``.
    rule : callable or MeasuredTable
        ``features -> graph of builtin ops`` (None where it does not apply), or latencies by
        op key.
    description : str, optional
        What records and predictions name (default: the code and the rule's kind).
    replace : bool
        Replace a rule already registered for ``code`` (else that raises).

    >>> r = register_custom_op("DemoOp", MeasuredTable({"abc": 12.5}), replace=True)
    >>> r.description, r.table.lookup("abc")
    ('DemoOp: measured table', 12.5)
    >>> CUSTOM_OP_RULES.remove("DemoOp")
    """
    if isinstance(rule, MeasuredTable):
        entry = CustomOpRule(description or f"{code}: measured table", table=rule)
    elif callable(rule):
        entry = CustomOpRule(description or f"{code}: stand-in", stand_in=rule)
    else:
        raise CustomOpError(f"custom-op rule for '{code}': give a function or a MeasuredTable")
    return CUSTOM_OP_RULES.add(code, entry, replace=replace)


def custom_rule(kind: str) -> CustomOpRule | None:
    """The rule registered for op kind ``kind`` (``CUSTOM:<code>``), or None."""
    if not kind.startswith("CUSTOM:"):
        return None
    return CUSTOM_OP_RULES.find(kind[len("CUSTOM:") :])


def stand_in(features: Mapping[str, Any]) -> tuple[str, nx.MultiDiGraph] | None:
    """``(rule description, stand-in graph)`` for a custom op's features, or None when no
    stand-in rule covers it (no rule, a table rule, or the rule declines the shapes)."""
    rule = custom_rule(str(features.get("kind", "")))
    if rule is None or rule.stand_in is None:
        return None
    try:
        G = rule.stand_in(features)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise CustomOpError(
            f"custom-op rule '{rule.description}' cannot price {features.get('kind')} of "
            f"inputs {_shapes(features['inputs'])}: {exc}"
        ) from None
    return None if G is None else (rule.description, G)


def _shapes(descs: Sequence[Any]) -> list[tuple[int, ...] | None]:
    return [None if d is None else tuple(int(v) for v in d[0]) for d in descs]


def _dtype(features: Mapping[str, Any]) -> str:
    return "int8" if features.get("inference_type") == "QUANTIZED_INT8" else "float32"


# ---- MediaPipe's custom ops ----------------------------------------------------------------


def _conv_transpose_bias(features: Mapping[str, Any]) -> nx.MultiDiGraph | None:
    """MediaPipe's ``Convolution2DTransposeBias``: a TRANSPOSE_CONV of the input by the
    ``(O, H, W, I)`` weights plus the bias; stride and padding read off the shapes (SAME when
    the output is the input times the stride)."""
    x, w, *_ = _shapes(features["inputs"])
    (y,) = _shapes(features["outputs"])[:1]
    if x is None or w is None or y is None or len(x) != 4 or len(w) != 4:
        return None
    stride = max(y[1] // max(x[1], 1), 1)
    stride_w = max(y[2] // max(x[2], 1), 1)
    pad = "SAME" if (y[1], y[2]) == (x[1] * stride, x[2] * stride_w) else "VALID"
    b = GraphBuilder("conv2d_transpose_bias")
    rng = np.random.default_rng(0)
    out = b.op(
        "TRANSPOSE_CONV",
        np.array(y, np.int32),
        rng.normal(0, 0.1, w).astype(np.float32),
        b.input("x", x),
        np.zeros(w[0], np.float32),
        padding=pad,
        stride_h=stride,
        stride_w=stride_w,
        shape=y,
        dtype="float32",
    )
    return b.build(outputs=[out])


def _elementwise_on_output(features: Mapping[str, Any]) -> nx.MultiDiGraph | None:
    """A landmark transform (``TransformLandmarks``): every output coordinate is a small affine
    map of an input one: a MUL and an ADD over the output's elements."""
    (y,) = _shapes(features["outputs"])[:1]
    if y is None:
        return None
    b = GraphBuilder("landmark_transform")
    x = b.input("x", y, _dtype(features))
    scaled = b.op("MUL", x, b.input("s", (y[-1],), _dtype(features)), shape=y)
    return b.build(outputs=[b.op("ADD", scaled, b.input("t", (y[-1],), _dtype(features)),
                                 shape=y)])  # fmt: skip


def _landmarks_to_matrix(features: Mapping[str, Any]) -> nx.MultiDiGraph | None:
    """``Landmarks2TransformMatrix``: reads a few landmarks and builds a 4 x 4 matrix: a
    GATHER of two landmarks and element-wise work on them."""
    (x,) = _shapes(features["inputs"])[:1]
    if x is None or len(x) < 2:
        return None
    axis = len(x) - 2  # the landmark axis, before the coordinates
    b = GraphBuilder("landmarks_to_matrix")
    g_shape = (*x[:axis], 2, x[-1])
    g = b.op("GATHER", b.input("x", x), np.array([0, 1], np.int32), axis=axis, shape=g_shape)
    return b.build(outputs=[b.op("MUL", g, g, shape=g_shape)])


def _bilinear_warp(features: Mapping[str, Any]) -> nx.MultiDiGraph | None:
    """``TransformTensorBilinear``: samples the input bilinearly at the output's pixels: a
    RESIZE_BILINEAR of the input to the output's plane."""
    (x,) = _shapes(features["inputs"])[:1]
    (y,) = _shapes(features["outputs"])[:1]
    if x is None or y is None or len(x) != 4 or len(y) != 4:
        return None
    b = GraphBuilder("bilinear_warp")
    out = b.op(
        "RESIZE_BILINEAR",
        b.input("x", x),
        np.array([y[1], y[2]], np.int32),
        shape=(x[0], y[1], y[2], x[3]),
    )
    return b.build(outputs=[out])


register_custom_op(
    "Convolution2DTransposeBias",
    _conv_transpose_bias,
    description="Convolution2DTransposeBias: TRANSPOSE_CONV + bias",
)
register_custom_op(
    "TransformLandmarks",
    _elementwise_on_output,
    description="TransformLandmarks: MUL + ADD over the landmarks",
)
register_custom_op(
    "Landmarks2TransformMatrix",
    _landmarks_to_matrix,
    description="Landmarks2TransformMatrix: GATHER of two landmarks + MUL",
)
register_custom_op(
    "TransformTensorBilinear",
    _bilinear_warp,
    description="TransformTensorBilinear: RESIZE_BILINEAR to the output plane",
)


def stand_in_model(features: Mapping[str, Any], *, seed: int) -> tuple[str, bytes] | None:
    """``(rule description, .tflite bytes)`` of the stand-in of a custom op the runtime cannot
    run, its constants filled (seeded), or None when no stand-in rule covers it."""
    found = stand_in(features)
    if found is None:
        return None
    description, G = found
    return description, serialize_tflite(fill_constants(G, seed=seed))

"""Builders of TFLite's fused LSTM ops, shared by the LSTM fusions.

:mod:`tacopt.fusion.rnn.lstm` (Keras-3 loops), :mod:`tacopt.fusion.rnn.unrolled` (unrolled steps)
and :mod:`tacopt.fusion.rnn.composites` (RNN interfaces) all propose an UNIDIRECTIONAL_SEQUENCE_LSTM
the same way: per-gate weight and bias constants in TFLite's input, forget, cell, output order,
state variables (copied in when the initial state is not zero), and a slice for the last step.
"""

from __future__ import annotations

import numpy as np

from tacopt.fusion.ir import Op, Tensor
from tacopt.fusion.rules.base import Editor, op_name

GATES = ("i", "f", "g", "o")  # TFLite's order: input, forget, cell, output


def zero_or_dropped(ed: Editor, t: str) -> bool:
    """Whether ``t`` is a constant of zeros, or one whose values were dropped (Keras' zeros)."""
    rec = ed.tensor(t)
    if not rec.is_constant:
        return False
    v = ed.value(t)
    return v is None or not np.any(v)


#: Options of the fused ops: Keras' activation, no clipping.
LSTM_OPTIONS = {
    "fused_activation_function": "TANH",
    "cell_clip": 0.0,
    "proj_clip": 0.0,
    "time_major": True,
    "asymmetric_quantize_inputs": False,
    "diagonal_recurrent_tensors": False,
}


def state_input(
    ed: Editor, anchor: Op, role: str, init: str | None, shape: tuple[int, ...]
) -> tuple[str, list[Op], list[Tensor]]:
    """The variable tensor that a fused LSTM op takes as state ``role`` (``output_state`` or
    ``cell_state``), and the ops and tensors that set it.

    ``init`` None, a zero constant or a dropped one: a bare variable tensor (zero when the model is
    loaded). Anything else is copied into a fresh variable by ``ADD(init, 0)``: LiteRT's kernels
    take states only from variable tensors, which may not hold a constant buffer.
    """
    var = Tensor(ed.fresh(f"{anchor.name}/{role}"), shape, "float32", is_variable=True)
    if init is None or zero_or_dropped(ed, init):
        return var.name, [], [var]
    zero = ed.const(f"{anchor.name}/{role}_zero", np.zeros((), np.float32), (), "float32")
    copy = Op(
        op_name(ed, f"ADD_{role}", anchor),
        "ADD",
        (init, zero.name),
        (var.name,),
        {"fused_activation_function": "NONE"},
    )
    return var.name, [copy], [var, zero]


def split_gates(
    ed: Editor, anchor: Op, base: str, value: np.ndarray | None, shape: tuple[int, ...], order
) -> list[Tensor]:
    """Per-gate constants (TFLite's i, f, c, o) of a gate-stacked ``(4H, ...)`` weight or bias.

    ``order[k]`` is the block of gate ``GATES[k]`` in the stacked tensor; a dropped ``value``
    gives dropped blocks of the right size.
    """
    units = shape[0] // 4
    out = []
    for gate, k in zip(GATES, order):
        block = None if value is None else value[k * units : (k + 1) * units]
        out.append(ed.const(f"{anchor.name}/{base}_{gate}", block, (units, *shape[1:]), "float32"))
    return out


def unidirectional_lstm(
    ed: Editor,
    anchor: Op,
    x: str,
    weights: tuple[list[Tensor], list[Tensor], list[Tensor]],
    states: tuple[str, str],
    out: str,
    **options,
) -> Op:
    """An UNIDIRECTIONAL_SEQUENCE_LSTM op (no peepholes, projection or layer norm)."""
    w_in, w_rec, bias = weights
    inputs = (
        x,
        *(t.name for t in w_in),
        *(t.name for t in w_rec),
        None,
        None,
        None,
        *(t.name for t in bias),
        None,
        None,
        *states,
        None,
        None,
        None,
        None,
    )
    kind = "UNIDIRECTIONAL_SEQUENCE_LSTM"
    return Op(op_name(ed, kind, anchor), kind, inputs, (out,), {**LSTM_OPTIONS, **options})


def slice_step(
    ed: Editor, anchor: Op, seq: str, shape: tuple[int, ...], step: int, axis: int, out: str
) -> tuple[Op, list[Tensor]]:
    """STRIDED_SLICE keeping step ``step`` of ``seq`` (``shape``) along ``axis`` (kept, size 1)."""
    begin = np.zeros(len(shape), np.int32)
    begin[axis] = step
    end = np.array(shape, np.int32)
    end[axis] = step + 1
    n = len(shape)
    consts = [
        ed.const(f"{anchor.name}/step_begin", begin, (n,), "int32"),
        ed.const(f"{anchor.name}/step_end", end, (n,), "int32"),
        ed.const(f"{anchor.name}/step_strides", np.ones(n, np.int32), (n,), "int32"),
    ]
    op = Op(
        op_name(ed, "STRIDED_SLICE", anchor),
        "STRIDED_SLICE",
        (seq, *(t.name for t in consts)),
        (out,),
        {
            "begin_mask": 0,
            "end_mask": 0,
            "ellipsis_mask": 0,
            "new_axis_mask": 0,
            "shrink_axis_mask": 0,
            "offset": False,
        },
    )
    return op, consts

"""RNN interfaces as composites: the fusions TFLite's RNN conversion guide registers.

A composite (a :class:`~tacopt.fusion.ir.builder.GraphBuilder` region or a STABLEHLO_COMPOSITE op)
declares that its ops implement a named interface; these fusions check the interface's argument
contract and replace the region by TFLite's fused LSTM op. The arguments are the composite's
inputs in order (a STABLEHLO_COMPOSITE op's operands; a region's inputs in first-use order),
leaving out integer tensors and one-element constants, which are the region's own shape, axis
and epsilon operands. Weights must be constants (their values may be dropped).

``keras_lstm`` -- Keras' LSTM layer (TF's ``lstm_<uuid>`` API interface), over a whole sequence:

    arguments   x (B, T, I) (``time_major``: (T, B, I)), h0 (B, H), c0 (B, H), kernel (I, 4H),
                recurrent_kernel (H, 4H), bias (4H, optional); gates i, f, c, o in Keras' order
    attributes  time_major = False, go_backwards = False
    output      one read outside: the sequence (as x, with H features; in processing order when
                ``go_backwards``) or the last output (B, H)
    fused       [REVERSE_V2] UNIDIRECTIONAL_SEQUENCE_LSTM [STRIDED_SLICE, RESHAPE]; states that
                are not zero are copied into the op's state variables (:func:`~tacopt.fusion.
                lstm.state_input`)

``LSTMCellSimple`` / ``LayerNormalizedLstmCellSimple`` (TF's spelling; lingvo's class,
``LayerNormalizedLSTMCellSimple``, is registered too) -- lingvo's cells, one step from zero
states, as TFLite's converter reads them:

    arguments   x (B, I), weight (I + O, G*N), bias (G*N), projection (N, O, optional),
                layer-norm scale (G*N, the layer-normalized cell only); G = 4 gates in lingvo's
                c, i, f, o order, or 3 (c, f, o) with ``couple_input_forget_gates``
    attributes  couple_input_forget_gates = False, cell_clip = 10.0 (TFLite's conversion), proj_clip
    output      one read outside: the new output (B, O) (O = N without projection)
    fused       LSTM (kernel FULL): weight and projection transposed, each gate's rows sliced out
                of the transposed weight, bias and layer-norm scale, zero states

A composite that does not fit is left as it is, with the reason in ``fuse``'s warnings.
"""

from __future__ import annotations

import numpy as np

from tacopt.fusion.ir import Composite, Op, Tensor
from tacopt.fusion.rnn.lstm_ops import slice_step, split_gates, state_input, unidirectional_lstm
from tacopt.fusion.rules.base import Editor, Rewrite, op_name
from tacopt.fusion.rules.composites import register_fusion

#: Lingvo's gate blocks, in the columns of its weight: cell, input, forget, output.
LINGVO_GATES = ("c", "i", "f", "o")


def arguments(ed: Editor, c: Composite) -> list[str]:
    """The interface's arguments: the composite's inputs that are not integer tensors or
    one-element constants."""
    out = []
    for t in c.inputs:
        rec = ed.tensor(t)
        if rec.dtype.startswith(("int", "uint", "bool")) or not rec.shape:
            continue
        if rec.is_constant and rec.num_elements == 1:
            continue
        out.append(t)
    return out


def _float_problem(ed: Editor, names: dict[str, str], consts: tuple[str, ...]) -> str | None:
    for role, t in names.items():
        rec = ed.tensor(t)
        if rec.dtype != "float32" or rec.is_quantized:
            return f"{role} '{t}' is {rec.dtype}{' quantized' if rec.is_quantized else ''}"
        if role in consts and not rec.is_constant:
            return f"{role} '{t}' is not a constant"
    return None


def _shape_problem(ed: Editor, t: str, role: str, want: tuple[int, ...]) -> str | None:
    got = ed.tensor(t).shape
    return None if got == want else f"{role} '{t}' has shape {got}, expected {want}"


def _first(*problems: str | None) -> str | None:
    return next((p for p in problems if p), None)


# --------------------------------------------------------------------------------------------
# keras_lstm
# --------------------------------------------------------------------------------------------


def _keras_roles(ed: Editor, c: Composite) -> dict[str, str] | str:
    args = arguments(ed, c)
    if len(args) == 7:
        return "a mask argument: UNIDIRECTIONAL_SEQUENCE_LSTM takes no mask"
    if len(args) not in (5, 6):
        want = "x, h0, c0, kernel, recurrent_kernel[, bias]"
        return f"expected the arguments ({want}), got {len(args)}"
    return dict(zip(("x", "h0", "c0", "kernel", "recurrent_kernel", "bias"), args))


def verify_keras_lstm(ed: Editor, c: Composite) -> str | None:
    """Why a ``keras_lstm`` composite does not fit its interface (None when it does)."""
    roles = _keras_roles(ed, c)
    if isinstance(roles, str):
        return roles
    problem = _float_problem(ed, roles, ("kernel", "recurrent_kernel", "bias"))
    if problem:
        return problem
    x = ed.tensor(roles["x"]).shape
    k = ed.tensor(roles["kernel"]).shape
    if len(x) != 3 or len(k) != 2 or k[1] % 4:
        return f"x has shape {x} and kernel {k}; expected rank 3 and (I, 4H)"
    time_major = bool(c.attrs.get("time_major", False))
    steps, batch = (x[0], x[1]) if time_major else (x[1], x[0])
    units = k[1] // 4
    problem = _first(
        _shape_problem(ed, roles["kernel"], "kernel", (x[2], 4 * units)),
        _shape_problem(ed, roles["recurrent_kernel"], "recurrent_kernel", (units, 4 * units)),
        _shape_problem(ed, roles["h0"], "h0", (batch, units)),
        _shape_problem(ed, roles["c0"], "c0", (batch, units)),
        _shape_problem(ed, roles["bias"], "bias", (4 * units,)) if "bias" in roles else None,
    )
    if problem:
        return problem
    if len(c.outputs) != 1:
        return (
            f"{len(c.outputs)} outputs are read outside; only the sequence or the last output "
            "may be (the fused op returns neither state)"
        )
    out = ed.tensor(c.outputs[0]).shape
    seq = (steps, batch, units) if time_major else (batch, steps, units)
    if out not in (seq, (batch, units)):
        return f"output has shape {out}, expected the sequence {seq} or the last output"
    return None


def rewrite_keras_lstm(ed: Editor, c: Composite) -> Rewrite:
    """[REVERSE_V2] UNIDIRECTIONAL_SEQUENCE_LSTM [STRIDED_SLICE, RESHAPE] for ``keras_lstm``."""
    roles = _keras_roles(ed, c)
    assert isinstance(roles, dict)
    anchor = ed.ops[c.ops[-1]]
    time_major = bool(c.attrs.get("time_major", False))
    x = roles["x"]
    shape = ed.tensor(x).shape
    steps, batch = (shape[0], shape[1]) if time_major else (shape[1], shape[0])
    axis = 0 if time_major else 1
    kernel = ed.tensor(roles["kernel"])
    units = kernel.shape[1] // 4
    order = [0, 1, 2, 3]  # Keras stacks i, f, c, o: TFLite's order

    def stacked(role: str) -> np.ndarray | None:
        v = ed.value(roles[role])
        return None if v is None else np.ascontiguousarray(v.T)  # (4H, in)

    w_in = split_gates(ed, anchor, "input_weights", stacked("kernel"), (4 * units, shape[2]), order)
    w_rec = split_gates(
        ed, anchor, "recurrent_weights", stacked("recurrent_kernel"), (4 * units, units), order
    )
    bias = ed.value(roles["bias"]) if "bias" in roles else np.zeros(4 * units, np.float32)
    b_gate = split_gates(ed, anchor, "bias", bias, (4 * units,), order)
    new_ops: list[Op] = []
    tensors: list[Tensor] = [*w_in, *w_rec, *b_gate]
    if c.attrs.get("go_backwards"):
        axes = ed.const(f"{anchor.name}/time_axis", np.array([axis], np.int32), (1,), "int32")
        rev = ed.fresh(f"{anchor.name}/reversed")
        tensors += [axes, Tensor(rev, shape, "float32")]
        new_ops.append(Op(op_name(ed, "REVERSE_V2", anchor), "REVERSE_V2", (x, axes.name), (rev,)))
        x = rev
    states = []
    for role, init in (("output_state", roles["h0"]), ("cell_state", roles["c0"])):
        name, ops, ts = state_input(ed, anchor, role, init, (batch, units))
        states.append(name)
        new_ops += ops
        tensors += ts
    (out,) = c.outputs
    seq_shape = (steps, batch, units) if time_major else (batch, steps, units)
    sequence = ed.tensor(out).shape == seq_shape
    seq = out if sequence else ed.fresh(f"{anchor.name}/sequence")
    if not sequence:
        tensors.append(Tensor(seq, seq_shape, "float32"))
    weights = (w_in, w_rec, b_gate)
    new_ops.append(
        unidirectional_lstm(
            ed, anchor, x, weights, (states[0], states[1]), seq, time_major=time_major
        )
    )
    if not sequence:
        last_shape = (1, batch, units) if time_major else (batch, 1, units)
        last = ed.fresh(f"{anchor.name}/last")
        slice_op, consts = slice_step(ed, anchor, seq, seq_shape, steps - 1, axis, last)
        target = ed.const(
            f"{anchor.name}/last_shape", np.array([batch, units], np.int32), (2,), "int32"
        )
        tensors += [Tensor(last, last_shape, "float32"), *consts, target]
        reshape = Op(op_name(ed, "RESHAPE", anchor), "RESHAPE", (last, target.name), (out,), {})
        new_ops += [slice_op, reshape]
    return Rewrite(c.ops, tuple(new_ops), tuple(tensors))


# --------------------------------------------------------------------------------------------
# lingvo.LSTMCellSimple / LayerNormalizedLSTMCellSimple
# --------------------------------------------------------------------------------------------


def _lingvo_roles(ed: Editor, c: Composite, layer_norm: bool) -> dict[str, str] | str:
    args = arguments(ed, c)
    n = len(args) - (1 if layer_norm else 0)
    if n not in (3, 4):
        want = "x, weight, bias[, projection]" + (", layer_norm_scale" if layer_norm else "")
        return f"expected the arguments ({want}), got {len(args)}"
    names = ["x", "weight", "bias", "projection"][:n] + (["layer_norm_scale"] if layer_norm else [])
    return dict(zip(names, args))


def _verify_lingvo(ed: Editor, c: Composite, layer_norm: bool) -> str | None:
    roles = _lingvo_roles(ed, c, layer_norm)
    if isinstance(roles, str):
        return roles
    consts = ("weight", "bias", "projection", "layer_norm_scale")
    problem = _float_problem(ed, roles, consts)
    if problem:
        return problem
    x, w = ed.tensor(roles["x"]).shape, ed.tensor(roles["weight"]).shape
    gates = 3 if c.attrs.get("couple_input_forget_gates") else 4
    if len(x) != 2 or len(w) != 2:
        return f"x has shape {x} and weight {w}; expected (B, I) and (I + O, G*N)"
    if w[1] % gates:
        return f"weight '{roles['weight']}' has {w[1]} columns, not a multiple of {gates} gates"
    cells = w[1] // gates
    outputs = ed.tensor(roles["projection"]).shape[1] if "projection" in roles else cells
    problem = _first(
        _shape_problem(ed, roles["weight"], "weight", (x[1] + outputs, gates * cells)),
        _shape_problem(ed, roles["bias"], "bias", (gates * cells,)),
        _shape_problem(ed, roles["projection"], "projection", (cells, outputs))
        if "projection" in roles
        else None,
        _shape_problem(ed, roles["layer_norm_scale"], "layer_norm_scale", (gates * cells,))
        if layer_norm
        else None,
    )
    if problem:
        return problem
    if len(c.outputs) != 1:
        return f"{len(c.outputs)} outputs are read outside; only the cell's output may be"
    return _shape_problem(ed, c.outputs[0], "output", (x[0], outputs))


def _rewrite_lingvo(ed: Editor, c: Composite, layer_norm: bool) -> Rewrite:
    roles = _lingvo_roles(ed, c, layer_norm)
    assert isinstance(roles, dict)
    anchor = ed.ops[c.ops[-1]]
    x = roles["x"]
    batch, n_in = ed.tensor(x).shape
    cifg = bool(c.attrs.get("couple_input_forget_gates"))
    blocks = ("c", "f", "o") if cifg else LINGVO_GATES
    weight = ed.tensor(roles["weight"])
    cells = weight.shape[1] // len(blocks)
    w = ed.value(weight.name)
    w_t = None if w is None else w.T  # (G*N, I + O): rows are gates
    tensors: list[Tensor] = []

    def block(v: np.ndarray | None, k: int, cols: slice | None, shape, what: str) -> str:
        part = None if v is None else v[k * cells : (k + 1) * cells]
        if part is not None and cols is not None:
            part = part[:, cols]
        t = ed.const(f"{anchor.name}/{what}", part, shape, "float32")
        tensors.append(t)
        return t.name

    outputs = weight.shape[0] - n_in
    slots: dict[str, str | None] = {}
    vectors = {
        "bias": ed.value(roles["bias"]),
        "layer_norm": ed.value(roles["layer_norm_scale"]) if layer_norm else None,
    }
    for tfl, gate in (("input", "i"), ("forget", "f"), ("cell", "c"), ("output", "o")):
        if gate not in blocks:
            continue
        k = blocks.index(gate)
        slots[f"input_to_{tfl}"] = block(w_t, k, slice(0, n_in), (cells, n_in), f"input_to_{tfl}")
        slots[f"recurrent_to_{tfl}"] = block(
            w_t, k, slice(n_in, None), (cells, outputs), f"recurrent_to_{tfl}"
        )
        slots[f"{tfl}_bias"] = block(vectors["bias"], k, None, (cells,), f"{tfl}_bias")
        if layer_norm:
            slots[f"{tfl}_layer_norm"] = block(
                vectors["layer_norm"], k, None, (cells,), f"{tfl}_layer_norm"
            )
    projection = None
    if "projection" in roles:
        p = ed.value(roles["projection"])
        t = ed.const(
            f"{anchor.name}/projection", None if p is None else p.T, (outputs, cells), "float32"
        )
        tensors.append(t)
        projection = t.name
    h, _, h_ts = state_input(ed, anchor, "output_state", None, (batch, outputs))
    cs, _, c_ts = state_input(ed, anchor, "cell_state", None, (batch, cells))
    tensors += [*h_ts, *c_ts]
    gates = ("input", "forget", "cell", "output")
    inputs = [
        x,
        *(slots.get(f"input_to_{g}") for g in gates),
        *(slots.get(f"recurrent_to_{g}") for g in gates),
        None,
        None,
        None,
        *(slots.get(f"{g}_bias") for g in gates),
        projection,
        None,
        h,
        cs,
    ]
    if layer_norm:
        inputs += [slots.get(f"{g}_layer_norm") for g in gates]
    options = {
        "fused_activation_function": "TANH",
        "cell_clip": float(c.attrs.get("cell_clip", 10.0)),
        "proj_clip": float(c.attrs.get("proj_clip", 0.0)),
        "kernel_type": "FULL",
        "asymmetric_quantize_inputs": False,
    }
    lstm = Op(op_name(ed, "LSTM", anchor), "LSTM", tuple(inputs), c.outputs, options)
    return Rewrite(c.ops, (lstm,), tuple(tensors))


def verify_lstm_cell_simple(ed: Editor, c: Composite) -> str | None:
    """Why an ``LSTMCellSimple`` composite does not fit its interface (None when it does)."""
    return _verify_lingvo(ed, c, layer_norm=False)


def rewrite_lstm_cell_simple(ed: Editor, c: Composite) -> Rewrite:
    """One LSTM op for an ``LSTMCellSimple`` composite."""
    return _rewrite_lingvo(ed, c, layer_norm=False)


def verify_layer_normalized_lstm_cell_simple(ed: Editor, c: Composite) -> str | None:
    """Why a ``LayerNormalizedLstmCellSimple`` composite does not fit (None when it does)."""
    return _verify_lingvo(ed, c, layer_norm=True)


def rewrite_layer_normalized_lstm_cell_simple(ed: Editor, c: Composite) -> Rewrite:
    """One LSTM op with layer-norm coefficients for a ``LayerNormalizedLstmCellSimple``."""
    return _rewrite_lingvo(ed, c, layer_norm=True)



register_fusion("keras_lstm", verify_keras_lstm, rewrite_keras_lstm)
register_fusion("LSTMCellSimple", verify_lstm_cell_simple, rewrite_lstm_cell_simple)
for _name in ("LayerNormalizedLstmCellSimple", "LayerNormalizedLSTMCellSimple"):  # TF's, lingvo's
    register_fusion(
        _name,
        verify_layer_normalized_lstm_cell_simple,
        rewrite_layer_normalized_lstm_cell_simple,
    )

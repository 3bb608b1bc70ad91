"""Keras-3 LSTM loops (WHILE) -> UNIDIRECTIONAL_SEQUENCE_LSTM.

Keras 3 lowers ``LSTM(units)`` to a WHILE loop whose body computes one cell step::

    x_t = GATHER(X, t)                       z = FC(x_t, Wx) + FC(h, Wh) + b     (4H wide)
    i, f, g, o = SPLIT(z, 4)                 c' = LOGISTIC(f) * c + LOGISTIC(i) * TANH(g)
    h' = LOGISTIC(o) * TANH(c')              out = RESHAPE(h', (1, B, H))        (last step)

and TFLite's converter no longer fuses it. :func:`fuse_lstm_loop` proves that a WHILE op is
exactly this loop (roles found from the data flow, not from positions: the SPLIT's gate order is
read off the cell), then proposes one UNIDIRECTIONAL_SEQUENCE_LSTM (time-major, over the whole
sequence) plus a STRIDED_SLICE that yields the loop's output, the last step. Weights are split per
gate in TFLite's input, forget, cell, output order; the FC weights are already stored
``(out, in)``, i.e. transposed from Keras' kernels. A backward (``go_backwards``) layer is the
same loop over a REVERSE_V2'd input, which stays in front of the fused op.

Guards (anything else keeps the WHILE): float32 without quantization; zero initial states
(constants whose bytes were dropped count as zero, which Keras always emits); the trip count
equals the sequence length; the loop's only output read outside is the last-step output (or the
final ``h``); ``return_sequences=True`` loops (which write every step) are not fused yet.
"""

from __future__ import annotations

import numpy as np

from tacopt.fusion.ir import Op, Tensor
from tacopt.fusion.rules.base import Editor, Rewrite, Rule, op_name
from tacopt.fusion.rules.pattern import P, match

GATES = ("i", "f", "g", "o")  # TFLite's order: input, forget, cell, output

_CELL = P(
    "ADD",
    P("MUL", P("LOGISTIC", "zf"), "c_prev"),
    P("MUL", P("LOGISTIC", "zi"), P("TANH", "zg")),
    bind="c_new",
)
_HIDDEN = P("MUL", P("LOGISTIC", "zo"), P("TANH", "c_new"))


def _add_leaves(ed: Editor, t: str, ops: list[str]) -> list[str] | None:
    op = ed.producer_of(t)
    if op is None or op.kind != "ADD" or op.options.get("fused_activation_function") != "NONE":
        return [t]
    ops.append(op.name)
    out = []
    for i in range(len(op.inputs)):
        leaves = _add_leaves(ed, op.input(i), ops)
        if leaves is None:
            return None
        out.extend(leaves)
    return out


def _zero_or_dropped(ed: Editor, t: str) -> bool:
    rec = ed.tensor(t)
    if not rec.is_constant:
        return False
    v = ed.value(t)
    return v is None or not np.any(v)


def _analyse_body(body: Editor) -> dict | None:
    """The loop-carried roles and weights of an LSTM cell body, or None if it is not one."""
    bin_, bout = body.inputs, body.outputs
    if len(bin_) != 6 or len(bout) != 6:
        return None
    cell = hidden = None
    for k, t in enumerate(bout):
        m = match(body, _HIDDEN, t)
        if m is not None:
            hidden = (k, m)
    if hidden is None:
        return None
    k_h, mh = hidden
    cell = match(body, _CELL, mh.env["c_new"])
    if cell is None or cell.env["c_new"] not in bout:
        return None
    k_c = bout.index(cell.env["c_new"])
    if cell.env["c_prev"] != bin_[k_c] or k_c == k_h:
        return None
    gates = {g: cell.env.get(f"z{g}") or mh.env.get(f"z{g}") for g in GATES}
    split = body.producer_of(gates["i"])
    if split is None or split.kind != "SPLIT" or split.options.get("num_splits") != 4:
        return None
    if any(body.producer_of(gates[g]) is not split for g in GATES):
        return None
    order = [split.outputs.index(gates[g]) for g in GATES]
    axis = body.value(split.inputs[0])
    z = split.input(1)
    rank = len(body.tensor(z).shape)
    if axis is None or int(axis.reshape(-1)[0]) % rank != rank - 1:
        return None
    add_ops: list[str] = []
    leaves = _add_leaves(body, z, add_ops)
    if leaves is None:
        return None
    fcs, biases = [], []
    for leaf in leaves:
        prod = body.producer_of(leaf)
        if prod is not None and prod.kind == "RESHAPE":
            prod = body.producer_of(prod.inputs[0])
        if body.is_const(leaf):
            biases.append(leaf)
        elif prod is not None and prod.kind == "FULLY_CONNECTED":
            fcs.append(prod)
        else:
            return None
    if len(fcs) != 2 or any(fc.options.get("fused_activation_function") != "NONE" for fc in fcs):
        return None
    k_h_in = bin_.index(bin_[k_h])
    rec = [fc for fc in fcs if fc.inputs[0] == bin_[k_h_in]]
    inp = [fc for fc in fcs if fc.inputs[0] != bin_[k_h_in]]
    if len(rec) != 1 or len(inp) != 1:
        return None
    gather = body.producer_of(inp[0].inputs[0])
    if gather is None or gather.kind != "GATHER" or gather.options.get("axis", 0) != 0:
        return None
    if gather.inputs[0] not in bin_ or gather.inputs[1] not in bin_:
        return None
    k_x, k_t = bin_.index(gather.inputs[0]), bin_.index(gather.inputs[1])
    if bout[k_x] != bin_[k_x]:
        return None
    # the output slot: RESHAPE(h) into (1, B, H), replacing the carried value every step
    rest = [k for k in range(6) if k not in (k_h, k_c, k_x, k_t)]
    k_out = [
        k
        for k in rest
        if (p := body.producer_of(bout[k])) is not None
        and p.kind == "RESHAPE"
        and p.inputs[0] == bout[k_h]
    ]
    if len(k_out) != 1:
        return None
    (k_i,) = [k for k in rest if k != k_out[0]]
    for k in (k_t, k_i):
        inc = body.producer_of(bout[k])
        if inc is None or inc.kind != "ADD" or bin_[k] not in inc.inputs:
            return None
        step = [t for t in inc.inputs if t != bin_[k]]
        if len(step) != 1 or body.scalar(step[0]) != 1:
            return None
    weights = [inp[0].inputs[1], rec[0].inputs[1]]
    extra_bias = [fc.inputs[2] for fc in fcs if len(fc.inputs) > 2 and fc.inputs[2] is not None]
    return {
        "k_h": k_h,
        "k_c": k_c,
        "k_x": k_x,
        "k_t": k_t,
        "k_i": k_i,
        "k_out": k_out[0],
        "order": order,
        "wx": weights[0],
        "wh": weights[1],
        "biases": biases + extra_bias,
        "tensors": [z, *weights, *biases, *extra_bias, bout[k_h], bout[k_c]],
    }


def _trip_count(cond: Editor, k_t: int, k_i: int) -> int | None:
    """The loop bound when the condition is ``t < N and i < N`` (either order), else None."""
    (out,) = cond.outputs
    op = cond.producer_of(out)
    if op is None:
        return None
    bounds = {}
    ands = [op] if op.kind == "LOGICAL_AND" else []
    less = [cond.producer_of(t) for a in ands for t in a.inputs] if ands else [op]
    for lt in less:
        if lt is None or lt.kind != "LESS" or lt.inputs[0] not in cond.inputs:
            return None
        n = cond.scalar(lt.inputs[1])
        if n is None:
            return None
        bounds[cond.inputs.index(lt.inputs[0])] = int(n)
    if k_t not in bounds:
        return None
    return min(bounds.values())


def fuse_lstm_loop(ed: Editor, op: Op) -> Rewrite | None:
    """Propose UNIDIRECTIONAL_SEQUENCE_LSTM (+ STRIDED_SLICE) for a Keras-3 LSTM WHILE loop."""
    body_name, cond_name = op.options.get("body_subgraph"), op.options.get("cond_subgraph")
    if body_name is None or cond_name is None or len(op.inputs) != 6:
        return None
    body = Editor.of(ed.subgraph(body_name), root=ed.root)
    roles = _analyse_body(body)
    if roles is None:
        return None
    if any(
        body.tensor(t).dtype != "float32" or body.tensor(t).is_quantized for t in roles["tensors"]
    ):
        return None
    x = op.input(roles["k_x"])
    xt = ed.tensor(x)
    if len(xt.shape) != 3 or xt.dtype != "float32" or xt.is_quantized:
        return None
    steps, batch, n_in = xt.shape
    cond = Editor.of(ed.subgraph(cond_name), root=ed.root)
    if _trip_count(cond, roles["k_t"], roles["k_i"]) != steps:
        return None
    if any(ed.scalar(op.inputs[k]) != 0 for k in (roles["k_t"], roles["k_i"])):
        return None
    if not all(_zero_or_dropped(ed, op.input(roles[k])) for k in ("k_h", "k_c")):
        return None
    wx, wh = body.tensor(roles["wx"]), body.tensor(roles["wh"])
    four_h = wx.shape[0]
    units = four_h // 4
    if four_h % 4 or wx.shape != (four_h, n_in) or wh.shape != (four_h, units):
        return None
    out_t = op.outputs[roles["k_out"]]
    if ed.tensor(out_t).shape != (1, batch, units):
        return None
    read = [k for k, t in enumerate(op.outputs) if ed.readers.get(t) or ed.is_output(t)]
    if not set(read) <= {roles["k_out"], roles["k_h"]}:
        return None

    # weights per gate, in TFLite's order
    def gate_blocks(v: np.ndarray | None, shape: tuple[int, ...], base: str) -> list[Tensor]:
        out = []
        for gate, k in zip(GATES, roles["order"]):
            block = None if v is None else v[k * units : (k + 1) * units]
            out.append(ed.const(f"{op.name}/{base}_{gate}", block, (units, *shape[1:]), "float32"))
        return out

    w_in = gate_blocks(body.value(wx.name), wx.shape, "input_weights")
    w_rec = gate_blocks(body.value(wh.name), wh.shape, "recurrent_weights")
    bias_vals = [v for v in map(body.value, roles["biases"]) if v is not None]
    total = None
    if len(bias_vals) == len(roles["biases"]):
        total = np.zeros(four_h, np.float32)
        for v in bias_vals:
            total = total + np.broadcast_to(v.reshape(-1), (four_h,))
    b_gate = gate_blocks(total, (four_h,), "bias")
    h_state = Tensor(
        ed.fresh(f"{op.name}/output_state"), (batch, units), "float32", is_variable=True
    )
    c_state = Tensor(ed.fresh(f"{op.name}/cell_state"), (batch, units), "float32", is_variable=True)
    seq = Tensor(ed.fresh(f"{op.name}/sequence"), (steps, batch, units), "float32")
    begin = ed.const(f"{op.name}/last_begin", np.array([steps - 1, 0, 0], np.int32), (3,), "int32")
    end = ed.const(f"{op.name}/last_end", np.array([steps, batch, units], np.int32), (3,), "int32")
    strides = ed.const(f"{op.name}/last_strides", np.ones(3, np.int32), (3,), "int32")
    new_tensors = [*w_in, *w_rec, *b_gate, h_state, c_state, seq, begin, end, strides]

    lstm_inputs = (
        x,
        *(t.name for t in w_in),
        *(t.name for t in w_rec),
        None,
        None,
        None,
        *(t.name for t in b_gate),
        None,
        None,
        h_state.name,
        c_state.name,
        None,
        None,
        None,
        None,
    )
    options = {
        "fused_activation_function": "TANH",
        "cell_clip": 0.0,
        "proj_clip": 0.0,
        "time_major": True,
        "asymmetric_quantize_inputs": False,
        "diagonal_recurrent_tensors": False,
    }
    lstm = Op(
        op_name(ed, "UNIDIRECTIONAL_SEQUENCE_LSTM", op),
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        lstm_inputs,
        (seq.name,),
        options,
    )
    last = Op(
        op_name(ed, "STRIDED_SLICE", op),
        "STRIDED_SLICE",
        (seq.name, begin.name, end.name, strides.name),
        (out_t,),
        {
            "begin_mask": 0,
            "end_mask": 0,
            "ellipsis_mask": 0,
            "new_axis_mask": 0,
            "shrink_axis_mask": 0,
            "offset": False,
        },
    )
    new_ops = [lstm, last]
    if roles["k_h"] in read:
        shape = ed.const(f"{op.name}/h_shape", np.array([batch, units], np.int32), (2,), "int32")
        new_tensors.append(shape)
        new_ops.append(
            Op(
                op_name(ed, "RESHAPE", op),
                "RESHAPE",
                (out_t, shape.name),
                (op.outputs[roles["k_h"]],),
                {},
            )
        )
    return Rewrite((op.name,), tuple(new_ops), tuple(new_tensors))


RULES: list[Rule] = [Rule("lstm", frozenset({"WHILE"}), fuse_lstm_loop)]

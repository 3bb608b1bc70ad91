"""Keras-3 LSTM loops (WHILE) -> UNIDIRECTIONAL_SEQUENCE_LSTM.

Keras 3 lowers ``LSTM(units)`` to a WHILE loop whose body computes one cell step::

    x_t = GATHER(X, t)                       z = FC(x_t, Wx) + FC(h, Wh) + b     (4H wide)
    i, f, g, o = SPLIT(z, 4)                 c' = LOGISTIC(f) * c + LOGISTIC(i) * TANH(g)
    h' = LOGISTIC(o) * TANH(c')              out = RESHAPE(h', (1, B, H))        (last step)
                                             out = CONCAT(out[:t], h', out[t+1:]) (every step)

and TFLite's converter no longer fuses it. :func:`fuse_lstm_loop` proves that a WHILE op is
exactly this loop (roles found from the data flow, not from positions: the SPLIT's gate order is
read off the cell), then proposes one UNIDIRECTIONAL_SEQUENCE_LSTM (time-major, over the whole
sequence) whose output is the loop's sequence (``return_sequences=True``, the TensorList write
lowered to SLICE / CONCATENATION) or, through a STRIDED_SLICE, its last step. Weights are split
per gate in TFLite's input, forget, cell, output order; the FC weights are already stored
``(out, in)``, i.e. transposed from Keras' kernels. A backward (``go_backwards``) layer is the
same loop over a REVERSE_V2'd input, which stays in front of the fused op. The TRANSPOSE (or
RESHAPE, batch 1) that Keras puts on both sides of the loop of a batch-major model folds into
``time_major=False`` afterwards (:func:`tacopt.fusion.rnn.bilstm.fold_batch_major`).

Initial states: zero constants (and dropped ones, which Keras always emits as zeros) become the
fused op's variable state tensors; any other initial state (a graph input, an activation, a
variable tensor, a non-zero constant, e.g. after ``tacopt rehydrate``) is copied into a fresh
variable tensor by an ``ADD(state, 0)`` in front of the op (LiteRT's kernel takes its states only
from variable tensors, updates them in place, and a variable tensor may not hold a constant
buffer). The final ``h`` may be read (it is the
last output); the final ``c`` may not (the fused op does not return it), and such loops stay --
except for Keras' ``stateful=True``: both states read from resource variables (READ_VARIABLE) and
the final ones assigned back (ASSIGN_VARIABLE), initialised to zeros. The fused op's variable
state tensors do exactly that by themselves (zero when loaded, carried from one invocation to
the next), so the reads and assignments go.

Guards (anything else keeps the WHILE): float32 without quantization; the trip count equals the
sequence length; counters start at 0 and step by 1; only the output (or the final ``h``) is read
outside.
"""

from __future__ import annotations

import numpy as np

from tacopt.fusion.ir import Op, Tensor
from tacopt.fusion.rnn.bilstm import RULES as BILSTM_RULES
from tacopt.fusion.rnn.bilstm import with_readers_moved
from tacopt.fusion.rnn.lstm_ops import (
    GATES,
    slice_step,
    split_gates,
    state_input,
    unidirectional_lstm,
    zero_or_dropped,
)
from tacopt.fusion.rnn.unrolled import RULES as UNROLLED_RULES
from tacopt.fusion.rules.base import Editor, Rewrite, Rule, op_name
from tacopt.fusion.rules.matching import P, match

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
    # the output slot: RESHAPE(h) into (1, B, H), replacing the carried value every step (last
    # step), or h written at step t of the carried sequence (every step)
    rest = [k for k in range(6) if k not in (k_h, k_c, k_x, k_t)]
    last = [k for k in rest if _is_step_reshape(body, bout[k], bout[k_h])]
    every = [k for k in rest if _is_sequence_write(body, k, k_t, bout[k_h])]
    k_out = last + every
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
        "sequence": bool(every),
        "order": order,
        "wx": weights[0],
        "wh": weights[1],
        "biases": biases + extra_bias,
        "tensors": [z, *weights, *biases, *extra_bias, bout[k_h], bout[k_c]],
    }


def _is_step_reshape(body: Editor, t: str, h: str) -> bool:
    p = body.producer_of(t)
    return p is not None and p.kind == "RESHAPE" and p.inputs[0] == h


def _index_vector(body: Editor, t: str | None, first: str) -> list[int] | None:
    """``rest`` when ``t`` is CONCATENATION(RESHAPE(first, [1]), rest) along axis 0, else None."""
    cat = body.producer_of(t)
    if cat is None or cat.kind != "CONCATENATION" or len(cat.inputs) != 2:
        return None
    if cat.options.get("axis") != 0:
        return None
    head = body.producer_of(cat.inputs[0])
    if head is None or head.kind != "RESHAPE" or head.inputs[0] != first:
        return None
    rest = body.value(cat.inputs[1])
    if rest is None or rest.dtype.kind != "i":
        return None
    return [int(v) for v in rest.reshape(-1)]


def _is_sequence_write(body: Editor, k: int, k_t: int, h: str) -> bool:
    """Whether output ``k`` is the carried sequence with step ``t`` replaced by ``h``.

    Keras' TensorList write, lowered: CONCAT(SLICE(seq, 0, [t, -1, -1]), RESHAPE(h, (1, B, H)),
    SLICE(seq, [t + 1, 0, 0], [-1, -1, -1])) along axis 0.
    """
    seq, t, t_next = body.inputs[k], body.inputs[k_t], body.outputs[k_t]
    cat = body.producer_of(body.outputs[k])
    if cat is None or cat.kind != "CONCATENATION" or len(cat.inputs) != 3:
        return False
    if cat.options.get("axis") != 0 or cat.options.get("fused_activation_function") != "NONE":
        return False
    head, tail = body.producer_of(cat.inputs[0]), body.producer_of(cat.inputs[2])
    if head is None or tail is None or not _is_step_reshape(body, cat.input(1), h):
        return False
    if head.kind != "SLICE" or tail.kind != "SLICE" or not head.inputs[0] == tail.inputs[0] == seq:
        return False
    zeros, ones = body.value(head.inputs[1]), body.value(tail.inputs[2])
    if zeros is None or ones is None or np.any(zeros) or not np.all(ones == -1):
        return False
    head_size = _index_vector(body, head.inputs[2], t)
    tail_begin = _index_vector(body, tail.inputs[1], t_next)
    rank = len(body.tensor(seq).shape)
    return (
        head_size == [-1] * (rank - 1)
        and tail_begin == [0] * (rank - 1)
        and zeros.size == ones.size == rank
    )


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


def _resource(ed: Editor, t: str | None) -> tuple[str, str] | None:
    """(container, shared name) of the resource variable handle ``t``, else None."""
    op = ed.producer_of(t)
    if op is None or op.kind != "VAR_HANDLE":
        return None
    return str(op.options.get("container", "")), str(op.options.get("shared_name", ""))


def _resource_state(ed: Editor, loop: Op, slot: int) -> tuple[str, str] | None:
    """(READ_VARIABLE, ASSIGN_VARIABLE) op names when state ``slot`` of ``loop`` lives in a
    resource variable (Keras' ``stateful=True``), else None.

    The variable is read once, into this loop only; the loop's final state is assigned back to
    it and read by nothing else; nothing else in the model touches it, but one assignment of
    zeros (or of a dropped constant) in an initialisation graph. The fused op's own variable
    state tensor then does the same: zero when the model is loaded, carried across invocations.
    """
    read = ed.producer_of(loop.inputs[slot])
    if read is None or read.kind != "READ_VARIABLE" or len(read.inputs) != 1:
        return None
    if ed.sole_reader(read.outputs[0]) is not loop:
        return None
    var = _resource(ed, read.inputs[0])
    assign = ed.sole_reader(loop.outputs[slot])
    if var is None or assign is None or assign.kind != "ASSIGN_VARIABLE" or len(assign.inputs) != 2:
        return None
    if assign.inputs[1] != loop.outputs[slot] or _resource(ed, assign.inputs[0]) != var:
        return None
    users = [
        o.name
        for o in ed.ordered_ops()
        if o.kind != "VAR_HANDLE" and any(_resource(ed, t) == var for t in o.inputs)
    ]
    if sorted(users) != sorted([read.name, assign.name]) or ed.root is None:
        return None
    inits = 0
    for sub in ed.root.graph.get("subgraphs", {}).values():
        sub_ed = Editor.of(sub, root=ed.root)
        for o in sub_ed.ordered_ops():
            if o.kind == "VAR_HANDLE" or not any(_resource(sub_ed, t) == var for t in o.inputs):
                continue
            if o.kind != "ASSIGN_VARIABLE" or len(o.inputs) != 2:
                return None
            if o.inputs[1] is None or not zero_or_dropped(sub_ed, o.inputs[1]):
                return None
            inits += 1
    return (read.name, assign.name) if inits <= 1 else None


def fuse_lstm_loop(ed: Editor, op: Op) -> Rewrite | None:
    """Propose UNIDIRECTIONAL_SEQUENCE_LSTM (+ slices, state copies) for a Keras-3 LSTM loop."""
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
    wx, wh = body.tensor(roles["wx"]), body.tensor(roles["wh"])
    four_h = wx.shape[0]
    units = four_h // 4
    if four_h % 4 or wx.shape != (four_h, n_in) or wh.shape != (four_h, units):
        return None
    for k in ("k_h", "k_c"):
        init = ed.tensor(op.input(roles[k]))
        if init.shape != (batch, units) or init.dtype != "float32" or init.is_quantized:
            return None
    out_t = op.outputs[roles["k_out"]]
    want = (steps, batch, units) if roles["sequence"] else (1, batch, units)
    if ed.tensor(out_t).shape != want:
        return None
    # Keras' stateful=True: both states read from resource variables and assigned back
    stateful = [_resource_state(ed, op, roles[k]) for k in ("k_h", "k_c")]
    resource_ops = [n for pair in stateful if pair is not None for n in pair]
    if len(resource_ops) not in (0, 4):
        return None
    read = [
        k
        for k, t in enumerate(op.outputs)
        if (ed.is_output(t) or set(ed.readers.get(t, ())) - set(resource_ops))
    ]
    if not set(read) <= {roles["k_out"], roles["k_h"]}:
        return None

    order = roles["order"]
    w_in = split_gates(ed, op, "input_weights", body.value(wx.name), wx.shape, order)
    w_rec = split_gates(ed, op, "recurrent_weights", body.value(wh.name), wh.shape, order)
    bias_vals = [v for v in map(body.value, roles["biases"]) if v is not None]
    total = None
    if len(bias_vals) == len(roles["biases"]):
        total = np.zeros(four_h, np.float32)
        for v in bias_vals:
            total = total + np.broadcast_to(v.reshape(-1), (four_h,))
    b_gate = split_gates(ed, op, "bias", total, (four_h,), order)
    new_ops: list[Op] = []
    new_tensors: list[Tensor] = [*w_in, *w_rec, *b_gate]
    states = []
    for role, k in (("output_state", "k_h"), ("cell_state", "k_c")):
        start = None if resource_ops else op.input(roles[k])  # stateful: the variable persists
        name, ops, tensors = state_input(ed, op, role, start, (batch, units))
        states.append(name)
        new_ops += ops
        new_tensors += tensors
    seq = out_t
    if not roles["sequence"]:
        seq = ed.fresh(f"{op.name}/sequence")
        new_tensors.append(Tensor(seq, (steps, batch, units), "float32"))
    new_ops.append(
        unidirectional_lstm(ed, op, x, (w_in, w_rec, b_gate), (states[0], states[1]), seq)
    )
    if roles["k_h"] in read or not roles["sequence"]:
        last = out_t
        if roles["sequence"]:
            last = ed.fresh(f"{op.name}/last")
            new_tensors.append(Tensor(last, (1, batch, units), "float32"))
        slice_op, consts = slice_step(ed, op, seq, (steps, batch, units), steps - 1, 0, last)
        new_ops.append(slice_op)
        new_tensors += consts
        if roles["k_h"] in read:
            shape = ed.const(
                f"{op.name}/h_shape", np.array([batch, units], np.int32), (2,), "int32"
            )
            new_tensors.append(shape)
            new_ops.append(
                Op(
                    op_name(ed, "RESHAPE", op),
                    "RESHAPE",
                    (last, shape.name),
                    (op.outputs[roles["k_h"]],),
                    {},
                )
            )
    return with_readers_moved(ed, [op.name, *resource_ops], new_ops, new_tensors)


#: The LSTM rules: loops and unrolled steps first, then forward / backward pairs of fused LSTMs
#: (tf-keras' or ours).
RULES: list[Rule] = [
    Rule("lstm", frozenset({"WHILE"}), fuse_lstm_loop),
    *UNROLLED_RULES,
    *BILSTM_RULES,
]

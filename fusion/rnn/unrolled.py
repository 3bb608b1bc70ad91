"""An LSTM unrolled step by step (litert-torch's export of ``torch.nn.LSTM``) -> one
UNIDIRECTIONAL_SEQUENCE_LSTM.

litert-torch writes every time step out, from zero initial states::

    XP = RESHAPE(FC(X, W_ih, b_ih))               all steps' input projections, time-major
    z_0 = SLICE(XP, 0) + b_hh                     step 0: W_hh h_0 = 0
    z_t = SLICE(XP, t) + FC(h_{t-1}, W_hh, b_hh)  i, f, g, o = SLICE(z_t) along the features
    c_t = σ(f) c_{t-1} + σ(i) tanh(g)             c_0 = σ(i) tanh(g)
    h_t = σ(o) tanh(c_t)                          out = CONCATENATION(h_0, ..., h_{T-1})

:func:`fuse_unrolled_lstm`, anchored on the CONCATENATION, walks the chain back step by step
(gates found from the data flow, their order from the slices' offsets) and proposes one
UNIDIRECTIONAL_SEQUENCE_LSTM over ``X`` with the bias ``b_ih + b_hh`` (the RESHAPE / TRANSPOSE back
to batch major after the CONCATENATION folds in). Guards: float32; every step uses the same
``W_hh`` and ``b_hh``; step 0's constant equals ``b_hh`` (zero initial states; both dropped passes,
as in a structure-only model); the steps' hidden and cell states are read only by the chain (the
editor's guard: a returned ``(h_n, c_n)`` keeps the ops).
"""

from __future__ import annotations

import numpy as np

from tacopt.fusion.ir import Op, Tensor
from tacopt.fusion.rnn.bilstm import swaps_time_and_batch
from tacopt.fusion.rnn.lstm_ops import GATES, split_gates, state_input, unidirectional_lstm
from tacopt.fusion.rules.base import Editor, Rewrite, Rule
from tacopt.fusion.rules.matching import P, match

_HIDDEN = P("MUL", P("LOGISTIC", "zo"), P("TANH", "c"))
_CELL = P(
    "ADD", P("MUL", P("LOGISTIC", "zf"), "c_prev"), P("MUL", P("LOGISTIC", "zi"), P("TANH", "zg"))
)
_FIRST_CELL = P("MUL", P("LOGISTIC", "zi"), P("TANH", "zg"))


def _gate_slices(ed: Editor, env: dict[str, str], units: int) -> tuple[str, dict[str, int]] | None:
    """The tensor z the gates are sliced from, and each gate's block index in it."""
    source, blocks = None, {}
    for g in GATES:
        if f"z{g}" not in env:
            continue
        op = ed.producer_of(env[f"z{g}"])
        if op is None or op.kind != "SLICE" or len(op.inputs) != 3:
            return None
        begin, size = ed.value(op.inputs[1]), ed.value(op.inputs[2])
        shape = ed.tensor(op.input(0)).shape
        if begin is None or size is None or begin.size != len(shape) or size.size != len(shape):
            return None
        begin, size = begin.reshape(-1), size.reshape(-1)
        if np.any(begin[:-1]) or int(size[-1]) != units or int(begin[-1]) % units:
            return None
        if any(int(s) not in (d, -1) for s, d in zip(size[:-1], shape[:-1])):
            return None
        if source not in (None, op.inputs[0]):
            return None
        source, blocks[g] = op.inputs[0], int(begin[-1]) // units
    return (source, blocks) if source is not None else None


def _step_input(ed: Editor, xs: str, t: int) -> str | None:
    """XP when ``xs`` is step ``t`` of a time-major XP (a one-step SLICE along axis 0)."""
    op = ed.producer_of(xs)
    if op is None or op.kind != "SLICE" or len(op.inputs) != 3:
        return None
    begin, size = ed.value(op.inputs[1]), ed.value(op.inputs[2])
    if begin is None or size is None or begin.size < 1:
        return None
    begin, size = begin.reshape(-1), size.reshape(-1)
    if int(begin[0]) != t or int(size[0]) != 1 or np.any(begin[1:]):
        return None
    return op.inputs[0]


def _steps(ed: Editor, hs: list[str]) -> dict | None:
    """Roles of the unrolled chain whose step outputs are ``hs``, or None."""
    units = ed.tensor(hs[0]).shape[-1]
    c_next, order, xp, w_hh, b_hh, first_bias = None, None, None, None, None, None
    for t in range(len(hs) - 1, -1, -1):
        mh = match(ed, _HIDDEN, hs[t])
        if mh is None or (c_next is not None and mh.env["c"] != c_next):
            return None
        cell = match(ed, _FIRST_CELL if t == 0 else _CELL, mh.env["c"])
        if cell is None:
            return None
        env = {**mh.env, **cell.env}
        found = _gate_slices(ed, env, units)
        if found is None:
            return None
        z, blocks = found
        if order is None:
            order = blocks
        elif any(order[g] != k for g, k in blocks.items()):
            return None
        add = ed.producer_of(z)
        if add is None or add.kind != "ADD" or len(add.inputs) != 2:
            return None
        if add.options.get("fused_activation_function", "NONE") != "NONE":
            return None
        a, b = add.inputs
        step_xp, other = _step_input(ed, a or "", t), b
        if step_xp is None:
            step_xp, other = _step_input(ed, b or "", t), a
        if step_xp is None or xp not in (None, step_xp) or other is None:
            return None
        xp = step_xp
        if t == 0:
            if not ed.is_const(other):
                return None
            first_bias = other
        else:
            fc = ed.producer_of(other)
            if fc is None or fc.kind != "FULLY_CONNECTED" or len(fc.inputs) < 3:
                return None
            if fc.inputs[0] != hs[t - 1] or fc.options.get("fused_activation_function") != "NONE":
                return None
            if w_hh not in (None, fc.inputs[1]) or b_hh not in (None, fc.inputs[2]):
                return None
            w_hh, b_hh = fc.inputs[1], fc.inputs[2]
        c_next = env.get("c_prev")
    if order is None or sorted(order.values()) != [0, 1, 2, 3] or w_hh is None:
        return None
    return {"xp": xp, "order": [order[g] for g in GATES], "w_hh": w_hh, "b_hh": b_hh,
            "first_bias": first_bias}  # fmt: skip


def fuse_unrolled_lstm(ed: Editor, cat: Op) -> Rewrite | None:
    """Propose one UNIDIRECTIONAL_SEQUENCE_LSTM for an unrolled LSTM's CONCATENATION of steps."""
    hs = [t for t in cat.inputs if t is not None]
    if len(hs) < 2 or len(hs) != len(cat.inputs) or cat.options.get("axis") != 0:
        return None
    if cat.options.get("fused_activation_function", "NONE") != "NONE":
        return None
    roles = _steps(ed, hs)
    if roles is None:
        return None
    to_time = ed.producer_of(roles["xp"])
    if to_time is None or not swaps_time_and_batch(ed, to_time):
        return None
    fc_x = ed.producer_of(to_time.inputs[0])
    if fc_x is None or fc_x.kind != "FULLY_CONNECTED" or len(fc_x.inputs) < 3:
        return None
    if fc_x.options.get("fused_activation_function") != "NONE":
        return None
    x = fc_x.input(0)
    tensors = [ed.tensor(t) for t in (x, fc_x.input(1), roles["w_hh"], cat.outputs[0])]
    if any(t.dtype != "float32" or t.is_quantized for t in tensors):
        return None
    batch, steps, n_in = ed.tensor(x).shape if len(ed.tensor(x).shape) == 3 else (0, 0, 0)
    units = ed.tensor(hs[0]).shape[-1]
    w_ih, w_hh = ed.tensor(fc_x.input(1)), ed.tensor(roles["w_hh"])
    if steps != len(hs) or w_ih.shape != (4 * units, n_in) or w_hh.shape != (4 * units, units):
        return None
    if ed.tensor(cat.outputs[0]).shape != (steps, batch, units):
        return None
    biases = [fc_x.inputs[2], roles["b_hh"], roles["first_bias"]]
    values = [ed.value(b) if b is not None else np.zeros(4 * units, np.float32) for b in biases]
    b_step, b_first = values[1], values[2]
    if (b_step is None) != (b_first is None):
        return None
    if b_step is not None and b_first is not None:
        if not np.array_equal(b_step.reshape(-1), b_first.reshape(-1)):
            return None  # step 0 does not start from zero states
    total = None if values[0] is None or values[1] is None else values[0] + values[1]
    anchor, order = cat, roles["order"]
    w_in = split_gates(ed, anchor, "input_weights", ed.value(w_ih.name), w_ih.shape, order)
    w_rec = split_gates(ed, anchor, "recurrent_weights", ed.value(w_hh.name), w_hh.shape, order)
    bias = split_gates(
        ed, anchor, "bias", None if total is None else total.reshape(-1), (4 * units,), order
    )
    new_tensors: list[Tensor] = [*w_in, *w_rec, *bias]
    states = []
    for role in ("output_state", "cell_state"):
        name, _, ts = state_input(ed, anchor, role, None, (batch, units))
        states.append(name)
        new_tensors += ts
    back = ed.sole_reader(cat.outputs[0])
    remove = [cat.name]
    if swaps_time_and_batch(ed, back):
        assert back is not None
        out, tail = back.outputs[0], []
        remove.append(back.name)
    else:
        out = ed.fresh(f"{cat.name}/batch_major")
        new_tensors.append(Tensor(out, (batch, steps, units), "float32"))
        perm = ed.const(f"{cat.name}/perm", np.array([1, 0, 2], np.int32), (3,), "int32")
        new_tensors.append(perm)
        tail = [Op(f"{cat.name}_transpose", "TRANSPOSE", (out, perm.name), cat.outputs)]
    weights = (w_in, w_rec, bias)
    lstm = unidirectional_lstm(
        ed, anchor, x, weights, (states[0], states[1]), out, time_major=False
    )
    chain = _chain_ops(ed, cat, x)
    return Rewrite(tuple(dict.fromkeys([*chain, *remove])), (lstm, *tail), tuple(new_tensors))


def _chain_ops(ed: Editor, cat: Op, x: str) -> list[str]:
    """The ops between ``x`` and ``cat`` (inclusive of ``cat``), found backwards over
    activations; constants and ``x`` stop the walk."""
    seen: dict[str, None] = {}
    todo = [cat]
    while todo:
        op = todo.pop()
        if op.name in seen:
            continue
        seen[op.name] = None
        for t in op.inputs:
            if t is None or t == x or ed.is_const(t):
                continue
            prod = ed.producer_of(t)
            if prod is not None:
                todo.append(prod)
    return sorted(seen, key=ed.pos.__getitem__)


RULES: list[Rule] = [Rule("unrolled_lstm", frozenset({"CONCATENATION"}), fuse_unrolled_lstm)]

"""A forward and a backward LSTM over one sequence -> one BIDIRECTIONAL_SEQUENCE_LSTM.

Keras' ``Bidirectional(LSTM(...))`` runs a forward layer over ``x`` and a ``go_backwards`` layer
over ``REVERSE_V2(x)`` along time. tf-keras converts each to an UNIDIRECTIONAL_SEQUENCE_LSTM
(batch-major); Keras 3 to a WHILE loop each, which :mod:`tacopt.fusion.rnn.lstm` fuses to one
(time-major) first. TFLite's converter stops there ("to be replaced by a single
BidirectionalSequenceLSTM op"); :func:`fuse_bidirectional` goes on::

    x ─┬─ UNI_LSTM(fw) ──────────────► y_fw           x ─ BIDI_LSTM ─┬─► y_fw
       └─ REVERSE ─ UNI_LSTM(bw) ─ y' ─┬─ REVERSE ──► y_bw             └─► y_bw   (= REVERSE(y'))
                                       └─ STRIDED_SLICE(last step) ─►  STRIDED_SLICE(first step)

The backward half of BIDIRECTIONAL_SEQUENCE_LSTM writes its output at the original time
positions, so the backward layer's own output ``y'`` is its output reversed in time: a reader that
reverses ``y'`` back (Keras' sequence output, possibly through the RESHAPE / TRANSPOSE that turns
a time-major sequence batch-major) reads the op's output directly, a slice of one step of ``y'``
becomes a slice of the mirrored step, and any other reader gets an explicit REVERSE_V2.
:func:`merge_bidirectional` then folds Keras' ``concat`` merge (forward first, along the feature
axis, possibly behind the same layout op) into ``merge_outputs=True``.

Guards: float32 without quantization on both halves, no layer normalization (the bidirectional
op has no slots for it), equal options (activation, clipping, time-major), no auxiliary input;
no merged outputs for batch-major sequences of more than one batch (LiteRT's kernel gets those
wrong). :func:`fold_batch_major` finally absorbs Keras 3's layout ops on both sides of a fused
op into ``time_major=False``.
Readers of the replaced ops' outputs that come before the fused op in execution order move after
it, unchanged.
"""

from __future__ import annotations

import numpy as np

from tacopt.fusion.ir import Op, Tensor
from tacopt.fusion.rules.base import Editor, Rewrite, Rule, op_name

UNI, BIDI = "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM"
#: UNIDIRECTIONAL_SEQUENCE_LSTM slots 1-17 (weights, peepholes, biases, projection) -> the same
#: slots of the forward half; the backward half's start 17 later. States: 18, 19 -> 35, 36 (fw)
#: and 37, 38 (bw); 39-47 are the auxiliary input and its weights (unused).
N_WEIGHTS, BIDI_INPUTS = 17, 48
_SAME_OPTIONS = ("fused_activation_function", "cell_clip", "proj_clip", "time_major")


def _time_axis(op: Op) -> int:
    return 0 if op.options.get("time_major", False) else 1


def _is_float_lstm(ed: Editor, op: Op) -> bool:
    if op.kind != UNI or len(op.inputs) < 20 or any(op.inputs[20:]):
        return False
    if op.options.get("diagonal_recurrent_tensors") or op.intermediates:
        return False
    tensors = [ed.tensor(t) for t in (*op.inputs, *op.outputs) if t is not None]
    if any(t.dtype != "float32" or t.is_quantized for t in tensors):
        return False
    return len(ed.tensor(op.inputs[0] or "").shape) == 3 if op.inputs[0] else False


def reverse_axis(ed: Editor, op: Op | None) -> int | None:
    """The one axis a REVERSE_V2 reverses (non-negative), else None."""
    if op is None or op.kind != "REVERSE_V2" or len(op.inputs) != 2:
        return None
    axes = ed.value(op.inputs[1])
    if axes is None or axes.size != 1 or axes.dtype.kind != "i":
        return None
    rank = len(ed.tensor(op.input(0)).shape)
    axis = int(axes.reshape(-1)[0])
    return axis % rank if -rank <= axis < rank else None


def layout_axis(ed: Editor, op: Op, axis: int) -> int | None:
    """Where ``axis`` of a layout op's input lands in its output, if the op only moves it.

    TRANSPOSE moves axes; a RESHAPE that only adds or drops size-1 axes keeps the order of the
    others (Keras' time-major <-> batch-major RESHAPE of batch-1 sequences).
    """
    if op.kind == "TRANSPOSE":
        value = ed.value(op.inputs[1]) if len(op.inputs) == 2 else None
        if value is None:
            return None
        perm = [int(p) for p in value.reshape(-1)]
        return perm.index(axis) if axis in perm else None
    if op.kind != "RESHAPE":
        return None
    src, dst = ed.tensor(op.input(0)).shape, ed.tensor(op.outputs[0]).shape
    big_src = [i for i, d in enumerate(src) if d != 1]
    big_dst = [i for i, d in enumerate(dst) if d != 1]
    if [src[i] for i in big_src] != [dst[i] for i in big_dst] or axis not in big_src:
        return None
    return big_dst[big_src.index(axis)]


def single_step(ed: Editor, op: Op, axis: int) -> int | None:
    """The one index a STRIDED_SLICE keeps along ``axis`` (others untouched), else None."""
    if op.kind != "STRIDED_SLICE" or len(op.inputs) != 4 or op.options.get("offset"):
        return None
    if op.options.get("ellipsis_mask") or op.options.get("new_axis_mask"):
        return None
    begin, end, strides = (ed.value(t) for t in op.inputs[1:])
    n = ed.tensor(op.input(0)).shape[axis]
    if begin is None or end is None or strides is None:
        return None
    if min(begin.size, end.size, strides.size) <= axis:
        return None
    if int(strides.reshape(-1)[axis]) != 1:
        return None
    bit = 1 << axis
    b = 0 if op.options.get("begin_mask", 0) & bit else int(begin.reshape(-1)[axis])
    b = b + n if b < 0 else b
    if op.options.get("shrink_axis_mask", 0) & bit:
        return b if 0 <= b < n else None
    e = n if op.options.get("end_mask", 0) & bit else int(end.reshape(-1)[axis])
    e = min(e + n if e < 0 else e, n)
    return b if 0 <= b < n and e - b == 1 else None


def _mirrored_slice(ed: Editor, op: Op, source: str, axis: int, k: int) -> tuple[Op, list[Tensor]]:
    """``op`` (a one-step STRIDED_SLICE at ``k``) reading step ``n - 1 - k`` of ``source``."""
    n = ed.tensor(op.input(0)).shape[axis]
    bounds = []
    for slot, value, what in ((1, n - 1 - k, "begin"), (2, n - k, "end")):
        v = np.array(ed.value(op.inputs[slot]), np.int32).reshape(-1)
        v[axis] = value
        bounds.append(ed.const(f"{op.name}/mirrored_{what}", v, v.shape, "int32"))
    keep = ~(1 << axis)
    options = {
        **op.options,
        "begin_mask": op.options.get("begin_mask", 0) & keep,
        "end_mask": op.options.get("end_mask", 0) & keep,
    }
    inputs = (source, bounds[0].name, bounds[1].name, op.inputs[3])
    return Op(op.name, op.kind, inputs, op.outputs, options), bounds


def _backward_pair(ed: Editor, f: Op) -> tuple[Op, Op] | None:
    """(REVERSE_V2, backward LSTM) over the forward LSTM ``f``'s input, if there is one."""
    x, axis = f.inputs[0], _time_axis(f)
    for rev in ed.readers_of(x or ""):
        if reverse_axis(ed, rev) != axis:
            continue
        b = ed.sole_reader(rev.outputs[0])
        if b is None or b is f or b.inputs[0] != rev.outputs[0] or not _is_float_lstm(ed, b):
            continue
        if all(b.options.get(k) == f.options.get(k) for k in _SAME_OPTIONS):
            return rev, b
    return None


def fuse_bidirectional(ed: Editor, f: Op) -> Rewrite | None:
    """Propose one BIDIRECTIONAL_SEQUENCE_LSTM for a forward LSTM and its backward twin."""
    if not _is_float_lstm(ed, f):
        return None
    pair = _backward_pair(ed, f)
    if pair is None:
        return None
    rev, b = pair
    axis = _time_axis(b)
    y_b = b.outputs[0]
    remove = [b.name, f.name] + ([rev.name] if ed.sole_reader(rev.outputs[0]) is b else [])
    new_ops: list[Op] = []
    tensors: list[Tensor] = []
    later: list[tuple[Op, int | None, Op | None]] = []
    # the backward layer's readers: a REVERSE_V2 back along time reads the op's output as is, a
    # layout op then such a REVERSE_V2 reads it through the layout op, a one-step slice reads the
    # mirrored step; any other reader (or a graph output) needs an explicit REVERSE_V2
    bw: str | None = None  # the op's backward output, named by the reader that reverses it
    need_reverse = ed.is_output(y_b)
    for q in ed.readers_of(y_b):
        after = ed.sole_reader(q.outputs[0]) if q.kind in ("RESHAPE", "TRANSPOSE") else None
        if q.inputs[0] != y_b:
            need_reverse = True
        elif bw is None and reverse_axis(ed, q) == axis:
            bw = q.outputs[0]
            remove.append(q.name)
        elif (k := single_step(ed, q, axis)) is not None:
            later.append((q, k, None))
        elif after is not None and reverse_axis(ed, after) == layout_axis(ed, q, axis) is not None:
            later.append((q, None, after))
        else:
            need_reverse = True
    if bw is None:
        bw = ed.fresh(f"{y_b}/backward")
        tensors.append(Tensor(bw, ed.tensor(y_b).shape, "float32"))
    for q, k, after in later:
        remove.append(q.name)
        if k is not None:
            op, consts = _mirrored_slice(ed, q, bw, axis, k)
            new_ops.append(op)
            tensors += consts
        elif after is not None:
            remove.append(after.name)
            new_ops.append(Op(q.name, q.kind, (bw, *q.inputs[1:]), after.outputs, q.options))
    if need_reverse:
        new_ops.append(
            Op(op_name(ed, "REVERSE_V2", b), "REVERSE_V2", (bw, rev.inputs[1]), (y_b,), {})
        )
    inputs: list[str | None] = [None] * BIDI_INPUTS
    inputs[0] = f.inputs[0]
    inputs[1 : 1 + N_WEIGHTS] = f.inputs[1 : 1 + N_WEIGHTS]
    inputs[1 + N_WEIGHTS : 1 + 2 * N_WEIGHTS] = b.inputs[1 : 1 + N_WEIGHTS]
    inputs[35:39] = [f.inputs[18], f.inputs[19], b.inputs[18], b.inputs[19]]
    options = {
        "fused_activation_function": f.options.get("fused_activation_function", "TANH"),
        "cell_clip": f.options.get("cell_clip", 0.0),
        "proj_clip": f.options.get("proj_clip", 0.0),
        "merge_outputs": False,
        "time_major": bool(f.options.get("time_major", False)),
        "asymmetric_quantize_inputs": False,
    }
    bidi = Op(op_name(ed, BIDI, f), BIDI, tuple(inputs), (f.outputs[0], bw), options)
    return with_readers_moved(ed, remove, [bidi, *new_ops], tensors)


def with_readers_moved(
    ed: Editor, remove: list[str], new_ops: list[Op], tensors: list[Tensor]
) -> Rewrite:
    """The rewrite replacing ``remove`` by ``new_ops``, with every op that reads the new ops'
    outputs but runs before the last replaced op moved (unchanged) after the new ops: the editor
    puts new ops in the place of the last replaced op, and node order must stay an execution
    order."""
    anchor = max(ed.pos[n] for n in remove)
    produced = {t for op in new_ops for t in op.outputs}
    moved: list[Op] = []
    for op in ed.ordered_ops():
        if ed.pos[op.name] >= anchor or op.name in remove:
            continue
        if any(t in produced for t in op.inputs):
            moved.append(op)
            produced.update(op.outputs)
    return Rewrite(
        tuple(dict.fromkeys([*remove, *(op.name for op in moved)])),
        (*new_ops, *moved),
        tuple(tensors),
    )


def _same_layout(ed: Editor, a: Op, b: Op) -> bool:
    if a.kind != b.kind:
        return False
    if a.kind == "TRANSPOSE":
        pa, pb = ed.value(a.inputs[1]), ed.value(b.inputs[1])
        return pa is not None and pb is not None and pa.tolist() == pb.tolist()
    sa, sb = ed.tensor(a.outputs[0]).shape, ed.tensor(b.outputs[0]).shape
    return sa[:-1] == sb[:-1]


def merge_bidirectional(ed: Editor, cat: Op) -> Rewrite | None:
    """CONCATENATION(fw, bw) along the features of an unmerged BIDIRECTIONAL_SEQUENCE_LSTM's two
    outputs (each possibly behind the same RESHAPE / TRANSPOSE) -> ``merge_outputs=True``."""
    if len(cat.inputs) != 2 or cat.options.get("fused_activation_function", "NONE") != "NONE":
        return None
    rank = len(ed.tensor(cat.outputs[0]).shape)
    if cat.options.get("axis", 0) % max(rank, 1) != rank - 1:
        return None
    layouts: list[Op | None] = []
    sources: list[str] = []
    for t in cat.inputs:
        op = ed.producer_of(t)
        if t is None or op is None or ed.sole_reader(t) is not cat:
            return None
        layout = None
        if op.kind in ("RESHAPE", "TRANSPOSE"):
            layout, op = op, ed.producer_of(op.inputs[0])
            if op is None or ed.sole_reader(layout.inputs[0] or "") is not layout:
                return None
        if op.kind != BIDI or op.options.get("merge_outputs"):
            return None
        layouts.append(layout)
        sources.append(layout.input(0) if layout is not None else t)
    bidi = ed.producer_of(sources[0])
    if bidi is None or ed.producer_of(sources[1]) is not bidi or list(bidi.outputs) != sources:
        return None
    seq = ed.tensor(sources[0]).shape
    if not bidi.options.get("time_major") and _merged_batch_major_broken(BIDI, True, seq):
        return None
    merged_shape = (*seq[:-1], seq[-1] + ed.tensor(sources[1]).shape[-1])
    lf, lb = layouts
    remove = [bidi.name, cat.name]
    tensors: list[Tensor] = []
    if lf is None and lb is None:
        merged = cat.outputs[0]
        tail: list[Op] = []
    else:
        if lf is None or lb is None or not _same_layout(ed, lf, lb):
            return None
        if layout_axis(ed, lf, len(seq) - 1) != rank - 1:
            return None
        merged = ed.fresh(f"{cat.outputs[0]}/merged")
        tensors.append(Tensor(merged, merged_shape, "float32"))
        remove += [lf.name, lb.name]
        layout_inputs, layout_options = lf.inputs[1:], dict(lf.options)
        if lf.kind == "RESHAPE":
            shape = np.array(ed.tensor(cat.outputs[0]).shape, np.int32)
            const = ed.const(f"{cat.name}/shape", shape, shape.shape, "int32")
            tensors.append(const)
            layout_inputs = (const.name,)
            if "new_shape" in layout_options:
                layout_options["new_shape"] = tuple(int(d) for d in shape)
        tail = [Op(lf.name, lf.kind, (merged, *layout_inputs), cat.outputs, layout_options)]
    options = {**bidi.options, "merge_outputs": True}
    new = Op(bidi.name, BIDI, bidi.inputs, (merged,), options)
    return Rewrite(tuple(remove), (new, *tail), tuple(tensors))


def _merged_batch_major_broken(kind: str, merged: bool, seq: tuple[int, ...]) -> bool:
    """LiteRT's BIDIRECTIONAL_SEQUENCE_LSTM gives wrong merged outputs for batch-major sequences
    of more than one batch (measured with ai-edge-litert 2.3; time-major, or unmerged, is right)."""
    return kind == BIDI and merged and len(seq) == 3 and seq[0] > 1


def swaps_time_and_batch(ed: Editor, op: Op | None) -> bool:
    """Whether ``op`` turns a (B, T, F) sequence into (T, B, F) or back: TRANSPOSE(1, 0, 2), or a
    RESHAPE when B or T is 1 (the same bytes either way)."""
    if op is None or op.kind not in ("TRANSPOSE", "RESHAPE") or len(op.inputs) < 1:
        return False
    src, dst = ed.tensor(op.input(0)).shape, ed.tensor(op.outputs[0]).shape
    if len(src) != 3 or dst != (src[1], src[0], src[2]):
        return False
    if op.kind == "RESHAPE":
        return min(src[0], src[1]) == 1
    perm = ed.value(op.inputs[1]) if len(op.inputs) == 2 else None
    return perm is not None and [int(v) for v in perm.reshape(-1)] == [1, 0, 2]


def fold_batch_major(ed: Editor, lstm: Op) -> Rewrite | None:
    """A time-major fused LSTM between layout ops from and back to batch major (Keras 3 puts a
    TRANSPOSE, or a RESHAPE for batch 1, on each side of its loop) -> ``time_major=False``."""
    if not lstm.options.get("time_major") or not lstm.inputs or lstm.inputs[0] is None:
        return None
    into = ed.producer_of(lstm.inputs[0])
    if not swaps_time_and_batch(ed, into) or ed.sole_reader(lstm.inputs[0]) is not lstm:
        return None
    assert into is not None
    outs = [ed.sole_reader(t) for t in lstm.outputs]
    if not all(swaps_time_and_batch(ed, o) for o in outs):
        return None
    remove = [into.name, lstm.name, *(o.name for o in outs if o is not None)]
    inputs = (into.inputs[0], *lstm.inputs[1:])
    outputs = tuple(o.outputs[0] for o in outs if o is not None)
    merged = bool(lstm.options.get("merge_outputs"))
    if _merged_batch_major_broken(lstm.kind, merged, ed.tensor(into.input(0)).shape):
        return None
    options = {**lstm.options, "time_major": False}
    new = Op(lstm.name, lstm.kind, inputs, outputs, options, intermediates=lstm.intermediates)
    return Rewrite(tuple(remove), (new,))


RULES: list[Rule] = [
    Rule("bidirectional_lstm", frozenset({UNI}), fuse_bidirectional),
    Rule("bidirectional_merge", frozenset({"CONCATENATION"}), merge_bidirectional),
    Rule("lstm_batch_major", frozenset({UNI, BIDI}), fold_batch_major),
]

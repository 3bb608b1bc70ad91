"""Data-movement, shape and reduction kernels: reshape, slice, gather, pad, concat, reduce.

Pure data movement is ``raw`` (stored values in, stored values out), as in TFLite, whose kernels
copy bytes and never requantize even when input and output scales differ.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tacopt.fusion.ir import numpy_dtype
from tacopt.fusion.kernels.common import OpCall, axis_of, kernel_table

KERNELS, kernel = kernel_table()


# --------------------------------------------------------------------------------------------
# shapes
# --------------------------------------------------------------------------------------------


@kernel("RESHAPE", raw=True)
def _reshape(call: OpCall) -> np.ndarray:
    x = call.input(0)
    shape_in = call.optional(1)
    if shape_in is not None and np.asarray(shape_in).ndim == 1:
        shape = [int(v) for v in np.asarray(shape_in)]
    elif call.option("new_shape"):
        shape = list(call.option("new_shape"))
    else:
        shape = list(call.out_shape)
    try:
        return x.reshape(shape)
    except ValueError as e:
        raise call.fail(f"cannot reshape {x.shape} to {shape}") from e


@kernel("SQUEEZE", raw=True)
def _squeeze(call: OpCall) -> np.ndarray:
    x = call.input(0)
    dims = call.option("squeeze_dims") or ()
    if not dims:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(axis_of(int(d), x.ndim, call) for d in dims))


@kernel("EXPAND_DIMS", raw=True)
def _expand_dims(call: OpCall) -> np.ndarray:
    x = call.input(0)
    axis = call.ints(1)[0]
    return np.expand_dims(x, axis if axis >= 0 else axis + x.ndim + 1)


@kernel("TRANSPOSE", raw=True)
def _transpose(call: OpCall) -> np.ndarray:
    return np.transpose(call.input(0), call.ints(1))


@kernel("SHAPE", raw=True)
def _shape(call: OpCall) -> np.ndarray:
    return np.array(call.input(0).shape, dtype=numpy_dtype(call.output_tensors[0].dtype))


@kernel("RANK", raw=True)
def _rank(call: OpCall) -> np.ndarray:
    return np.array(call.input(0).ndim, dtype=np.int32)


@kernel("FILL")
def _fill(call: OpCall) -> np.ndarray:
    return np.full(call.ints(0), call.input(1))


@kernel("ZEROS_LIKE")
def _zeros_like(call: OpCall) -> np.ndarray:
    return np.zeros_like(call.input(0))


@kernel("ONES_LIKE")
def _ones_like(call: OpCall) -> np.ndarray:
    return np.ones_like(call.input(0))


@kernel("RANGE")
def _range(call: OpCall) -> np.ndarray:
    start, limit, delta = (call.input(i).reshape(()).item() for i in range(3))
    return np.arange(start, limit, delta, dtype=numpy_dtype(call.output_tensors[0].dtype))


@kernel("TILE", raw=True)
def _tile(call: OpCall) -> np.ndarray:
    return np.tile(call.input(0), call.ints(1))


@kernel("BROADCAST_TO", raw=True)
def _broadcast_to(call: OpCall) -> np.ndarray:
    return np.broadcast_to(call.input(0), call.ints(1))


@kernel("REVERSE_V2", raw=True)
def _reverse(call: OpCall) -> np.ndarray:
    x = call.input(0)
    return np.flip(x, axis=tuple(axis_of(a, x.ndim, call) for a in call.ints(1)))


# --------------------------------------------------------------------------------------------
# joining and splitting
# --------------------------------------------------------------------------------------------


@kernel("CONCATENATION")
def _concat(call: OpCall) -> np.ndarray:
    xs = [x for x in call.inputs if x is not None]
    return np.concatenate(xs, axis=axis_of(call.option("axis", 0), xs[0].ndim, call))


@kernel("PACK", raw=True)
def _pack(call: OpCall) -> np.ndarray:
    xs = [x for x in call.inputs if x is not None]
    return np.stack(xs, axis=axis_of(call.option("axis", 0), xs[0].ndim + 1, call))


@kernel("UNPACK", raw=True)
def _unpack(call: OpCall) -> list[np.ndarray]:
    x = call.input(0)
    axis = axis_of(call.option("axis", 0), x.ndim, call)
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


@kernel("SPLIT", raw=True)
def _split(call: OpCall) -> list[np.ndarray]:
    x = call.input(1)  # SPLIT takes (axis, value)
    axis = axis_of(call.ints(0)[0], x.ndim, call)
    n = call.option("num_splits", len(call.output_tensors))
    if x.shape[axis] % n:
        raise call.fail(f"dimension {x.shape[axis]} does not split into {n}")
    return np.split(x, n, axis=axis)


@kernel("SPLIT_V", raw=True)
def _split_v(call: OpCall) -> list[np.ndarray]:
    x = call.input(0)
    sizes = call.ints(1)
    axis = axis_of(call.ints(2)[0], x.ndim, call)
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


# --------------------------------------------------------------------------------------------
# slicing and gathering
# --------------------------------------------------------------------------------------------


@kernel("SLICE", raw=True)
def _slice(call: OpCall) -> np.ndarray:
    x = call.input(0)
    begin, size = call.ints(1), call.ints(2)
    idx = tuple(slice(b, d if s == -1 else b + s) for b, s, d in zip(begin, size, x.shape))
    return x[idx]


@kernel("STRIDED_SLICE", raw=True)
def _strided_slice(call: OpCall) -> np.ndarray:
    x = call.input(0)
    begin, end = call.ints(1), call.ints(2)
    strides = call.ints(3) if call.optional(3) is not None else [1] * len(begin)
    bits = {
        k: int(call.option(k, 0) or 0)
        for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    }
    offset = bool(call.option("offset", False))
    index: list[Any] = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):

        def bit(name: str, i: int = i) -> bool:
            return bool(bits[name] >> i & 1)

        if bit("ellipsis_mask"):
            index.append(Ellipsis)
        elif bit("new_axis_mask"):
            index.append(np.newaxis)
        elif bit("shrink_axis_mask"):
            index.append(b)
        else:
            if s == 0:
                raise call.fail("stride 0")
            stop = b + e if offset else e
            index.append(
                slice(None if bit("begin_mask") else b, None if bit("end_mask") else stop, s)
            )
    try:
        return x[tuple(index)]
    except IndexError as err:
        raise call.fail(f"index {begin} out of range for shape {x.shape}") from err


def _gather(params: np.ndarray, idx: np.ndarray, axis: int, batch_dims: int) -> np.ndarray:
    if batch_dims == 0:
        return np.take(params, idx, axis=axis)
    return np.stack([_gather(p, i, axis - 1, batch_dims - 1) for p, i in zip(params, idx)], axis=0)


@kernel("GATHER", raw=True)
def _gather_kernel(call: OpCall) -> np.ndarray:
    params, idx = call.input(0), call.input(1).astype(np.int64)
    axis = axis_of(call.option("axis", 0), params.ndim, call)
    batch_dims = int(call.option("batch_dims", 0) or 0)
    if batch_dims < 0:
        batch_dims += idx.ndim
    if idx.size and (idx.min() < 0 or idx.max() >= params.shape[axis]):
        raise call.fail(f"index out of range [0, {params.shape[axis]})")
    return _gather(params, idx, axis, batch_dims)


@kernel("GATHER_ND", raw=True)
def _gather_nd(call: OpCall) -> np.ndarray:
    params, idx = call.input(0), call.input(1).astype(np.int64)
    k = idx.shape[-1]
    return params[tuple(idx[..., j] for j in range(k))]


@kernel("EMBEDDING_LOOKUP")
def _embedding_lookup(call: OpCall) -> np.ndarray:
    ids, table = call.input(0).astype(np.int64), call.input(1)
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise call.fail(f"id out of range [0, {table.shape[0]})")
    return table[ids]


@kernel("ONE_HOT")
def _one_hot(call: OpCall) -> np.ndarray:
    idx, depth = call.input(0).astype(np.int64), call.ints(1)[0]
    on, off = call.input(2), call.input(3)
    axis = call.option("axis", -1)
    hot = np.arange(depth) == idx[..., None]
    out = np.where(hot, on, off)
    return np.moveaxis(out, -1, axis if axis >= 0 else -1)


# --------------------------------------------------------------------------------------------
# padding and layout
# --------------------------------------------------------------------------------------------


@kernel("PAD", "PADV2", raw=True)
def _pad(call: OpCall) -> np.ndarray:
    x = call.input(0)
    pads = np.asarray(call.input(1)).reshape(-1, 2).tolist()
    value = call.optional(2)
    if value is not None:
        fill = np.asarray(value).reshape(-1)[0]  # stored form: already quantized if x is
    else:
        qp = call.output_tensors[0].quantization
        fill = qp.zero_point[0] if qp is not None and qp.zero_point else 0  # real zero
    return np.pad(x, pads, constant_values=fill)


@kernel("MIRROR_PAD", raw=True)
def _mirror_pad(call: OpCall) -> np.ndarray:
    pads = np.asarray(call.input(1)).reshape(-1, 2).tolist()
    if str(call.option("mode", "REFLECT")) == "SYMMETRIC":
        return np.pad(call.input(0), pads, mode="symmetric")
    return np.pad(call.input(0), pads, mode="reflect")


@kernel("DEPTH_TO_SPACE", raw=True)
def _depth_to_space(call: OpCall) -> np.ndarray:
    x, b = call.input(0), int(call.option("block_size"))
    n, h, w, c = x.shape
    y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h * b, w * b, c // (b * b))


@kernel("SPACE_TO_DEPTH", raw=True)
def _space_to_depth(call: OpCall) -> np.ndarray:
    x, b = call.input(0), int(call.option("block_size"))
    n, h, w, c = x.shape
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, h // b, w // b, b * b * c)


# --------------------------------------------------------------------------------------------
# reductions
# --------------------------------------------------------------------------------------------

_REDUCERS = {
    "MEAN": np.mean,
    "SUM": np.sum,
    "REDUCE_MAX": np.max,
    "REDUCE_MIN": np.min,
    "REDUCE_PROD": np.prod,
    "REDUCE_ANY": np.any,
    "REDUCE_ALL": np.all,
}


def _reducer(fn):
    def run(call: OpCall) -> np.ndarray:
        x = call.input(0)
        axes = tuple(sorted({axis_of(a, x.ndim, call) for a in call.ints(1)}))
        keep = bool(call.option("keep_dims", False))
        return np.asarray(fn(x, axis=axes, keepdims=keep))

    return run


for _kind, _fn in _REDUCERS.items():
    kernel(_kind)(_reducer(_fn))


@kernel("ARG_MAX", "ARG_MIN")
def _arg(call: OpCall) -> np.ndarray:
    x = call.input(0)
    axis = axis_of(call.ints(1)[0], x.ndim, call)
    fn = np.argmax if call.op.kind == "ARG_MAX" else np.argmin
    return fn(x, axis=axis)


@kernel("CUMSUM")
def _cumsum(call: OpCall) -> np.ndarray:
    x = call.input(0)
    axis = axis_of(call.ints(1)[0], x.ndim, call)
    if call.option("reverse", False):
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    if call.option("exclusive", False):
        out = np.concatenate([np.zeros_like(np.take(out, [0], axis)), out], axis)
        out = np.take(out, range(x.shape[axis]), axis)
    return np.flip(out, axis) if call.option("reverse", False) else out


@kernel("SCATTER_ND")
def _scatter_nd(call: OpCall) -> np.ndarray:
    idx, updates, shape = call.input(0).astype(np.int64), call.input(1), call.ints(2)
    out = np.zeros(shape, dtype=updates.dtype)
    k = idx.shape[-1]
    flat_idx = idx.reshape(-1, k)
    flat_upd = updates.reshape((flat_idx.shape[0],) + tuple(shape[k:]))
    np.add.at(out, tuple(flat_idx.T), flat_upd)  # duplicates add up, as in TFLite
    return out


@kernel("DYNAMIC_UPDATE_SLICE")
def _dynamic_update_slice(call: OpCall) -> np.ndarray:
    x, update = call.input(0), call.input(1)
    start = [
        min(max(s, 0), d - u) for s, d, u in zip(call.ints(2), x.shape, update.shape)
    ]  # clamped so the update fits, as in TFLite
    out = np.array(x)
    out[tuple(slice(s, s + u) for s, u in zip(start, update.shape))] = update
    return out

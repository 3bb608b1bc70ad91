"""Which regimes the sweep's samplers cover: each sampler drawn N times (built as a learn
builds it, int8 retyping included, nothing measured), each drawn op placed on the axes along
which real models vary its kind, and the values no sampler reaches printed as gaps.

    python -m tacopt.benchmarks check_sampler_axes -n 200            # every kind of AXES
    python -m tacopt.benchmarks check_sampler_axes -n 200 --kinds SOFTMAX,PAD --strict

The axes (docs/cost-models-design.md, "The regimes a learn must cover") are generic, from how
kernels run rather than from any model's op list: rank, the bytes an op touches (tens of bytes
to MBs), the innermost width (1-8, 9-15, 16-64, 65-127, >= 128 elements: a kernel's run),
whether an axis is long (>= 1,024: a heatmap's pixels, a detector's anchors), int8 or float;
and per kind the parameters that select another kernel path (a softmax's ``beta``, a resize's
``align_corners`` / ``half_pixel_centers``, a pad's axes and mode, a reduction's axes and
``keep_dims``, a pool's window and strides, a slice's strides, a transpose's permutation, a
matrix product's constant operand and flags, a concatenation's axis, parts and constants, a
broadcast's form). Whether the XNNPACK delegate takes an op is not known without running it:
each measured record says (``delegated``), so it is not an axis here. ``--strict`` exits 1
when a required value is missing (the regimes the table names and no sampler draws).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import networkx as nx
import numpy as np

from tacopt.cost_models.learned.sampling.samplers import SAMPLERS
from tacopt.cost_models.learned.sampling.samplers_move import MOVE_PRIOR
from tacopt.cost_models.learned.sampling.samplers_net import NET_PRIOR, NET_RNN_PRIOR
from tacopt.cost_models.learned.sampling.samplers_tail import TAIL_PRIOR
from tacopt.cost_models.learned.sampling.sweep import BASE_SAMPLERS, REGIMES_PRIOR, iter_samples
from tacopt.fusion.ir import Op, Tensor

Info = Mapping[str, Any]


def _bytes_bucket(n: int) -> str:
    return "<1K" if n < 1024 else "1K-64K" if n < 65536 else "64K-1M" if n < 2**20 else ">=1M"


def _width_bucket(n: int) -> str:
    if n >= 1024:
        return ">=1024"
    return "1-8" if n <= 8 else "9-15" if n < 16 else "16-64" if n <= 64 else (
        "65-127" if n < 128 else "128-1023")  # fmt: skip


def _const(t: Tensor | None) -> list[int] | None:
    if t is None or t.buffer is None or t.dtype not in ("int32", "int64"):
        return None
    data = np.frombuffer(t.buffer.tobytes(), np.int32 if t.dtype == "int32" else np.int64)
    return [int(v) for v in data]


def op_info(G: nx.MultiDiGraph) -> Info:
    """The single op of a sampled graph and its tensors (activations and constants apart)."""
    name = next(n for n in G if G.nodes[n]["op"].kind not in ("QUANTIZE", "DEQUANTIZE")
                or len(G) == 1)  # fmt: skip
    op: Op = G.nodes[name]["op"]
    tensors = G.graph["tensors"]
    ins = [tensors[t] if t else None for t in op.inputs]
    outs = [tensors[t] for t in op.outputs]
    acts = [t for t in ins if t is not None and t.buffer is None]
    return {"op": op, "ins": ins, "outs": outs, "acts": acts or outs}


def _generic(info: Info) -> dict[str, str]:
    x, outs = info["acts"][0], info["outs"]
    touched = [*info["acts"], *outs]
    biggest = max(t.nbytes for t in touched)
    dims = [d for t in touched for d in t.shape]
    return {
        "rank": str(min(len(x.shape), 5)) if len(x.shape) < 5 else "5+",
        "bytes": _bytes_bucket(biggest),
        "inner": _width_bucket(max(x.shape[-1], 1) if x.shape else 1),
        "long_axis": "yes" if dims and max(dims) >= 1024 else "no",
        "dtype": "int8" if x.dtype in ("int8", "uint8") else "float",
    }


def _softmax(info: Info) -> dict[str, str]:
    beta = "1" if float(info["op"].options.get("beta", 1.0)) == 1.0 else "other"
    axis = _width_bucket(info["ins"][0].shape[-1])
    return {"beta": beta, "beta/axis": f"{beta}/{axis}"}


def _resize(info: Info) -> dict[str, str]:
    o = info["op"].options
    mode = "align" if o.get("align_corners") else "half" if o.get("half_pixel_centers") else "none"
    x, y = info["ins"][0].shape, info["outs"][0].shape
    up = y[1] > x[1]
    integer = up and y[1] % x[1] == 0 and y[2] % max(x[2], 1) == 0
    factor = "up, integer" if integer else "up, other" if up else "down/same"
    return {"coords": mode, "factor": "up" if up else "down/same",
            "coords/factor/inner": f"{mode}/{factor}/{_width_bucket(x[-1])}"}  # fmt: skip


def _pad(info: Info) -> dict[str, str]:
    pads = _const(info["ins"][1]) or []
    rank = len(info["ins"][0].shape)
    padded = [a for a in range(rank) if sum(pads[2 * a : 2 * a + 2]) > 0]
    where = "channels" if padded == [rank - 1] else "inner+outer" if rank - 1 in padded else (
        "outer")  # fmt: skip
    out = {"padded": where}
    if "mode" in info["op"].options:
        out["mode"] = str(info["op"].options["mode"])
    return out


def _reduce(info: Info) -> dict[str, str]:
    axes = _const(info["ins"][1]) or []
    rank = len(info["ins"][0].shape)
    last = (rank - 1) in {a % rank for a in axes}
    kept = "keep" if info["op"].options.get("keep_dims") else "drop"
    if info["op"].kind == "ARG_MAX":
        kept = "n/a"
    shape = info["ins"][0].shape
    reduced = math.prod(shape[a % rank] for a in axes) if axes else 1
    return {
        "axes": "last" if last else "not last",
        "keep_dims": kept,
        "reduced": _width_bucket(reduced),
    }


def _pool(info: Info) -> dict[str, str]:
    o = info["op"].options
    fh, fw = o.get("filter_height", 1), o.get("filter_width", 1)
    x = info["ins"][0].shape
    window = "global" if (fh, fw) == (x[1], x[2]) and fh > 1 else (
        "square" if fh == fw else "1xk/kx1")  # fmt: skip
    stride = "equal" if o.get("stride_h") == o.get("stride_w") else "unequal"
    halves = (fh, fw, o.get("stride_h"), o.get("stride_w")) == (2, 2, 2, 2)
    return {
        "window": window,
        "stride": stride,
        "2x2/2 by inner": f"2x2/2 {_width_bucket(x[-1])}" if halves else "other",
    }


def _strided_slice(info: Info) -> dict[str, str]:
    strides = _const(info["ins"][3]) or [1]
    form = "reversed" if min(strides) < 0 else "strided" if max(strides) > 1 else "contiguous"
    shrink = "shrink" if info["op"].options.get("shrink_axis_mask") else "no shrink"
    return {"strides": form, "shrink": shrink}


def _transpose(info: Info) -> dict[str, str]:
    perm = _const(info["ins"][1]) or []
    shape = info["ins"][0].shape
    moved = [i for i, p in enumerate(perm) if p != i and shape[p] > 1]
    rank = len(perm)
    if not moved:
        form = "unit axes only"
    elif perm and perm[-1] == rank - 1:
        form = "inner kept"
    else:
        form = "inner moved"
    return {"perm": form, "out inner": _width_bucket(info["outs"][0].shape[-1])}


def _batch_matmul(info: Info) -> dict[str, str]:
    o, b = info["op"].options, info["ins"][1]
    y = info["outs"][0].shape
    return {
        "rhs": "constant" if b is not None and b.buffer is not None else "runtime",
        "adjoint": "yes" if o.get("adj_x") or o.get("adj_y") else "no",
        "n": "1-4" if y[-1] <= 4 else ">4",
        "k": ">=1024" if info["ins"][0].shape[-1] >= 1024 else "<1024",
    }


def _concat(info: Info) -> dict[str, str]:
    ins = [t for t in info["ins"] if t is not None]
    rank, axis = len(ins[0].shape), int(info["op"].options.get("axis", 0))
    sizes = [t.shape[axis] for t in ins]
    return {
        "axis": "last" if axis % rank == rank - 1 else "not last",
        "parts": "unequal (>= 8x)" if max(sizes) >= 8 * min(sizes) else "alike",
        "parts/inner": ("unequal" if max(sizes) >= 8 * min(sizes) else "alike")
        + "/"
        + _width_bucket(ins[0].shape[-1]),
        "constant part": "yes" if any(t.buffer is not None for t in ins) else "no",
    }


def _broadcast(info: Info) -> dict[str, str]:
    ins = [t for t in info["ins"][:2] if t is not None]
    if len(ins) < 2:
        return {}
    a, b = ins
    y = info["outs"][0].shape
    if info["op"].inputs[0] == info["op"].inputs[1]:
        return {"broadcast": "same", "operand": "the same tensor"}
    if a.shape == b.shape:
        form = "same"
    elif math.prod(b.shape) == 1 or math.prod(a.shape) == 1:
        form = "scalar"
    elif b.shape[-1] == y[-1] and math.prod(b.shape) == y[-1]:
        form = "per inner (channel)"
    elif b.shape[-1] == 1:
        form = "inner broadcast"
    else:
        form = "other"
    return {"broadcast": form, "operand": "constant" if b.buffer is not None else "runtime"}


def _conv(info: Info) -> dict[str, str]:
    w = info["ins"][1].shape
    n = info["ins"][0].shape[0]
    return {
        "out channels": _width_bucket(w[0]),
        "kernel": "1x1" if w[1] == w[2] == 1 else "square" if w[1] == w[2] else "1xk/kx1",
        # a dilated convolution written out (SPACE_TO_BATCH_ND) runs over block**2 images
        "batch": "1" if n == 1 else "2-15" if n < 16 else "16-99" if n < 100 else ">=100",
    }


def _split_v(info: Info) -> dict[str, str]:
    x = info["ins"][0].shape
    axis = int((_const(info["ins"][2]) or [0])[0]) % len(x)
    sizes = [t.shape[axis] for t in info["outs"]]
    return {
        "axis": "last" if axis == len(x) - 1 else "not last",
        "parts": "unequal" if len(set(sizes)) > 1 else "alike",
    }


def _topk(info: Info) -> dict[str, str]:
    n, k = info["ins"][0].shape[-1], info["outs"][0].shape[-1]
    return {"k": "1-8" if k <= 8 else "9-99" if k < 100 else ">=100", "n": _width_bucket(n)}


#: Per kind: its own axes (a function of the drawn op) and the values every learn must draw,
#: the generic axes' included (``rank``, ``bytes``, ``inner``, ``long_axis``, ``dtype``).
AXES: dict[str, tuple[Callable[[Info], dict[str, str]] | None, dict[str, tuple[str, ...]]]] = {
    "TRANSPOSE": (
        _transpose,
        {
            "rank": ("2", "3", "4", "5+"),
            "inner": ("1-8", "16-64", "128-1023"),
            "out inner": ("1-8", "16-64", "128-1023", ">=1024"),
            "perm": ("inner kept", "inner moved", "unit axes only"),
        },
    ),
    "RESHAPE": (None, {"rank": ("2", "3", "4"), "bytes": ("<1K", "64K-1M", ">=1M")}),
    "EXPAND_DIMS": (None, {"rank": ("1", "2", "3")}),
    "SQUEEZE": (None, {"rank": ("4",)}),
    "PAD": (
        _pad,
        {
            "rank": ("3", "4", "5+"),
            "padded": ("outer", "channels"),
            "inner": ("1-8", "16-64", "128-1023"),
        },
    ),
    "MIRROR_PAD": (_pad, {"rank": ("3", "4"), "mode": ("REFLECT", "SYMMETRIC")}),
    "CONCATENATION": (
        _concat,
        {
            "rank": ("2", "3", "4"),
            "axis": ("last", "not last"),
            "parts": ("alike", "unequal (>= 8x)"),
            "constant part": ("yes", "no"),
            "inner": ("1-8", "128-1023"),
            "parts/inner": ("alike/16-64", "alike/128-1023", "unequal/128-1023"),
        },
    ),
    "STRIDED_SLICE": (
        _strided_slice,
        {
            "rank": ("1", "2", "3", "4", "5+"),
            "strides": ("contiguous", "strided", "reversed"),
            "shrink": ("shrink", "no shrink"),
        },
    ),
    "SLICE": (None, {"rank": ("2", "3", "4")}),
    "SPLIT": (None, {"rank": ("2", "3", "4")}),
    "DEPTH_TO_SPACE": (None, {"bytes": ("1K-64K", "64K-1M", ">=1M")}),
    "SOFTMAX": (
        _softmax,
        {
            "rank": ("2", "3", "4"),
            "beta/axis": (
                "1/16-64",
                "1/128-1023",
                "1/>=1024",
                "other/16-64",
                "other/128-1023",
                "other/>=1024",
            ),
        },
    ),
    "LOG_SOFTMAX": (_softmax, {"rank": ("2", "3"), "inner": ("16-64", "128-1023", ">=1024")}),
    "BATCH_MATMUL": (
        _batch_matmul,
        {
            "rhs": ("constant", "runtime"),
            "adjoint": ("yes", "no"),
            "n": ("1-4", ">4"),
            "k": (">=1024", "<1024"),
        },
    ),
    "REDUCE_MAX": (
        _reduce,
        {
            "axes": ("last", "not last"),
            "keep_dims": ("keep", "drop"),
            "reduced": ("1-8", "16-64", "128-1023", ">=1024"),
        },
    ),
    "SUM": (_reduce, {"axes": ("last", "not last"), "keep_dims": ("keep", "drop")}),
    "MEAN": (_reduce, {"axes": ("last", "not last"), "keep_dims": ("keep", "drop")}),
    "ARG_MAX": (_reduce, {"axes": ("last", "not last")}),
    "MAX_POOL_2D": (
        _pool,
        {
            "window": ("square", "1xk/kx1", "global"),
            "2x2/2 by inner": ("2x2/2 1-8", "2x2/2 9-15", "2x2/2 16-64", "2x2/2 128-1023"),
            "stride": ("equal", "unequal"),
            "inner": ("1-8", "9-15", "16-64"),
        },
    ),
    "AVERAGE_POOL_2D": (_pool, {"window": ("square", "global"), "inner": ("1-8", "128-1023")}),
    "RESIZE_NEAREST_NEIGHBOR": (
        _resize,
        {
            "coords": ("align", "half", "none"),
            "inner": ("1-8", "9-15", "16-64", "128-1023"),
            # a feature pyramid's / UpSampling2D's: by 2 of a wide map, default coordinates
            "coords/factor/inner": ("none/up, integer/16-64", "none/up, integer/128-1023"),
            "dtype": ("float", "int8"),
        },
    ),
    "RESIZE_BILINEAR": (
        _resize,
        {"coords": ("align", "half", "none"), "inner": ("1-8", "16-64", "128-1023")},
    ),
    "MUL": (
        _broadcast,
        {
            "broadcast": ("same", "scalar", "per inner (channel)", "inner broadcast"),
            "operand": ("constant", "runtime", "the same tensor"),
        },
    ),
    "ADD": (
        _broadcast,
        {
            "broadcast": ("same", "scalar", "per inner (channel)"),
            "operand": ("constant", "runtime", "the same tensor"),
        },
    ),
    "GREATER": (_broadcast, {"bytes": ("<1K", "1K-64K"), "inner": ("1-8",)}),
    "SELECT_V2": (None, {"bytes": ("<1K", "1K-64K", "64K-1M")}),
    "SHAPE": (None, {"rank": ("1", "2", "3", "4")}),
    "CAST": (None, {"bytes": ("<1K",)}),
    "LOGISTIC": (None, {"inner": ("1-8", "16-64", "128-1023"), "bytes": ("1K-64K", ">=1M")}),
    "CONV_2D": (
        _conv,
        {
            "out channels": ("1-8", "16-64", "128-1023"),
            "kernel": ("1x1", "square", "1xk/kx1"),
            "batch": ("1", "2-15", "16-99", ">=100"),
        },
    ),
    "SPACE_TO_BATCH_ND": (None, {"bytes": ("1K-64K", "64K-1M", ">=1M"), "dtype": ("float",)}),
    "BATCH_TO_SPACE_ND": (None, {"bytes": ("1K-64K", "64K-1M"), "dtype": ("float",)}),
    "SPLIT_V": (
        _split_v,
        {"axis": ("last", "not last"), "parts": ("unequal",), "long_axis": ("yes", "no")},
    ),
    "TOPK_V2": (_topk, {"k": ("1-8", "9-99", ">=100"), "n": ("16-64", "128-1023", ">=1024")}),
    "TRANSPOSE_CONV": (_conv, {"out channels": ("1-8", "16-64", "128-1023")}),
    "PRELU": (None, {"inner": ("1-8", "16-64", "128-1023")}),
}


def prior_of(sampler: str) -> str:
    """The sweep's prior (learn phase) that draws ``sampler``."""
    for name, prior in (("move", MOVE_PRIOR), ("tail", TAIL_PRIOR), ("net", NET_PRIOR),
                        ("net-rnn", NET_RNN_PRIOR)):  # fmt: skip
        if sampler in prior:
            return name
    if sampler in REGIMES_PRIOR:
        return "regimes"
    return "generic" if sampler in BASE_SAMPLERS else "adapt only"


def draw(n: int, samplers: Sequence[str], *, seed: int) -> dict[str, list[tuple[str, Info]]]:
    """``n`` ops of each sampler, built as a learn builds them, by the kind of the op drawn."""
    drawn: dict[str, list[tuple[str, Info]]] = defaultdict(list)
    for name in samplers:
        for _, build in iter_samples(n, seed=seed, kinds=[name]):
            G = build()
            if len(G) != 1:
                continue  # a chain: not a single op
            info = op_info(G)
            drawn[info["op"].kind].append((name, info))
    return drawn


def coverage(drawn: Sequence[tuple[str, Info]], kind: str) -> dict[str, Counter[str]]:
    """Each axis of ``kind`` and how many drawn ops took each of its values."""
    own = AXES.get(kind, (None, {}))[0]
    axes: dict[str, Counter[str]] = defaultdict(Counter)
    for _, info in drawn:
        for axis, value in {**_generic(info), **(own(info) if own else {})}.items():
            axes[axis][value] += 1
    return axes


def gaps(axes: Mapping[str, Counter[str]], kind: str) -> list[str]:
    """``axis=value`` pairs the table requires of ``kind`` that no drawn op took."""
    required = AXES.get(kind, (None, {}))[1]
    return [
        f"{a}={v}"
        for a, values in required.items()
        for v in values
        if not axes.get(a, Counter())[v]
    ]


def thin(axes: Mapping[str, Counter[str]], kind: str, *, share: float = 0.02) -> list[str]:
    """Required ``axis=value`` pairs of ``kind`` drawn, but by less than ``share`` of its ops."""
    required = AXES.get(kind, (None, {}))[1]
    out = []
    for a, values in required.items():
        total = sum(axes.get(a, Counter()).values())
        out += [f"{a}={v}" for v in values if 0 < axes.get(a, Counter())[v] < share * total]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=200, help="ops drawn per sampler")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kinds", default=None, help="comma-separated op kinds (default: AXES')")
    p.add_argument("--strict", action="store_true", help="exit 1 when a required value is missing")
    args = p.parse_args(argv)
    kinds = args.kinds.split(",") if args.kinds else sorted(AXES)
    unknown = [k for k in kinds if k not in AXES]
    if unknown:
        print(f"check_sampler_axes: unknown kind {unknown[0]!r} (known: {', '.join(sorted(AXES))})",
              file=sys.stderr)  # fmt: skip
        return 2
    samplers = [s for s in sorted(SAMPLERS) if s.split("_MOVE")[0] in kinds or any(
        s == k or s.startswith(k + "_") for k in kinds)]  # fmt: skip
    drawn = draw(args.n, samplers, seed=args.seed)
    missing = 0
    for kind in kinds:
        ops = drawn.get(kind, [])
        by = Counter(f"{s} ({prior_of(s)})" for s, _ in ops)
        print(f"{kind}: {len(ops)} ops from {', '.join(f'{s} {c}' for s, c in sorted(by.items()))}"
              if ops else f"{kind}: no sampler draws it")  # fmt: skip
        axes = coverage(ops, kind)
        for axis, counts in sorted(axes.items()):
            print(f"    {axis:14s} " + ", ".join(f"{v} {c}" for v, c in sorted(counts.items())))
        found = gaps(axes, kind)
        missing += len(found)
        if found:
            print("    GAPS: " + ", ".join(found))
        few = thin(axes, kind)
        if few:
            print("    THIN (< 2 % of its ops): " + ", ".join(few))
    print(f"{missing} required values missing over {len(kinds)} kinds")
    return 1 if args.strict and missing else 0


if __name__ == "__main__":
    raise SystemExit(main())

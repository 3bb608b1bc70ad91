"""What the learned model sees of an op configuration: the tree features (:func:`op_vector`,
names in :data:`FEATURES`), the group-fit design row, and data movement (bytes, contiguous runs)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tacopt.cost_models.learned.fitting.runs import REDUCTIONS, run_terms

_ITYPES = {"FLOAT": 0, "QUANTIZED_INT8": 1, "QUANTIZED_UINT8": 2, "HYBRID": 3}


_DTYPES = {"float32": 0, "int8": 1, "uint8": 2, "int32": 3, "bool": 4, "int64": 5, "int16": 6}


_ITEMSIZE = {"int8": 1, "uint8": 1, "bool": 1, "int16": 2, "float16": 2, "int64": 8}


_ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU6": 2, "RELU_N1_TO_1": 3, "TANH": 4}


_KERNELS = ("CONV_2D", "CONV_2D_GROUPED", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV")


def fc_as_pointwise_conv(features: Mapping[str, Any]) -> dict[str, Any] | None:
    """A FULLY_CONNECTED as the 1x1 CONV_2D XNNPACK runs it with (the same GEMM micro-kernels:
    M = rows, K = input features, N = output features), or None when it is not a plain
    ``(N, K)`` weight.

    >>> fc = {"kind": "FULLY_CONNECTED", "inference_type": "FLOAT", "options": {},
    ...       "inputs": [[[1, 197, 768], "float32", False], [[3072, 768], "float32", True]],
    ...       "outputs": [[[1, 197, 3072], "float32", False]]}
    >>> c = fc_as_pointwise_conv(fc)
    >>> c["kind"], c["inputs"][0][0], c["inputs"][1][0], c["outputs"][0][0]
    ('CONV_2D', [1, 1, 197, 768], [3072, 1, 1, 768], [1, 1, 197, 3072])
    """
    ins = features.get("inputs") or []
    outs = features.get("outputs") or []
    if len(ins) < 2 or not ins[0] or not ins[1] or len(ins[1][0]) != 2 or not outs or not outs[0]:
        return None
    x, w = ins[0], ins[1]
    n, k = (max(int(d), 1) for d in w[0])
    m = math.prod(max(int(d), 1) for d in x[0]) // k
    conv_in = [[[1, 1, m, k], *x[1:]], [[n, 1, 1, k], *w[1:]], *ins[2:]]
    opts = features.get("options") or {}
    return {
        **features,
        "kind": "CONV_2D",
        "inputs": conv_in,
        "outputs": [[[1, 1, m, n], *outs[0][1:]]],
        "options": {"stride_h": 1, "stride_w": 1, "dilation_h_factor": 1,
                    "dilation_w_factor": 1, "padding": "VALID",
                    "fused_activation_function": opts.get("fused_activation_function", "NONE")},
    }  # fmt: skip


def kernel_kind(
    features: Mapping[str, Any],
    *,
    depthwise: bool = True,
    gemm_rows: bool = True,
    strided: bool = True,
    softmax_beta: bool = True,
) -> str:
    """The kind of kernel an op runs: its kind, except for a CONV_2D whose filter sees a slice
    of the input channels (``groups`` > 1, ConvNeXt / ResNeXt exports):

    - with one input channel per group (and whole output channels per group), XNNPACK runs it
      as a depthwise convolution: ``"DEPTHWISE_CONV_2D"`` (version 9; with
      ``depthwise=False``, as version 8, a ``"CONV_2D_GROUPED"``). In the shipped model's
      records (GMAC/s, float / int8) it ran 3x3 at 17.7 / 14.4 against DEPTHWISE_CONV_2D's
      16.2 / 14.9, 5x5 at 14.6 / 15.5 against 12.2 / 15.9, 7x7 at 1.9 / 0.41 against
      1.8 / 0.41; a grouped CONV_2D of more channels per group at 15-40;
      as ``CONV_2D_GROUPED`` the GEMM family's model priced Keras ConvNeXt int8's 7x7 ones at
      0.1x; named depthwise, the shipped model's whole-model error on the tuning half went
      11.4 / 11.8 -> 7.6 / 8.9 % (same records);
    - otherwise ``"CONV_2D_GROUPED"`` (version 8): XNNPACK takes it, but not as one GEMM; among
      thousands of GEMM convolutions the trees' Huber loss took the few grouped ones for
      outliers and priced Keras ConvNeXt's at 0.06-0.18x.

    A FULLY_CONNECTED of more than one row with constant weights of its input's type
    (``gemm_rows``, version 11) is a ``"CONV_2D"``: XNNPACK runs it with the GEMM micro-kernels of
    a 1x1 convolution (:func:`fc_as_pointwise_conv`). In a Zen 4 learn's records and the zoo's
    tuning half, float ones of 49-3,136 rows ran at the 1x1 convolutions' 52-58 GMAC/s; the
    sweep draws few of them among hundreds of one-row ones, and a learn whose held-out
    configurations gave the FULLY_CONNECTED group to the shared trees priced ConvNeXt's and
    ViT's at 0.87-1.32x, where the convolutions' model priced them at 0.99-1.07x.
    One row (a GEMV, memory-bound) stays a FULLY_CONNECTED.

    A STRIDED_SLICE with a stride other than 1 (-1 too: a sequence reversed, an OCR model's
    backward direction) or an axis shrunk away (``strided``, version
    14) is a ``"STRIDED_SLICE_BUILTIN"``: XNNPACK does not take it (in a 15-minute learn's
    records, none of 59 such slices and all 141 others), and LiteRT's builtin kernel walks it
    element by element. An audio model's harmonic stacking (every third bin of a
    ``(1, 128, 172, 16)`` map) took 381-391 us each on a 2-core Zen 5, where a model pricing
    it with the contiguous slices XNNPACK copies said 15 us (benchmarks/scripts/learned/
    families.py, 2026-11-29).

    >>> t = lambda *s: [list(s), "float32", False, False]
    >>> kernel_kind({"kind": "CONV_2D", "inputs": [t(1, 56, 56, 96), t(96, 7, 7, 1), t(96)]})
    'DEPTHWISE_CONV_2D'
    >>> kernel_kind({"kind": "CONV_2D", "inputs": [t(1, 56, 56, 96), t(96, 7, 7, 1), t(96)]},
    ...             depthwise=False)
    'CONV_2D_GROUPED'
    >>> kernel_kind({"kind": "CONV_2D", "inputs": [t(1, 56, 56, 96), t(96, 3, 3, 4), t(96)]})
    'CONV_2D_GROUPED'
    >>> kernel_kind({"kind": "CONV_2D", "inputs": [t(1, 56, 56, 96), t(32, 3, 3, 96), t(32)]})
    'CONV_2D'

    A SOFTMAX with a ``beta`` other than 1 (``softmax_beta``, version 16) is a
    ``"SOFTMAX_BUILTIN"``: XNNPACK refuses it and LiteRT's builtin kernel runs it at ~1 ns an
    element where the delegate runs beta 1 at 0.14-0.18 (float, 2,832 ops of the ``regimes``
    sweep, 2026-11-29); a model that saw only the kind priced the third set's sharpened pose
    heads (``(1, 33, 4096)``, beta 10: 135 us) at 0.2x even with such records in its fit.

    >>> kernel_kind({"kind": "SOFTMAX", "options": {"beta": 10.0}, "inputs": [t(1, 33, 4096)]})
    'SOFTMAX_BUILTIN'
    >>> kernel_kind({"kind": "SOFTMAX", "options": {"beta": 1.0}, "inputs": [t(1, 33, 4096)]})
    'SOFTMAX'
    >>> rev = [[3], "int32", True, False, [-1, 1, 1]]
    >>> kernel_kind({"kind": "STRIDED_SLICE", "inputs": [t(25, 1, 64), t(3), t(3), rev]})
    'STRIDED_SLICE_BUILTIN'
    >>> fc = lambda *x: {"kind": "FULLY_CONNECTED", "inputs": [t(*x), [[64, 32], "float32", True]]}
    >>> kernel_kind(fc(1, 49, 32)), kernel_kind(fc(1, 32)), kernel_kind(fc(8, 32), gemm_rows=False)
    ('CONV_2D', 'FULLY_CONNECTED', 'FULLY_CONNECTED')
    """
    kind = str(features.get("kind"))
    if kind == "FULLY_CONNECTED" and gemm_rows and _gemm_rows(features) > 1:
        return "CONV_2D"
    if kind == "SOFTMAX" and softmax_beta:
        if float((features.get("options") or {}).get("beta", 1.0)) != 1.0:
            return "SOFTMAX_BUILTIN"
    if kind == "STRIDED_SLICE" and strided:
        ins = features.get("inputs") or []
        rank = len(ins[0][0]) if ins and ins[0] else 0
        shrink = (features.get("options") or {}).get("shrink_axis_mask", 0)
        if shrink or any(s != 1 for s in _slice_strides(features, rank, signed=True)):
            return "STRIDED_SLICE_BUILTIN"
    if kind == "CONV_2D":
        ins = [d for d in features.get("inputs", []) if d]
        if len(ins) > 1 and len(ins[0][0]) == 4 and len(ins[1][0]) == 4:
            cin, (cout, per_group) = int(ins[0][0][3]), (int(ins[1][0][0]), int(ins[1][0][3]))
            if 0 < per_group < cin:
                if depthwise and per_group == 1 and cout % cin == 0:
                    return "DEPTHWISE_CONV_2D"
                return "CONV_2D_GROUPED"
    return kind


def _gemm_rows(features: Mapping[str, Any]) -> int:
    """The rows (M) of a FULLY_CONNECTED's GEMM when XNNPACK runs it as one: a constant 2-D
    weight of the input's element type (not a hybrid); 0 otherwise."""
    ins = [d for d in features.get("inputs", []) if d]
    if len(ins) < 2 or len(ins[1][0]) != 2 or len(ins[0]) < 3 or len(ins[1]) < 3:
        return 0
    x, w = ins[0], ins[1]
    if not w[2] or x[2] or x[1] != w[1]:
        return 0
    return math.prod(max(int(d), 1) for d in x[0]) // max(int(w[0][1]), 1)


def as_kernel_kind(
    features: Mapping[str, Any],
    *,
    depthwise: bool = True,
    gemm_rows: bool = True,
    strided: bool = True,
    softmax_beta: bool = True,
) -> Mapping[str, Any]:
    """``features`` with its ``kind`` replaced by :func:`kernel_kind` (the same mapping when it
    is unchanged). A CONV_2D named a depthwise convolution gets that op's filter layout
    (``[1, kh, kw, out channels]``, from ``[out channels, kh, kw, 1]``) and depth multiplier.

    >>> t = lambda *s: [list(s), "float32", False, False]
    >>> f = as_kernel_kind({"kind": "CONV_2D", "inputs": [t(1, 8, 8, 4), t(8, 3, 3, 1), t(8)],
    ...                     "options": {"stride_h": 1}})
    >>> f["kind"], f["inputs"][1][0], f["options"]
    ('DEPTHWISE_CONV_2D', [1, 3, 3, 8], {'stride_h': 1, 'depth_multiplier': 2})
    """
    kind = kernel_kind(
        features,
        depthwise=depthwise,
        gemm_rows=gemm_rows,
        strided=strided,
        softmax_beta=softmax_beta,
    )
    if kind == features.get("kind", kind):
        return features
    if features.get("kind") == "FULLY_CONNECTED":
        return fc_as_pointwise_conv(features) or features
    if kind != "DEPTHWISE_CONV_2D":
        return {**features, "kind": kind}
    inputs = list(features["inputs"])
    x, w = inputs[0], inputs[1]
    cout = int(w[0][0])
    inputs[1] = [[1, int(w[0][1]), int(w[0][2]), cout], *w[1:]]
    options = {**features.get("options", {}), "depth_multiplier": cout // int(x[0][3])}
    return {**features, "kind": kind, "inputs": inputs, "options": options}




def global_pool(features: Mapping[str, Any]) -> bool:
    """Whether an op is a reduction (:data:`REDUCTIONS`) over H and W of a 4-D input that keeps
    its dimensions (``keep_dims``; the axes from its constant second input): a global pool kept
    4-D, a kernel path of its own.

    LiteRT's builtin int8 MEAN runs it at 0.2-0.5 ns an input element on a 2-core Zen 4, against
    7-8 ns without ``keep_dims`` and 5-6 ns over the channels (5,600 records of a 3-minute
    builtin adaptation). Since version 12 the trees see a reduction's ``keep_dims`` and axes
    (:func:`_reduce_terms`) and a kind model steps for a global pool in its base fit
    (:mod:`~tacopt.cost_models.learned.fitting.kind_models`).

    >>> x = [[1, 7, 7, 96], "int8", False, False]
    >>> mean = lambda axes, keep: {"kind": "MEAN", "options": {"keep_dims": keep},
    ...     "inputs": [x, [[len(axes)], "int32", True, False, axes]]}
    >>> global_pool(mean([1, 2], True)), global_pool(mean([2, -3], True))
    (True, True)
    >>> global_pool(mean([1, 2], False)), global_pool(mean([3], True)), global_pool({"kind": "ADD"})
    (False, False, False)
    """
    ins = features.get("inputs") or []
    if features.get("kind") not in REDUCTIONS or len(ins) < 2 or not ins[0] or not ins[1]:
        return False
    if not (features.get("options") or {}).get("keep_dims") or len(ins[0][0]) != 4:
        return False
    axes = ins[1][4] if len(ins[1]) > 4 and isinstance(ins[1][4], list) else []
    return {int(a) % 4 for a in axes} == {1, 2}


#: Names of the entries of :func:`op_vector` (the tree features), in order.
FEATURES = (
    "inference_type",
    "dtype",
    "log_flops",
    "log_bytes",
    "log_activation_bytes_in",
    "log_weight_bytes",
    "log_bytes_out",
    "log_output_elements",
    "log_input_elements",
    "kernel_h",
    "kernel_w",
    "log_kernel_area",
    "stride",
    "dilation",
    "log_channels_in",
    "log_channels_out",
    "depthwise",
    "broadcast",
    "rank",
    "inputs",
    "outputs",
    "activation",
    "padding_same",
    "log_flops_per_output",
    "log_spatial",
    "constant_operand",
    "log_batch",
    # how the kernels work (XNNPACK / TFLite CPU): GEMM size and tiles, im2col, broadcasting,
    # strided copies
    "log_macs",
    "log_gemm_k",
    "log_gemm_n",
    "pointwise",
    "log_im2col_bytes",
    "channels_in_mod8",
    "channels_out_mod8",
    "channels_out_mod16",
    "broadcast_pattern",
    "log_small_operand",
    "log_outer",
    "log_inner",
    "log_data_moved",
    "is_int8",
    # XNNPACK's GEMM / IGEMM / DWConv micro-kernels on this CPU (AVX-512: f32 7x16 tiles):
    # the work done on padded tiles, and whether the operands stay in the 2 MB L2 of a core
    "log_gemm_m",
    "m_tile_waste",
    "n_tile_waste",
    "log_padded_macs",
    "log_working_set",
    "exceeds_l2",
    "log_groups",
    # a reduction's kernel path (version 12, :func:`_reduce_terms`)
    "keep_dims",
    "reduced_axes",
    # the innermost runs a broadcast or a reduction walks (version 15,
    # :func:`~tacopt.cost_models.learned.fitting.runs.run_terms`)
    "log_runs",
    "log_run_length",
)

#: The features of :data:`FEATURES` models of versions 12-14 were fitted on (without the run
#: terms).
FEATURES_BEFORE_15 = FEATURES[:-2]
#: The features of :data:`FEATURES` models before version 12 were fitted on (without
#: :func:`_reduce_terms`).
FEATURES_BEFORE_12 = FEATURES[:-4]


def feature_names(*, reductions: bool = True, runs: bool = True) -> tuple[str, ...]:
    """The tree features of a model that has (or lacks) the reduction and run terms."""
    return FEATURES if runs else FEATURES_BEFORE_15 if reductions else FEATURES_BEFORE_12

#: Rows (output pixels) and columns (output channels) of XNNPACK's micro-kernel tiles.
TILE_M, TILE_N = 7, 16


#: Bytes of L2 cache per core.
L2_BYTES = 2 * 1024 * 1024


#: Binary elementwise broadcast patterns (:func:`op_vector` ``broadcast_pattern``).
_BROADCAST = {"none": 0, "scalar": 1, "channel": 2, "spatial": 3, "other": 4}


_NO_TENSOR: list[Any] = [[1], "float32", False, False]


def _desc(d: Sequence[Any]) -> list[Any]:
    """A tensor description ``[shape, dtype, is_constant, ...]`` with defaults filled in."""
    return [list(d[0]), d[1] if len(d) > 1 else "float32", len(d) > 2 and bool(d[2])]


def _elements(d: Sequence[Any]) -> int:
    return math.prod(max(int(x), 1) for x in d[0])


def _nbytes(d: Sequence[Any]) -> int:
    return _elements(d) * _ITEMSIZE.get(d[1], 4)


def op_vector(
    features: Mapping[str, Any],
    kinds: Sequence[str] = (),
    *,
    reductions: bool = True,
    runs: bool = True,
) -> list[float]:
    """The tree inputs of one op record (see :data:`FEATURES`), then one flag per kind in
    ``kinds``. Without ``runs`` (models of versions 12-14), those of
    :data:`FEATURES_BEFORE_15`; without ``reductions`` either (before version 12), those of
    :data:`FEATURES_BEFORE_12`.

    >>> f = {"kind": "ADD", "inference_type": "FLOAT", "flops": 8.0, "bytes": 96.0,
    ...      "inputs": [[[2, 4], "float32", False, False], [[2, 4], "float32", False, False]],
    ...      "outputs": [[[2, 4], "float32", False, False]], "options": {}}
    >>> v = op_vector(f, ["ADD", "MUL"])
    >>> len(v) == len(FEATURES) + 2, v[-2:], v[FEATURES.index("broadcast")]
    (True, [1.0, 0.0], 0.0)
    """
    ins = [_desc(d) for d in features.get("inputs", []) if d]
    outs = [_desc(d) for d in features.get("outputs", []) if d]
    acts = [d for d in ins if not d[2]]
    consts = [d for d in ins if d[2]]
    main = max(acts, key=_elements) if acts else (ins[0] if ins else _NO_TENSOR)
    out = outs[0] if outs else _NO_TENSOR
    shape = list(out[0])
    opts = features.get("options") or {}
    kind = features["kind"]
    kh = kw = 1
    if kind in _KERNELS and len(ins) > 1 and len(ins[1][0]) == 4:
        kh, kw = ins[1][0][1], ins[1][0][2]
    if "filter_height" in opts:
        kh, kw = opts["filter_height"], opts["filter_width"]
    out_elems = sum(_elements(d) for d in outs) or 1
    flops = float(features.get("flops", 0.0))
    sizes = {_elements(d) for d in acts if _elements(d) > 1}
    row = [
        _ITYPES.get(features.get("inference_type", ""), 4),
        _DTYPES.get(main[1], 7),
        math.log1p(flops),
        math.log1p(features.get("bytes", 0.0)),
        math.log1p(sum(_nbytes(d) for d in acts)),
        math.log1p(sum(_nbytes(d) for d in consts)),
        math.log1p(sum(_nbytes(d) for d in outs)),
        math.log1p(out_elems),
        math.log1p(_elements(main)),
        kh,
        kw,
        math.log1p(kh * kw),
        max(opts.get("stride_h", 1), opts.get("stride_w", 1)),  # a row's stride is its W's
        opts.get("dilation_h_factor", 1),
        math.log1p(main[0][-1] if main[0] else 1),
        math.log1p(shape[-1] if shape else 1),
        float(kind == "DEPTHWISE_CONV_2D"),
        float(len(sizes) > 1),
        len(shape),
        len(ins),
        len(outs),
        _ACTIVATIONS.get(opts.get("fused_activation_function", "NONE"), 5),
        float(opts.get("padding") == "SAME"),
        math.log1p(flops / out_elems),
        math.log1p(shape[1] * shape[2] if len(shape) == 4 else 1),
        float(bool(consts)),
        math.log1p(shape[0] if shape else 1),
    ]
    return (
        [float(x) for x in row]
        + _kernel_terms(kind, ins, acts, outs, opts, flops)
        + (_reduce_terms(kind, features.get("inputs") or [], opts) if reductions else [])
        + (run_terms(kind, features.get("inputs") or [], shape) if runs and reductions else [])
        + [float(kind == k) for k in kinds]
    )


def _reduce_terms(kind: str, ins: Sequence[Any], opts: Mapping[str, Any]) -> list[float]:
    """``[keep_dims, reduced axes]`` of a reduction (:data:`REDUCTIONS`; else 0, 0): whether it
    keeps the reduced dimensions, and which it reduces as a bit mask (bit ``a`` for axis ``a``
    of its input, from its constant ``axes`` input). They choose its kernel (:func:`global_pool`).

    >>> axes = [[2], "int32", True, False, [1, 2]]
    >>> _reduce_terms("MEAN", [[[1, 7, 7, 96], "int8", False], axes], {"keep_dims": True})
    [1.0, 6.0]
    >>> _reduce_terms("MEAN", [[[1, 7, 96], "int8", False], [[1], "int32", True, False, [-1]]], {})
    [0.0, 4.0]
    >>> _reduce_terms("ADD", [], {})
    [0.0, 0.0]
    """
    if kind not in REDUCTIONS or len(ins) < 2 or not ins[0] or not ins[1]:
        return [0.0, 0.0]
    rank = max(len(ins[0][0]), 1)
    axes = ins[1][4] if len(ins[1]) > 4 and isinstance(ins[1][4], list) else []
    mask = sum(1 << a for a in {int(a) % rank for a in axes})
    return [float(bool(opts.get("keep_dims", False))), float(mask)]


def _kernel_terms(
    kind: str,
    ins: Sequence[list[Any]],
    acts: Sequence[list[Any]],
    outs: Sequence[list[Any]],
    opts: Mapping[str, Any],
    flops: float,
) -> list[float]:
    """The features that follow the kernels: a convolution / matmul is a GEMM of M output
    pixels x N output channels x K = kernel area x input channels (im2col when the kernel is
    not 1x1 / stride 1), tiled by 8 / 16 channels; a binary elementwise op streams its output
    with one operand broadcast in a pattern; a data-movement op copies ``outer`` runs of
    ``inner`` elements."""
    out = outs[0] if outs else _NO_TENSOR
    oshape = [max(int(d), 1) for d in out[0]]
    out_elems = math.prod(oshape) if oshape else 1
    k = n = groups = 1
    pointwise = 0.0
    im2col = 0.0
    cin = cout = 1
    if kind in _KERNELS + ("FULLY_CONNECTED", "BATCH_MATMUL") and len(ins) > 1:
        w = [max(int(d), 1) for d in ins[1][0]] or [1]
        x = [max(int(d), 1) for d in ins[0 if kind != "TRANSPOSE_CONV" else 2][0]] or [1]
        cin, cout = x[-1], oshape[-1] if oshape else 1
        if kind == "DEPTHWISE_CONV_2D":
            k, n = math.prod(w[1:3]), cout
        elif kind in ("CONV_2D", "CONV_2D_GROUPED", "TRANSPOSE_CONV") and len(w) == 4:
            k, n = math.prod(w[1:]), w[0]
            groups = max(cin // max(w[3], 1), 1) if kind != "TRANSPOSE_CONV" else 1
            pointwise = float(
                w[1] * w[2] == 1 and opts.get("stride_h", 1) == opts.get("stride_w", 1) == 1
            )
            if not pointwise:
                im2col = out_elems / max(n, 1) * k * _ITEMSIZE.get(ins[0][1], 4)
        else:
            k, n = x[-1], cout
    pattern = "none"
    small = 1
    if len(ins) == 2 and kind not in _KERNELS:
        sizes = sorted(ins, key=_elements)
        small = _elements(sizes[0])
        big = sizes[1]
        if small == _elements(big):
            pattern = "none"
        elif small == 1:
            pattern = "scalar"
        elif big[0] and small == max(int(big[0][-1]), 1):
            pattern = "channel"
        elif big[0] and len(big[0]) >= 2 and small * max(int(big[0][-1]), 1) == _elements(big):
            pattern = "spatial"
        else:
            pattern = "other"
    axis = opts.get("axis")
    outer = inner = 1.0
    if isinstance(axis, int) and oshape:
        ax = axis % len(oshape)
        outer = float(math.prod(oshape[:ax]))
        inner = float(math.prod(oshape[ax:]))
    moved = sum(_nbytes(d) for d in acts) + sum(_nbytes(d) for d in outs)
    dtype = (acts[0] if acts else out)[1]
    m = max(out_elems // max(n, 1), 1) if k > 1 or n > 1 else 1
    m_pad, n_pad = -(-m // TILE_M) * TILE_M, -(-n // TILE_N) * TILE_N
    working = moved + sum(_nbytes(d) for d in ins if d[2])
    return [
        math.log1p(flops / 2),
        math.log1p(k),
        math.log1p(n),
        pointwise,
        math.log1p(im2col),
        float(cin % 8 == 0),
        float(cout % 8 == 0),
        float(cout % 16 == 0),
        float(_BROADCAST[pattern]),
        math.log1p(small),
        math.log1p(outer),
        math.log1p(inner),
        math.log1p(moved),
        float(dtype in ("int8", "uint8")),
        math.log1p(m),
        m_pad / m,
        n_pad / max(n, 1),
        math.log1p(m_pad * n_pad * k),
        math.log1p(working),
        float(working > L2_BYTES),
        math.log1p(groups),
    ]


def design_row(features: Mapping[str, Any]) -> list[float]:
    """The group-fit inputs of one op: ``[1, log FLOPs, log bytes, log output elements, fused
    activation, broadcast]`` (the last two 0 / 1: XNNPACK runs a fused activation of an
    elementwise op as a second pass over the output, 1.5-1.9x the time of the op alone here; a
    broadcast operand is read once, not per element).

    >>> t = lambda *s: [list(s), "float32", False, False]
    >>> relu = {"fused_activation_function": "RELU"}
    >>> row = design_row({"kind": "ADD", "inputs": [t(1, 8, 8, 4), t(1, 1, 1, 4)],
    ...                   "outputs": [t(1, 8, 8, 4)], "options": relu})
    >>> round(row[3], 4), row[4:]
    (5.5491, [1.0, 1.0])
    """
    outs = [o for o in features.get("outputs", []) if o]
    out_elems = sum(math.prod(max(d, 1) for d in o[0]) for o in outs) if outs else 1
    act = (features.get("options") or {}).get("fused_activation_function", "NONE")
    sizes = {_elements(_desc(d)) for d in features.get("inputs", []) if d}
    return [
        1.0,
        math.log1p(features.get("flops", 0.0)),
        math.log1p(features.get("bytes", 0.0)),
        math.log1p(out_elems),
        float(act not in ("NONE", None)),
        float(len(sizes) > 1),
    ]


#: Names of :func:`design_row`'s entries (models fitted before the last two use the first four).
GROUP_FEATURES = (
    "1", "log1p(flops)", "log1p(bytes)", "log1p(output elements)", "fused activation", "broadcast",
)


#: Kinds that read only the part of their input they copy out (a quarter-slice reads a quarter).
READS_WHAT_IT_WRITES = frozenset({"SLICE", "STRIDED_SLICE", "GATHER"})
#: Slices: a cut dimension is copied in runs of its output length (``copy_runs``).
SLICES = frozenset({"SLICE", "STRIDED_SLICE"})

#: Pads (:func:`copy_runs`).
PADS = frozenset({"PAD", "PADV2", "MIRROR_PAD"})


def _slice_strides(features: Mapping[str, Any], rank: int, *, signed: bool = False) -> list[int]:
    """A slice's strides per dimension (STRIDED_SLICE's constant ``strides`` input, else 1);
    their sizes unless ``signed`` (a reversal, stride -1, is one XNNPACK refuses)."""
    ins = features.get("inputs", [])
    if features.get("kind") == "STRIDED_SLICE" and len(ins) > 3 and len(ins[3]) > 4:
        values = [int(v) if signed else abs(int(v)) for v in ins[3][4]]
        if len(values) == rank:
            return values
    return [1] * rank


def bytes_moved(features: Mapping[str, Any]) -> int:
    """Bytes a data-movement op reads (non-constant inputs) and writes (outputs); a slice or a
    gather (:data:`READS_WHAT_IT_WRITES`) reads only what it writes, not its whole input.

    >>> t = lambda *s: [list(s), "float32", False, False]
    >>> bytes_moved({"kind": "STRIDED_SLICE", "inputs": [t(1, 38, 38, 192)],
    ...              "outputs": [t(1, 9, 38, 192)]})
    525312
    """
    ins = [_desc(d) for d in features.get("inputs", []) if d]
    outs = [_desc(d) for d in features.get("outputs", []) if d]
    written = sum(_nbytes(d) for d in outs)
    if features.get("kind") in READS_WHAT_IT_WRITES:
        return 2 * written
    return sum(_nbytes(d) for d in ins if not d[2]) + written


def copy_runs(
    features: Mapping[str, Any], *, slice_spans: bool = True, pad_pixels: bool = True
) -> int:
    """How many contiguous runs a data-movement op copies: with an ``axis`` option
    (CONCATENATION, SPLIT, PACK, ...) the elements before the axis times the operands; else the
    output elements over the trailing dimensions the main input and the output share (a PAD of
    H and W copies one run of C per pixel). A slice (``slice_spans``, learned models of version
    10 on) also copies its innermost cut dimension in one run: cutting C from 288 to 216 copies
    runs of 216, not of 1 (before, such a slice counted one run per element). A pad of the
    channels (``pad_pixels``, version 11 on: a detector's shortcut widening C) copies one run of C
    per pixel too, as a pad of H and W does (before, one run per element). A slice XNNPACK refuses
    (:func:`kernel_kind` ``STRIDED_SLICE_BUILTIN``) copies one element a run: counted by its
    runs of the innermost shared dimensions, a learn whose held-out slices gave the kind to the
    copy model priced an audio model's every-third-bin slices at 0.075x (session 4).

    >>> t = lambda *s: [list(s), "float32", False, False]
    >>> copy_runs({"inputs": [t(1, 8, 8, 3)], "outputs": [t(1, 10, 10, 3)], "options": {}})
    100
    >>> copy_runs({"inputs": [t(1, 4, 6), t(1, 4, 2)], "outputs": [t(1, 4, 8)],
    ...            "options": {"axis": 2}})
    8
    >>> cut = {"kind": "SLICE", "inputs": [t(1, 38, 38, 288)], "outputs": [t(1, 38, 38, 216)]}
    >>> copy_runs(cut), copy_runs(cut, slice_spans=False)
    (1444, 311904)
    >>> every_other = {"kind": "STRIDED_SLICE", "inputs": [t(1, 8), t(2), t(2), [[2], "int32",
    ...     True, False, [1, 2]]], "outputs": [t(1, 4)]}
    >>> copy_runs(every_other)
    4
    >>> widen = {"kind": "PAD", "inputs": [t(1, 8, 8, 24)], "outputs": [t(1, 8, 8, 48)]}
    >>> copy_runs(widen), copy_runs(widen, pad_pixels=False)
    (64, 3072)
    >>> copy_runs({"kind": "STRIDED_SLICE_BUILTIN", "inputs": [t(1, 64, 84, 16)],
    ...            "outputs": [t(1, 64, 28, 16)]})  # every third bin: one element a run
    28672
    """
    ins = [_desc(d) for d in features.get("inputs", []) if d]
    outs = [_desc(d) for d in features.get("outputs", []) if d]
    acts = [d for d in ins if not d[2]]
    if not acts or not outs:
        return 1
    out = [max(int(x), 1) for x in outs[0][0]]
    if features.get("kind") == "STRIDED_SLICE_BUILTIN":
        return math.prod(out)  # the builtin kernel walks it element by element (kernel_kind)
    axis = (features.get("options") or {}).get("axis")
    if isinstance(axis, int) and out:
        return math.prod(out[: axis % len(out)]) * max(len(acts), len(outs))
    main = [max(int(x), 1) for x in max(acts, key=_elements)[0]]
    inner = 1
    if len(main) == len(out):
        kind = features.get("kind")
        spans = slice_spans and kind in SLICES
        steps = _slice_strides(features, len(out)) if spans else []
        for d in reversed(range(len(out))):
            if main[d] != out[d]:
                pixels = pad_pixels and d == len(out) - 1 and out[d] > main[d] and kind in PADS
                inner *= out[d] if (spans and steps[d] == 1) or pixels else 1
                break
            inner *= main[d]
    else:
        inner = math.prod(out)
    return max(math.prod(out) // max(inner, 1), 1)

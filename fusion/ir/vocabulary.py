"""Words every package shares, defined once.

Inference types are TAC's (``InferenceType`` in tac/common/targets.h, ``UNKNOWN`` excluded).
Activations travel between ops in a *format*: a HYBRID op reads and writes float activations
(only its weights are int8), so FLOAT and HYBRID share the FLOAT format and, as in TAC's
``GetQuantDequantCost``, an edge between them needs no conversion.

Examples
--------
>>> "CUSTOM:LayerNorm" in FUSION_ONLY_KINDS
True
>>> ACTIVATION_FORMAT["HYBRID"], same_format("HYBRID", "FLOAT"), same_format("FLOAT", "HYBRID")
('FLOAT', True, True)
>>> PRICED_DTYPE_NBYTES["float32"]
4
"""

from __future__ import annotations

#: Fused kinds the fusion rules create that LiteRT has no kernel for (their reference kernels are
#: in :mod:`tacopt.fusion.rules.custom`). A model holding one does not load in ai-edge-litert, so
#: the partitioner lowers them back to their primitive ops (:func:`tacopt.fusion.unfuse.unfuse`)
#: on every device that does not declare them.
FUSION_ONLY_KINDS = frozenset({"CUSTOM:Swish", "CUSTOM:LayerNorm", "CUSTOM:Erf"})

#: Default cap on the weight bytes :func:`tacopt.fusion.tflite.rehydrate.rehydrate` creates: 2 GiB,
#: ten times the largest model of the shared zoo and the most a .tflite flatbuffer holds inline.
#: Override with ``max_bytes=`` (``tacopt rehydrate --max-weight-bytes``).
MAX_WEIGHT_BYTES = 1 << 31

#: The inference types of TAC, in TAC's order.
INFERENCE_TYPES: tuple[str, ...] = ("FLOAT", "QUANTIZED_INT8", "QUANTIZED_UINT8", "HYBRID")
QUANTIZED_TYPES = frozenset({"QUANTIZED_INT8", "QUANTIZED_UINT8"})

#: The format activations of each inference type travel in.
ACTIVATION_FORMAT: dict[str, str] = {
    "FLOAT": "FLOAT",
    "HYBRID": "FLOAT",
    "QUANTIZED_INT8": "QUANTIZED_INT8",
    "QUANTIZED_UINT8": "QUANTIZED_UINT8",
}


def same_format(a: str, b: str) -> bool:
    """Whether activations pass between inference types ``a`` and ``b`` without a conversion.

    Both must be in :data:`INFERENCE_TYPES` (a ``KeyError`` otherwise: callers check first and
    word the error for their users).
    """
    return ACTIVATION_FORMAT[a] == ACTIVATION_FORMAT[b]


#: Bytes per element of every TFLite dtype: sub-byte types as fractions (int4 0.5: TFLite packs
#: them), string / resource / variant as zero.
DTYPE_NBYTES: dict[str, float] = {
    "float32": 4,
    "float16": 2,
    "int32": 4,
    "uint8": 1,
    "int64": 8,
    "string": 0,
    "bool": 1,
    "int16": 2,
    "complex64": 8,
    "int8": 1,
    "float64": 8,
    "complex128": 16,
    "uint64": 8,
    "resource": 0,
    "variant": 0,
    "uint32": 4,
    "uint16": 2,
    "int4": 0.5,
    "bfloat16": 2,
    "int2": 0.25,
    "uint4": 0.5,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}

#: Whole bytes per element of the dtypes a pick problem prices (sub-byte, string and resource
#: tensors travel as one byte per element; see :mod:`tacopt.partitioner.costing`).
PRICED_DTYPE_NBYTES: dict[str, int] = {
    d: int(DTYPE_NBYTES[d])
    for d in ("bool", "int8", "uint8", "float16", "bfloat16", "int16", "uint16", "float32",
              "int32", "uint32", "float64", "int64", "uint64", "complex64", "complex128")
}  # fmt: skip

"""Words every package shares, defined once.

Examples
--------
>>> "CUSTOM:LayerNorm" in FUSION_ONLY_KINDS
True
"""

from __future__ import annotations

#: Fused kinds the fusion rules create that LiteRT has no kernel for (their reference kernels are
#: in :mod:`tacopt.fusion.rules.custom`). A model holding one does not load in ai-edge-litert, so
#: the partitioner lowers them back to their primitive ops (:func:`tacopt.fusion.unfuse.unfuse`)
#: on every device that does not declare them.
FUSION_ONLY_KINDS = frozenset({"CUSTOM:Swish", "CUSTOM:LayerNorm", "CUSTOM:Erf"})

#: Default cap on the weight bytes :func:`tacopt.fusion.rehydrate.rehydrate` creates: 2 GiB, ten
#: times the largest model of the shared zoo and the most a .tflite flatbuffer holds inline.
#: Override with ``max_bytes=`` (``tacopt rehydrate --max-weight-bytes``).
MAX_WEIGHT_BYTES = 1 << 31

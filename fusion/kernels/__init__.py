"""Kernels of the numpy reference executor (:mod:`tacopt.fusion.executor`), grouped by family.

Each module holds a ``KERNELS`` table (op kind -> :class:`~tacopt.fusion.kernels.common.KernelSpec`)
that :mod:`tacopt.fusion.executor` registers on import. Kernels compute in float on dequantized
values; the executor does the (de)quantization around them, see :mod:`tacopt.fusion.executor`.
"""

"""Kernels of the numpy reference executor (:mod:`fusion.executor`), grouped by family.

Each module holds a ``KERNELS`` table (op kind -> :class:`~fusion.kernels.common.KernelSpec`)
that :mod:`fusion.executor` registers on import. Kernels compute in float on dequantized values;
the executor does the (de)quantization around them, see :mod:`fusion.executor`.
"""

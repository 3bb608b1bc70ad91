"""The cost models' commands: ``tacopt measure``, ``fit`` and ``calibrate``
(:mod:`~tacopt.cost_models.cli.measure`), ``tacopt evaluate`` and ``inspect-model``
(:mod:`~tacopt.cost_models.cli.model`), ``tacopt learn`` (:mod:`~tacopt.cost_models.cli.learn`).

Every package keeps its commands in a ``cli/`` sub-package (see :mod:`tacopt.fusion.cli`).
"""

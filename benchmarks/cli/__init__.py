"""The study's command: ``tacopt bench`` (:mod:`~tacopt.benchmarks.cli.bench`).

Every package keeps its commands in a ``cli/`` sub-package (see :mod:`tacopt.fusion.cli`).
"""

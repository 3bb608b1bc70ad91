"""The fusion stage's commands: ``tacopt inspect`` and ``tacopt rehydrate``
(:mod:`~tacopt.fusion.cli.inspection`), ``tacopt fuse`` (:mod:`~tacopt.fusion.cli.fuse`).

Every package keeps its commands in a ``cli/`` sub-package, one module per command or group of
commands, each exposing ``register(subparsers)`` functions named by the ``tacopt.commands``
entry points in ``pyproject.toml``; the dispatcher is :mod:`tacopt.partitioner.cli`.
"""

"""The learned cost model: measurement on a real runtime, the sweep, features, fitting, the model.

Three stages, each importing only the ones before it:

- :mod:`~tacopt.cost_models.learned.measurement`: time ops on the runtime (single-op graphs,
  the speed gate, device fingerprints) and write records;
- :mod:`~tacopt.cost_models.learned.fitting`: features, kind models and trees fitted on the
  records -> the model file the ``learned`` cost model loads;
- :mod:`~tacopt.cost_models.learned.sampling`: what to measure (the sweep's priors, weights from
  a fitted model) and adapting a model to another device.

:mod:`~tacopt.cost_models.cli.learn` (``tacopt learn``) runs all three in a time budget.
"""

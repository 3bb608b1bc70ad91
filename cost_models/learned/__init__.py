"""The learned cost model: measurement on a real runtime, the sweep, features, fitting, the model.

Measure (:mod:`~tacopt.cost_models.learned.measure`, :mod:`~tacopt.cost_models.learned.timing`,
:mod:`~tacopt.cost_models.learned.speed`) -> records (:mod:`~tacopt.cost_models.learned.records`)
-> fit (:mod:`~tacopt.cost_models.learned.model`, its kind models and trees) -> the model file
the ``learned`` cost model loads.
"""

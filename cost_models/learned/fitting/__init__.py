"""Fitting the learned model on measurement records: the features, the per-kind models, the
trees, how ops add up to a whole model, the model file and its accuracy on held-out records.
"""

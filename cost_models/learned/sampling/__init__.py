"""What to measure: the sweep's per-kind and ``net`` priors, sampling weights from a fitted
model, and adapting a model to another device with few samples.
"""

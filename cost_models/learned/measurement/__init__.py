"""Measuring op latencies on a real runtime (ai-edge-litert): single-op graphs cut from a model
or rebuilt in another type, timing gated on the machine's speed, device fingerprints, and the
JSON-lines records they write.
"""

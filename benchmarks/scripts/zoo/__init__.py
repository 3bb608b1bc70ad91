"""The model zoo's tools: structure-only models rebuilt from Keras, the tuning / test split,
float16 and sparse variants of real models."""

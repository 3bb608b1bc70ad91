"""The standalone benchmark scripts, run as ``python -m tacopt.benchmarks NAME [ARGS]``.

``bench_*`` time one stage and print its figure, ``check_*`` cross-check one claim over the zoo,
``make_zoo`` / ``measure_zoo`` build and measure the model zoo, ``scaling`` runs the picker
scaling study. ``python -m tacopt.benchmarks`` with no NAME lists them.
"""

"""The standalone benchmark scripts, run as ``python -m tacopt.benchmarks NAME [ARGS]``.

``bench_*`` time one stage and print its figure, ``check_*`` cross-check one claim over the zoo.
They sit in folders by what they study (the NAME is the module's own name, whatever its folder):

- :mod:`~tacopt.benchmarks.scripts.pipeline`: parse, fuse, partition, export, the plan page;
- :mod:`~tacopt.benchmarks.scripts.picking`: the pickers on synthetic and contest problems;
- :mod:`~tacopt.benchmarks.scripts.learned`: the learned cost model's measurement and accuracy;
- :mod:`~tacopt.benchmarks.scripts.zoo`: building, splitting and varying the model zoo.

``python -m tacopt.benchmarks`` with no NAME lists them.
"""

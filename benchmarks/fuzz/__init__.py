"""The fuzz campaign: mutated models and pick problems through tacopt's commands and checkers.

Run it with ``python -m tacopt.benchmarks fuzz``; :mod:`~tacopt.benchmarks.fuzz.campaign` drives
it, :mod:`~tacopt.benchmarks.fuzz.cases` derives each case from the seed.
"""

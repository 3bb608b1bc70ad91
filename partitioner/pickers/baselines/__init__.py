"""The pickers the exact engine is compared with and checked against.

``tac`` (TAC's own greedy pick-subgraphs pass, quirks included), ``greedy`` (topological) and
``first-fit`` (the initial plan as it is) are the baselines of every study; ``brute`` tries
every choice on at most 12 units and is the tests' oracle (the engine's enumerate stage uses it
on one-unit problems). They register by name in :mod:`tacopt.partitioner.pickers.registry`.
"""

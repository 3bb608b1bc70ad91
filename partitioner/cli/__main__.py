"""``python -m tacopt.partitioner.cli``: the ``tacopt`` command."""

from tacopt.errors import run_as_program
from tacopt.partitioner.cli import main

if __name__ == "__main__":
    run_as_program(main)

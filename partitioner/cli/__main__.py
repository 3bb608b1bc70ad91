"""``python -m tacopt.partitioner.cli``: the ``tacopt`` command."""

from tacopt.partitioner.cli import run_as_program

if __name__ == "__main__":
    run_as_program()

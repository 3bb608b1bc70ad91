"""``python -m tacopt.partitioner.cli``: the ``tacopt`` command."""

import sys

from tacopt.partitioner.cli import main

if __name__ == "__main__":
    sys.exit(main())

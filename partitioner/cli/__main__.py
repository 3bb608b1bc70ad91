"""``python -m tacopt.partitioner.cli``: the ``tacopt`` command."""

import sys

from tacopt.partitioner.cli import main

sys.exit(main())

"""``python -m tacopt.benchmarks``: the same command as ``tacopt bench``."""

from __future__ import annotations

import sys

from tacopt.benchmarks.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""Command-line option values checked as argparse parses them: the ``type=`` functions every
``tacopt`` command shares, so that each rule (a count's floor, a time limit's range) is written
once and a bad value is refused before any work, as one line and exit 2 (``tacopt bench: error:
argument --jobs: must be at least 1, got 0``).

Examples
--------
>>> import argparse
>>> parser = argparse.ArgumentParser(prog="demo")
>>> _ = parser.add_argument("--jobs", type=at_least(1))
>>> _ = parser.add_argument("--time-limit", type=seconds)
>>> vars(parser.parse_args(["--jobs", "2", "--time-limit", "1.5"]))
{'jobs': 2, 'time_limit': 1.5}
>>> at_least(1)("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be at least 1, got 0
>>> seconds("inf")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be positive and finite (seconds), got inf
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def at_least(least: int) -> Callable[[str], int]:
    """An option ``type=``: a whole number no smaller than ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value

    return parse


def seconds(text: str) -> float:
    """An option ``type=``: a positive, finite number of seconds (a time limit)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be positive and finite (seconds), got {value:g}")
    return value

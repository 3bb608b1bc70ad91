"""Whether other processes competed for the CPU while a measurement ran: real contention,
which a user can act on, told apart from the machine's own rhythm (frequency steps, a virtual
machine's host), which they cannot.

The timing gate sets aside samples taken in a slow episode whatever its cause. On an idle
2-core Zen 4 a 15-minute ``tacopt learn`` set aside 67-73 % of its samples and told the user to
learn again when the machine is quiet (issue 47): nothing else ran. :class:`OtherLoad` reads
the CPU time every process spent (``/proc/stat``: user, nice, system, irq, softirq; not steal,
the host's share) and this process's own (``os.times``) at the start and at the end:
the difference is what others ran, as a share of the cores over the wall time.

>>> load = OtherLoad.start()
>>> 0.0 <= load.share() <= 1.0 or load.share() != load.share()  # a share, or NaN off Linux
True
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

#: Share of the cores other processes kept busy above which learn calls the machine busy: one
#: core's tenth of a 2-core machine is 0.05; a second timing run (another learn) is ~0.5.
CONTENTION_SHARE = 0.1

_STAT = Path("/proc/stat")


def _busy_s() -> float | None:
    """CPU seconds every process has run (user, nice, system, irq, softirq), or None."""
    try:
        first = _STAT.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu" or len(first) < 8:
        return None
    ticks = sum(int(v) for v in (first[1], first[2], first[3], first[6], first[7]))
    return ticks / os.sysconf("SC_CLK_TCK")


def _own_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass(frozen=True, slots=True)
class OtherLoad:
    """CPU time of every process and of this one, and the wall clock, at a start."""

    busy_s: float | None
    own_s: float
    wall_s: float

    @classmethod
    def start(cls) -> OtherLoad:
        return cls(_busy_s(), _own_s(), time.monotonic())

    def share(self) -> float:
        """Share of the cores other processes kept busy since the start (NaN where the
        system's CPU time cannot be read)."""
        now = _busy_s()
        wall = time.monotonic() - self.wall_s
        if now is None or self.busy_s is None or wall <= 0:
            return math.nan
        others = (now - self.busy_s) - (_own_s() - self.own_s)
        return min(max(others / (wall * (os.cpu_count() or 1)), 0.0), 1.0)

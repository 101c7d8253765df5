"""How much a perf run measures (no pyperf import: the argument parser needs it everywhere)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Effort:
    """How much to measure: worker processes per benchmark, values per process, rounds.

    The processes of one benchmark are spread over `rounds` passes through the suite, so they sample
    the machine's load over the whole run rather than over the few seconds one benchmark takes: on a
    shared machine, load that changes between minutes is then part of the measured variance instead
    of a drift that makes two runs of the same configuration look different.
    """

    processes: int
    values: int
    rounds: int

    def __str__(self) -> str:
        return f"{self.processes} processes x {self.values} values in {self.rounds} rounds"

    @property
    def per_round(self) -> int:
        return max(1, math.ceil(self.processes / self.rounds))


# The default keeps a whole suite under ~8 minutes on a loaded 2-core machine: every torch worker
# imports torch (3-6 s here), and at threshold 1 each dynamo worker waits ~30 s for its compiles.
EFFORTS = {"fast": Effort(processes=4, values=4, rounds=2), "default": Effort(processes=6, values=8, rounds=3),
           "rigorous": Effort(processes=12, values=8, rounds=6)}

"""In what order a run starts its files: the longest first, by the durations earlier runs recorded.

(Which tests a shard runs is harness/run/shards.py.)
"""

from __future__ import annotations

from pathlib import Path

from harness.record.store import recent_runs

RECENT_RUNS = 64  # of a tier, read for durations: enough for every shard of a few nights' configurations


def earlier_durations(results_root: Path, tier: str) -> dict[str, float]:
    """The latest recorded duration of each file of this tier, over its most recent runs here (a
    results folder of many nightly runs does not slow every start)."""
    durations: dict[str, float] = {}
    for record in recent_runs(results_root, tier, RECENT_RUNS):
        durations.update({f.file: f.duration for f in record.files})
    return durations


def longest_first(files: list[str], durations: dict[str, float]) -> list[str]:
    """Files never timed first (they may be the longest), then the longest ones: short files fill the tail."""
    return sorted(files, key=lambda f: (f in durations, -durations.get(f, 0.0), f))

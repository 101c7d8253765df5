"""Which files a run executes and in what order: shards and longest-first scheduling.

Shards must be identical for every configuration, or shard k of the baseline and shard k of the
candidate would hold different files. So they are balanced on weights every configuration agrees
on: the durations of one named earlier run (`--durations RUN_DIR`), or else the size of each test
file, which grows with its number of tests.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import HarnessError
from harness.record.store import RunDirectory, recent_runs


def parse_shard(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise HarnessError(f"--shard must be I/N with 1 <= I <= N, not {text!r}")
    return int(match.group(1)), int(match.group(2))


def shard_files(files: list[str], index: int, count: int, weights: dict[str, float]) -> list[str]:
    """Shard `index` of `count`: greedy longest-processing-time bins, deterministic on ties."""
    bins: list[list[str]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for file in sorted(files, key=lambda f: (-weights.get(f, 0.0), f)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        bins[lightest].append(file)
        loads[lightest] += weights.get(file, 0.0)
    return sorted(bins[index - 1])


def size_weights(tests_dir: Path, files: list[str]) -> dict[str, float]:
    return {file: float((tests_dir / file).stat().st_size) for file in files}


def run_durations(run_dir: Path) -> dict[str, float]:
    """Seconds per file of an earlier run directory."""
    return {f.file: f.duration for f in RunDirectory(run_dir).read_record().files}


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

"""Recorded test durations: what `--shard I/N` weighs tests with (harness/run/shards.py).

Only durations every configuration can agree on are read, so shard k of the baseline and shard k
of a candidate hold the same tests: those of the baseline configuration's complete runs of the
same tier with the same torch (a candidate's are slower by its own JIT, and another torch has other
tests and costs). And once one shard of a sweep has chosen its weights, every later shard of that
sweep chooses from the same runs (its `basis`, kept in the run record), although a shard that ends
adds durations to the database: the basis is renewed only when a series runs a shard it already ran.

A duration is read as the seconds a core of its own would take: each run's test and start-up times
are scaled by the file's `cpu_share` (its tests' CPU seconds over their wall seconds, recorded by
the test processes), capped at 1. On a shared machine a file's wall time grows with the load of the
moment, by up to four times between two sittings of the same tests here, and whole modules move
together; the CPU seconds hardly move. Work that waits without a core (sleeps, I/O) is then weighed
light; a file recorded by an older harness, without a share, is read as its wall time.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from harness.record.ingest import run_identity
from harness.record.junit import JUnitFiles
from harness.record.model import Shard
from harness.record.store import RunDirectory

BASIS_RUNS = 32  # newest complete baseline runs read: a few sweeps of shards, enough for a median per test


@dataclass(frozen=True)
class History:
    """Seconds per test (node id) and per file outside its tests (start, imports, collection), each
    the median over the runs of `basis`."""

    tests: dict[str, float]
    overhead: dict[str, float]
    basis: tuple[str, ...]


@dataclass(frozen=True)
class Sweep:
    """One shard being chosen: what is split, into how many, for which series."""

    tier: str
    torch: str | None
    selection: str  # hash of the unsharded targets (harness/run/shards.py)
    shard: Shard
    configuration: str
    threshold: int | None


NO_HISTORY = History({}, {}, ())


def pinned_basis(connection: sqlite3.Connection, sweep: Sweep) -> tuple[str, ...] | None:
    """The basis of the newest shard of this sweep, unless this series already ran this shard on it
    (a new night starts a new sweep); None: choose a new basis."""
    rows = connection.execute(
        "SELECT configuration, threshold, shard, record FROM runs WHERE tier = ? AND torch IS ? AND shard LIKE ? "
        "ORDER BY started DESC", (sweep.tier, sweep.torch, f"%/{sweep.shard.count}")).fetchall()
    sharded = [(row, _sharding(row[3])) for row in rows]
    same = [(row, sharding) for row, sharding in sharded if sharding and sharding.get("selection") == sweep.selection]
    if not same:
        return None
    basis = tuple(same[0][1].get("basis") or ())
    mine = f"{sweep.shard.index}/{sweep.shard.count}"
    repeated = any(row[0] == sweep.configuration and row[1] == sweep.threshold and row[2] == mine
                   and tuple(sharding.get("basis") or ()) == basis for row, sharding in same)
    return None if repeated else basis


def _sharding(record: str) -> dict | None:
    try:
        found = json.loads(record).get("sharding")
    except (ValueError, AttributeError):
        return None
    return found if isinstance(found, dict) else None


def baseline_basis(connection: sqlite3.Connection, tier: str, torch: str | None, baseline: str) -> tuple[str, ...]:
    """The newest complete runs of the baseline configuration of this tier and torch."""
    rows = connection.execute(
        "SELECT identity FROM runs WHERE tier = ? AND torch IS ? AND configuration = ? AND status = 'complete' "
        "ORDER BY started DESC LIMIT ?", (tier, torch, baseline, BASIS_RUNS)).fetchall()
    return tuple(row[0] for row in rows)


def own_basis(connection: sqlite3.Connection, tier: str, configuration: str) -> tuple[str, ...]:
    """The newest complete runs of this tier and configuration, whatever their torch: what a run
    splits its heavy files on (harness/run/split.py). Unlike shards, a run's split need not match
    any other configuration's, and reading this interpreter's torch would cost a process start."""
    rows = connection.execute(
        "SELECT identity FROM runs WHERE tier = ? AND configuration = ? AND status = 'complete' "
        "ORDER BY started DESC LIMIT ?", (tier, configuration, BASIS_RUNS)).fetchall()
    return tuple(row[0] for row in rows)


def ignored(connection: sqlite3.Connection, tier: str, torch: str | None, baseline: str) -> str | None:
    """The runs of this tier whose durations are not used (other configurations, other torch), in one line."""
    rows = connection.execute(
        "SELECT configuration, torch, count(*) FROM runs WHERE tier = ? AND status = 'complete' "
        "AND NOT (configuration = ? AND torch IS ?) GROUP BY configuration, torch ORDER BY configuration, torch",
        (tier, baseline, torch)).fetchall()
    if not rows:
        return None
    listed = ", ".join(f"{n} of {configuration} with torch {version}" for configuration, version, n in rows)
    return (f"shards: recorded durations of {listed} ignored: shards follow the durations of {baseline}, the "
            f"baseline configuration, with torch {torch}, so that every configuration gets the same shards")


def read_history(connection: sqlite3.Connection, basis: tuple[str, ...], *, scaled: bool = True) -> History:
    """Median seconds per test and per file overhead over the runs of `basis` still in the database,
    each run's scaled by its files' CPU shares (`scaled=False`: wall seconds as recorded)."""
    runs = [row for identity in basis
            for row in connection.execute("SELECT id, record FROM runs WHERE identity = ?", (identity,)).fetchall()]
    tests: dict[str, list[float]] = defaultdict(list)
    overhead: dict[str, list[float]] = defaultdict(list)
    for run, record in runs:
        scale = _scales(record) if scaled else {}
        for nodeid, duration in connection.execute(
                "SELECT nodeid, duration FROM results WHERE run = ? AND nodeid IS NOT NULL", (run,)):
            tests[nodeid].append(duration * scale.get(nodeid.split("::", 1)[0], 1.0))
        for file, outside in connection.execute(
                "SELECT f.file, f.duration - coalesce((SELECT sum(r.duration) FROM results r "
                "WHERE r.run = f.run AND r.module = f.module), 0) FROM files f WHERE f.run = ?", (run,)):
            overhead[file].append(max(outside, 0.0) * scale.get(file, 1.0))
    return History(_medians(tests), _medians(overhead), basis)


def _scales(record: str) -> dict[str, float]:
    """File -> what its recorded seconds are multiplied by: its CPU share, at most 1 (a run record
    from the runs table, as JSON; files without a share are left out)."""
    try:
        files = json.loads(record).get("files") or []
    except (ValueError, AttributeError):
        return {}
    return {found["file"]: share_scale(found["cpu_share"]) for found in files
            if isinstance(found, dict) and isinstance(found.get("file"), str)
            and isinstance(found.get("cpu_share"), (int, float))}


def share_scale(cpu_share: float | None) -> float:
    """The factor a file's recorded seconds are weighed with: the time its tests had a core."""
    return min(cpu_share, 1.0) if cpu_share and cpu_share > 0 else 1.0


def run_history(run_dir: Path) -> tuple[History, str | None]:
    """The durations of one named run directory (`--durations RUN_DIR`), with its torch version."""
    run = RunDirectory(run_dir)
    record = run.read_record()
    scale = {f.file: share_scale(f.cpu_share) for f in record.files}
    tests = {result.nodeid: result.duration * scale.get(result.nodeid.split("::", 1)[0], 1.0)
             for result in JUnitFiles.of(run.junit_files()) if result.nodeid}
    inside: dict[str, float] = defaultdict(float)
    for nodeid, duration in tests.items():
        inside[nodeid.split("::", 1)[0]] += duration
    overhead = {f.file: max(f.duration * scale[f.file] - inside[f.file], 0.0) for f in record.files}
    return History(tests, overhead, (run_identity(record),)), record.versions.get("torch")


def _medians(values: dict[str, list[float]]) -> dict[str, float]:
    return {key: statistics.median(found) for key, found in values.items()}

"""The sides of a comparison: what `diff` compares, loaded from run directories (one run, or the
shards of one run merged) or from any folder of JUnit XML; and the newest run of each series in a
results root, for `diff-latest`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from harness.errors import HarnessError
from harness.record import ci_reports
from harness.record.junit import JUnitFiles
from harness.record.model import RunRecord, Shard, TestResult, side_label
from harness.record.store import RUN_RECORD, RunDirectory, find_runs


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its results and, for run directories, its run record.

    `results` is anything that yields TestResults again on every pass: the JUnit files of a folder
    (JUnitFiles), or results already in memory. A side split into shards (several run directories
    of one configuration and tier) has one merged `record` over every shard, and `parts`, the run
    directories and records it came from."""

    path: Path
    results: Iterable[TestResult]
    record: RunRecord | None
    parts: tuple[tuple[Path, RunRecord], ...] = ()

    @property
    def partial(self) -> bool:
        """Whether the runs are known to hold only part of their tier: narrowed to database entries or
        stages, or some of a sweep's shards. A pattern's tests outside them are unknown."""
        records = [record for _, record in self.parts] or ([self.record] if self.record else [])
        if any(record.entries or record.stages for record in records):
            return True
        shards = [Shard.of(record.shard) for record in records if record.shard]
        return bool(shards) and {shard.index for shard in shards} != set(range(1, shards[0].count + 1))

    @property
    def label(self) -> str:
        if self.record is None:
            return ci_reports.describe(self.path) or self.path.name
        label = side_label(str(self.record.configuration.get("name", "?")), self.record.threshold)
        return f"{label} [{len(self.parts)} shards]" if len(self.parts) > 1 else label


def load_side(path: Path) -> Side:
    """A run directory, a folder of run directories (shards, merged), or any folder of JUnit XML
    files (searched recursively). Results are read when the side is compared."""
    if not path.is_dir():
        raise HarnessError(f"{path}: not a directory (expected a run directory or a folder of JUnit XML files)")
    run = RunDirectory(path)
    if run.record_path.is_file():
        return load_runs([path])
    runs = sorted(record.parent for record in path.glob(f"*/{RUN_RECORD}"))
    if runs:
        return load_runs(runs, path)
    xml_files = JUnitFiles.of(sorted(path.rglob("*.xml")))
    if not xml_files.paths:
        raise HarnessError(f"{path}: no JUnit XML files and no {RUN_RECORD}")
    return Side(path, xml_files, None)


def load_runs(paths: list[Path], path: Path | None = None) -> Side:
    """Run directories that together make one side (the shards of one run), merged."""
    parts = tuple((run, RunDirectory(run).read_record()) for run in paths)
    results = JUnitFiles.of(xml for run, _ in parts for xml in RunDirectory(run).junit_files())
    return Side(path or paths[0], results, merge_records([record for _, record in parts]), parts)


def merge_records(records: list[RunRecord]) -> RunRecord:
    """One record over shards: every file, the earliest start, complete only if every shard is."""
    if len(records) == 1:
        return records[0]
    unfinished = [r.status for r in records if r.status != "complete"]
    finished = [r.finished for r in records]
    return replace(
        records[0],
        files=tuple(f for r in records for f in r.files),
        targets=tuple(t for r in records for t in r.targets),
        status=unfinished[0] if unfinished else "complete",
        started=min(r.started for r in records),
        finished=None if None in finished else max(f for f in finished if f is not None),
        skipped_reason=next((r.skipped_reason for r in records if r.skipped_reason), None),
        shard=None,
    )


class RunKey(NamedTuple):
    """The runs that are one series: the newest run of each is what `diff-latest` compares."""

    configuration: str
    tier: str
    threshold: int | None

    @classmethod
    def of(cls, record: RunRecord) -> RunKey:
        return cls(str(record.configuration.get("name")), record.tier, record.threshold)


def latest_sides(results_root: Path) -> dict[RunKey, list[Path]]:
    """The newest run of each series; for a sharded run, the newest run of each of its shards (same
    shard count as the newest one)."""
    groups: dict[RunKey, list[tuple[Path, RunRecord]]] = {}
    for path, record in find_runs(results_root):
        groups.setdefault(RunKey.of(record), []).append((path, record))
    latest: dict[RunKey, list[Path]] = {}
    for key, runs in groups.items():
        newest = runs[-1][1].shard
        if newest is None:
            latest[key] = [runs[-1][0]]
            continue
        count = Shard.of(newest).count
        by_shard = {Shard.of(record.shard): path for path, record in runs
                    if record.shard and Shard.of(record.shard).count == count}
        latest[key] = [by_shard[shard] for shard in sorted(by_shard)]
    return latest


def group_shards(paths: list[Path]) -> list[list[Path]]:
    """Paths given for comparison, grouped into sides: a run directory joins the one before it when
    both are shards (`--shard I/N`) of one series and N, with a new I."""
    groups: list[list[Path]] = []
    previous: tuple[RunKey, int] | None = None
    indexes: set[int] = set()
    for path in paths:
        run = RunDirectory(path)
        record = run.read_record() if run.record_path.is_file() else None
        shard = Shard.of(record.shard) if record is not None and record.shard else None
        key = (RunKey.of(record), shard.count) if record is not None and shard is not None else None
        if key is not None and key == previous and shard.index not in indexes:
            groups[-1].append(path)
            indexes.add(shard.index)
            continue
        groups.append([path])
        previous, indexes = key, ({shard.index} if shard is not None else set())
    return groups

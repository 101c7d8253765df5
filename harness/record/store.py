"""The results layout: where a run directory's parts live, and finding runs again.

    results/                                   --results, HARNESS_RESULTS, default ./results
      <config>-<tier>-<YYYYmmddTHHMMSS>/        one run directory per run
        run.json                               the RunRecord (rewritten after every file)
        junit/<module>.xml                     one JUnit XML per test file, every test in it
        events/<module>.jsonl                  the plugin's live stream (start/outcome per test)
        logs/<module>.log                      stdout and stderr of the test process(es)
        processes/<module>/<pid>.json          the JIT state of each process the tests started
        cache/                                 pytest, inductor and triton caches of this run
      harness.db                               the results database (harness/record/database.py)
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from harness.errors import HarnessError
from harness.protocol import Setting
from harness.record.junit import iter_results
from harness.record.model import RunRecord, TestResult

RUN_RECORD = "run.json"
RUN_LOCK = "runner.lock"  # held (flock) by the process running the run's files; holds its pid


def default_results_root() -> Path:
    return Path(os.environ.get(Setting.RESULTS) or "results")  # set but empty: the default, not "."


def ensure_folder(path: Path, what: str) -> Path:
    """A folder the harness will write into, created if missing and tried with a file; a one-line
    error naming `what` (the option) if it cannot be, before any work that would be lost."""
    if path.exists() and not path.is_dir():
        raise HarnessError(f"{what} {path}: is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        raise HarnessError(f"{what} {path}: cannot write there: {error.strerror}") from None
    return path


T = TypeVar("T")


def write_json_atomically(path: Path, data: object) -> None:
    """Replace a JSON record atomically: an interrupt never leaves half a record."""
    partial = path.with_suffix(".json.partial")
    try:
        partial.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise HarnessError(f"{path}: cannot write: {error.strerror}") from None


def read_json_record(path: Path, build: Callable[[dict], T], what: str) -> T:
    """A record read back from JSON, or a one-line error naming the file."""
    try:
        return build(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, RecursionError) as error:
        raise HarnessError(f"{path}: not a readable {what}: {error}") from None


@dataclass(frozen=True)
class RunDirectory:
    """Paths inside one run directory."""

    root: Path

    @property
    def record_path(self) -> Path:
        return self.root / RUN_RECORD

    def junit(self, module: str) -> Path:
        return self.root / "junit" / f"{module}.xml"

    def events(self, module: str) -> Path:
        return self.root / "events" / f"{module}.jsonl"

    def log(self, module: str) -> Path:
        return self.root / "logs" / f"{module}.log"

    def processes(self, module: str) -> Path:
        """Where the processes a file's tests started report their JIT state, one file each."""
        return self.root / "processes" / module

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def create(self) -> None:
        for part in ("junit", "events", "logs", "processes", "cache"):
            ensure_folder(self.root / part, "run directory")

    @contextmanager
    def hold(self) -> Iterator[None]:
        """The run, for this process alone while it runs files: a second runner (`--resume` twice, a
        resume of a run still running) is refused in one line. The kernel drops the lock when its
        holder dies, so a killed runner never keeps its run."""
        handle = open(self.root / RUN_LOCK, "a+", encoding="utf-8")  # noqa: SIM115 - held across the yield
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            handle.close()
            raise HarnessError(f"{self.root}: process {holder} is running this run (a run or a --resume); "
                               "wait for it to end, or stop it, then resume") from None
        try:
            handle.truncate(0)
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            yield
        finally:
            handle.close()

    def write_record(self, record: RunRecord) -> None:
        write_json_atomically(self.record_path, record.to_json())

    def read_record(self) -> RunRecord:
        return read_json_record(self.record_path, RunRecord.from_json, "run record")


@dataclass(frozen=True)
class JUnitFiles:
    """The results of JUnit XML files, read again on every pass, a suite at a time: a side of a
    million tests is streamed, never held in memory."""

    paths: tuple[Path, ...]

    def __iter__(self) -> Iterator[TestResult]:
        for path in self.paths:
            yield from iter_results(path)

    @property
    def size(self) -> int:
        """Bytes of XML, to judge whether reading them is worth a process of its own."""
        return sum(path.stat().st_size for path in self.paths)


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
    def label(self) -> str:
        if self.record is None:
            return self.path.name
        threshold = self.record.threshold
        name = self.record.configuration.get("name", "?")
        label = f"{name} (threshold {threshold})" if threshold is not None else str(name)
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
    xml_files = sorted(path.rglob("*.xml"))
    if not xml_files:
        raise HarnessError(f"{path}: no JUnit XML files and no {RUN_RECORD}")
    return Side(path, JUnitFiles(tuple(xml_files)), None)


def load_runs(paths: list[Path], path: Path | None = None) -> Side:
    """Run directories that together make one side (the shards of one run), merged."""
    parts = tuple((run, RunDirectory(run).read_record()) for run in paths)
    results = JUnitFiles(tuple(xml for run, _ in parts for xml in sorted((run / "junit").glob("*.xml"))))
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


def new_run_directory(results_root: Path, configuration: str, tier: str, shard: str | None,
                      started: datetime) -> RunDirectory:
    """`<config>-<tier>[-shardIofN]-<timestamp>`: recent_runs finds a tier's newest runs by name."""
    part = f"-shard{shard.replace('/', 'of')}" if shard else ""
    name = f"{configuration}-{tier}{part}-{started:%Y%m%dT%H%M%S%f}"
    if Path(name).name != name or name.startswith("."):
        raise HarnessError(f"run directory name {name!r} would not be a folder of {results_root}")
    return RunDirectory(results_root / name)


def recent_runs(results_root: Path, tier: str, count: int) -> list[RunRecord]:
    """The records of the newest `count` runs of `tier`, oldest first, found by their directory
    names: only those records are read, however many runs the folder holds."""
    named = list(results_root.glob(f"*-{tier}-*/{RUN_RECORD}")) if results_root.is_dir() else []
    newest = sorted(named, key=lambda path: path.parent.name.rsplit("-", 1)[-1])[-count:]
    records = [RunDirectory(path.parent).read_record() for path in newest]
    return [record for record in records if record.tier == tier]


def find_runs(results_root: Path) -> list[tuple[Path, RunRecord]]:
    """Every run directory under `results_root`, oldest first."""
    runs = []
    for record_path in sorted(results_root.glob(f"*/{RUN_RECORD}")):
        record = RunDirectory(record_path.parent).read_record()
        runs.append((record_path.parent, record))
    return sorted(runs, key=lambda item: item[1].started)


def latest_runs(results_root: Path) -> dict[tuple[str, str], Path]:
    """The newest run directory of each (configuration, tier)."""
    latest: dict[tuple[str, str], Path] = {}
    for path, record in find_runs(results_root):
        latest[(str(record.configuration.get("name")), record.tier)] = path
    return latest


def latest_sides(results_root: Path) -> dict[tuple[str, str, int | None], list[Path]]:
    """The newest run of each (configuration, tier, threshold); for a sharded run, the newest run
    of each of its shards (same shard count as the newest one)."""
    groups: dict[tuple[str, str, int | None], list[tuple[Path, RunRecord]]] = {}
    for path, record in find_runs(results_root):
        groups.setdefault((str(record.configuration.get("name")), record.tier, record.threshold), []).append((path, record))
    latest: dict[tuple[str, str, int | None], list[Path]] = {}
    for key, runs in groups.items():
        newest = runs[-1][1].shard
        if newest is None:
            latest[key] = [runs[-1][0]]
            continue
        count = newest.split("/")[1]
        by_shard = {record.shard: path for path, record in runs if record.shard and record.shard.split("/")[1] == count}
        latest[key] = [by_shard[shard] for shard in sorted(by_shard, key=lambda s: int(s.split("/")[0]))]
    return latest


def group_shards(paths: list[Path]) -> list[list[Path]]:
    """Paths given for comparison, grouped into sides: a run directory joins the one before it when
    both are shards (`--shard I/N`) of one configuration, tier, threshold and N, with a new I."""
    groups: list[list[Path]] = []
    previous: tuple[str, str, int | None, str] | None = None
    indexes: set[str] = set()
    for path in paths:
        run = RunDirectory(path)
        record = run.read_record() if run.record_path.is_file() else None
        key = None
        if record is not None and record.shard:
            index, count = record.shard.split("/")
            key = (str(record.configuration.get("name")), record.tier, record.threshold, count)
        if key is not None and key == previous and index not in indexes:
            groups[-1].append(path)
            indexes.add(index)
            continue
        groups.append([path])
        previous, indexes = key, ({index} if key is not None else set())
    return groups

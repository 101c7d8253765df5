"""The results layout: where a run directory's parts live, and finding runs again (what a side of a
comparison is made of lives in harness/compare/sides.py).

    results/                                   --results, HARNESS_RESULTS, default ./results
      <config>-<tier>-<YYYYmmddTHHMMSS>/        one run directory per run
        run.json                               the RunRecord (rewritten after every file)
        run.json.reserve                       space held while the run runs (record/writing.py: Reserve)
        junit/<module>.xml                     one JUnit XML per test file, every test in it
        events/<module>.jsonl                  the plugin's live stream (start/outcome per test)
        logs/<module>.log                      stdout and stderr of the test process(es)
        processes/<module>/<pid>.json          the JIT state of each process the tests started
        compiled/<module>/<pid>.json           the functions each JIT process of a file compiled
        coverage.json                          JIT coverage of torch over the run (record/coverage.py)
        cache/                                 pytest, inductor and triton caches of this run
      harness.db                               the results database (harness/record/database.py)
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol, TypeVar

from harness.errors import HarnessError, cause
from harness.protocol import Setting
from harness.record.model import RunRecord
from harness.record.writing import Reserve, write_atomically

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
        raise HarnessError(f"{what} {path}: cannot write there: {cause(error)}") from None
    return path


T = TypeVar("T")


def write_json_atomically(path: Path, data: object) -> None:
    """Replace a JSON record atomically: an interrupt or a full disk never leaves half a record."""
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


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

    def junit_files(self) -> tuple[Path, ...]:
        """Every file's JUnit XML, in name order."""
        return tuple(sorted((self.root / "junit").glob("*.xml")))

    def events(self, module: str) -> Path:
        return self.root / "events" / f"{module}.jsonl"

    def log(self, module: str) -> Path:
        return self.root / "logs" / f"{module}.log"

    def processes(self, module: str) -> Path:
        """Where the processes a file's tests started report their JIT state, one file each."""
        return self.root / "processes" / module

    def compiled(self, module: str) -> Path:
        """Where every JIT process of a file writes the functions it compiled, one file each."""
        return self.root / "compiled" / module

    def compiled_files(self) -> tuple[Path, ...]:
        """Every process's compiled functions, of every file, in name order."""
        return tuple(sorted((self.root / "compiled").glob("*/*.json")))

    @property
    def coverage(self) -> Path:
        return self.root / "coverage.json"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def create(self) -> None:
        for part in ("junit", "events", "logs", "processes", "compiled", "cache"):
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

    @property
    def reserve(self) -> Reserve:
        """Space held while the run runs, so that a full disk still lets it be marked interrupted."""
        return Reserve(self.record_path)

    def write_record(self, record: RunRecord) -> None:
        write_json_atomically(self.record_path, record.to_json())

    def read_record(self) -> RunRecord:
        return read_json_record(self.record_path, RunRecord.from_json, "run record")


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


class Started(Protocol):
    started: str  # ISO time: sorts as the runs started


R = TypeVar("R", bound=Started)


def find_records(results_root: Path, pattern: str, read: Callable[[Path], R]) -> list[tuple[Path, R]]:
    """Every run directory under `results_root` whose record file matches `pattern` (test runs:
    `*/run.json`, perf runs: `perf-*/perf.json`), with its record, oldest first."""
    runs = [(record_path.parent, read(record_path.parent)) for record_path in sorted(results_root.glob(pattern))]
    return sorted(runs, key=lambda item: item[1].started)


def find_runs(results_root: Path) -> list[tuple[Path, RunRecord]]:
    """Every test run directory under `results_root`, oldest first."""
    return find_records(results_root, f"*/{RUN_RECORD}", lambda path: RunDirectory(path).read_record())

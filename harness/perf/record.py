"""The perf run directory: where a performance run's parts live, its record, and finding runs again.

    results/                                      --results, HARNESS_RESULTS, default ./results
      perf-<config>[-t<threshold>]-<timestamp>/    one directory per `harness perf run`
        perf.json                                  the PerfRecord: configuration, threshold,
                                                   interpreter, versions, fingerprint, command
        pyperf.json                                pyperf's BenchmarkSuite (every worker's values
                                                   and metadata, JIT compile counts included)
        suite.log                                  what the pyperf manager printed
        cache/                                     the run's inductor and triton caches

No `run.json` here, so test-run tools (`diff-latest`) never mistake a perf run for a test run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.record import typed
from harness.record.model import side_label
from harness.record.store import find_records, read_json_record, write_json_atomically

if TYPE_CHECKING:  # finding perf runs needs no pyperf (the test diff's report looks for them); loading one does
    import pyperf

PERF_RECORD = "perf.json"
PYPERF_JSON = "pyperf.json"
PREFIX = "perf-"


@dataclass(frozen=True)
class PerfRecord:
    """What one perf run measured, where, and with what: enough to refuse an unfair comparison."""

    configuration: str
    threshold: int | None
    jit: str
    interpreter: dict[str, Any]
    versions: dict[str, Any]
    fingerprint: dict[str, Any]
    command: tuple[str, ...]
    benchmarks: tuple[str, ...]
    started: str
    finished: str | None = None
    status: str = "running"  # running | complete | failed | interrupted
    exit_status: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    failures: tuple[str, ...] = ()  # suite invocations that failed and were run again (crashed workers)

    @property
    def label(self) -> str:
        """How reports name this side: as test runs' sides are named."""
        return side_label(self.configuration, self.threshold)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> PerfRecord:
        """A record read back, every field checked against its type (ValueError naming the field)."""
        return typed.from_json(cls, data)


@dataclass(frozen=True)
class PerfRunDirectory:
    """Paths inside one perf run directory."""

    root: Path

    @property
    def record_path(self) -> Path:
        return self.root / PERF_RECORD

    @property
    def pyperf_json(self) -> Path:
        return self.root / PYPERF_JSON

    @property
    def log(self) -> Path:
        return self.root / "suite.log"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def create(self) -> None:
        self.cache.mkdir(parents=True, exist_ok=False)

    def write_record(self, record: PerfRecord) -> None:
        write_json_atomically(self.record_path, record.to_json())

    def read_record(self) -> PerfRecord:
        return read_json_record(self.record_path, PerfRecord.from_json, "perf record")


def new_run_directory(results_root: Path, configuration: str, threshold: int | None, now: datetime) -> PerfRunDirectory:
    """A fresh directory whose name says configuration, threshold and start time."""
    suffix = f"-t{threshold}" if threshold is not None else ""
    return PerfRunDirectory(results_root / f"{PREFIX}{configuration}{suffix}-{now:%Y%m%dT%H%M%S%f}")


@dataclass(frozen=True)
class PerfSide:
    """One side of a comparison: pyperf's suite and, for perf run directories, the run's record."""

    path: Path
    suite: pyperf.BenchmarkSuite
    record: PerfRecord | None

    @property
    def label(self) -> str:
        return self.record.label if self.record else self.path.stem if self.path.is_file() else self.path.name


def load_perf_side(path: Path) -> PerfSide:
    """A perf run directory (complete) or any pyperf JSON file (`-o` output of a pyperf script)."""
    if path.is_dir():
        run = PerfRunDirectory(path)
        if not run.record_path.is_file():
            raise HarnessError(f"{path}: not a perf run directory (no {PERF_RECORD})")
        record = run.read_record()
        if record.status != "complete":
            raise HarnessError(f"{path}: the perf run is {record.status}, not complete (see {run.log})")
        return PerfSide(path, _load_suite(run.pyperf_json), record)
    if not path.is_file():
        raise HarnessError(f"{path}: no such perf run directory or pyperf JSON file")
    return PerfSide(path, _load_suite(path), None)


def _load_suite(path: Path) -> pyperf.BenchmarkSuite:
    import pyperf

    try:
        return pyperf.BenchmarkSuite.load(str(path))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(f"{path}: not a readable pyperf JSON file: {error}") from None


def latest_perf_runs(results_root: Path) -> dict[tuple[str, int | None], Path]:
    """The newest complete perf run of each (configuration, threshold), oldest key first."""
    latest: dict[tuple[str, int | None], Path] = {}
    for path, record in find_records(results_root, f"{PREFIX}*/{PERF_RECORD}",
                                     lambda path: PerfRunDirectory(path).read_record()):
        if record.status == "complete":
            latest[(record.configuration, record.threshold)] = path
    return latest


def latest_pairing(results_root: Path, baseline: str) -> tuple[Path | None, list[Path]]:
    """The newest complete perf run of the baseline configuration, and the newest of every other
    (configuration, threshold): by configuration, highest threshold first."""
    latest = latest_perf_runs(results_root)
    baselines = [path for (config, _), path in latest.items() if config == baseline]
    others = sorted(((config, threshold), path) for (config, threshold), path in latest.items() if config != baseline)
    others.sort(key=lambda item: (item[0][0], -(item[0][1] if item[0][1] is not None else -1)))
    return (baselines[-1] if baselines else None), [path for _, path in others]


def finished(record: PerfRecord, exit_status: int, when: str, interrupted: bool = False) -> PerfRecord:
    """The record of a run whose last suite process ended with `exit_status`."""
    status = "interrupted" if interrupted else "complete" if exit_status == 0 else "failed"
    return replace(record, finished=when, exit_status=exit_status, status=status)

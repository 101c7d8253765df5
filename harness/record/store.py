"""The results layout: where a run directory's parts live, and finding runs again.

    results/                                   --results, HARNESS_RESULTS, default ./results
      <config>-<tier>-<YYYYmmddTHHMMSS>/        one run directory per run
        run.json                               the RunRecord (rewritten after every file)
        junit/<module>.xml                     one JUnit XML per test file, every test in it
        events/<module>.jsonl                  the plugin's live stream (start/outcome per test)
        logs/<module>.log                      stdout and stderr of the test process(es)
        cache/                                 pytest, inductor and triton caches of this run
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.record.junit import read_results
from harness.record.model import RunRecord, TestResult

RUN_RECORD = "run.json"


def default_results_root() -> Path:
    return Path(os.environ.get("HARNESS_RESULTS", "results"))


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

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def create(self) -> None:
        for part in ("junit", "events", "logs", "cache"):
            (self.root / part).mkdir(parents=True, exist_ok=True)

    def write_record(self, record: RunRecord) -> None:
        """Replace run.json atomically: an interrupt never leaves half a record."""
        partial = self.record_path.with_suffix(".json.partial")
        partial.write_text(json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        partial.replace(self.record_path)

    def read_record(self) -> RunRecord:
        try:
            return RunRecord.from_json(json.loads(self.record_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as error:
            raise HarnessError(f"{self.record_path}: not a readable run record: {error}") from None


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its results and, for run directories, its run record."""

    path: Path
    results: tuple[TestResult, ...]
    record: RunRecord | None

    @property
    def label(self) -> str:
        if self.record is None:
            return self.path.name
        threshold = self.record.threshold
        name = self.record.configuration.get("name", "?")
        return f"{name} (threshold {threshold})" if threshold is not None else str(name)


def load_side(path: Path) -> Side:
    """A run directory, or any directory of JUnit XML files (searched recursively)."""
    if not path.is_dir():
        raise HarnessError(f"{path}: not a directory (expected a run directory or a folder of JUnit XML files)")
    run = RunDirectory(path)
    record = run.read_record() if run.record_path.is_file() else None
    xml_files = sorted((path / "junit").glob("*.xml")) if record else sorted(path.rglob("*.xml"))
    if not xml_files and record is None:
        raise HarnessError(f"{path}: no JUnit XML files and no {RUN_RECORD}")
    results = tuple(result for xml in xml_files for result in read_results(xml))
    return Side(path, results, record)


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

"""The shapes that pass from run to record to compare: test results, file records, run records.

A run directory holds `run.json` (a RunRecord) and one JUnit XML file per test file. Everything a
comparison needs to judge validity (interpreter, versions, JIT proof, contamination, test source
identity, completeness) lives in the RunRecord.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SCHEMA = 1


@dataclass(frozen=True)
class TestResult:
    """One test's outcome, identified the way pytest's JUnit XML identifies it."""

    __test__ = False  # a record of a test, not a test class for pytest to collect

    classname: str
    name: str
    outcome: str
    module: str
    duration: float = 0.0
    message: str = ""
    text: str = ""
    nodeid: str = ""
    replay: str = ""  # the command that reruns this test alone in its configuration
    attempts: tuple[str, ...] = ()  # earlier attempts of a rerun test ("failed: message"), oldest first

    @property
    def test_id(self) -> str:
        return f"{self.classname}::{self.name}"


@dataclass(frozen=True)
class StoredResult:
    """One test's result as a results table holds it (harness/record/stream.py): under its identity
    key, with everything a comparison or the history reads, but not its traceback."""

    test: str  # the identity key (harness/record/identity.py)
    module: str
    outcome: str
    duration: float = 0.0
    message: str = ""
    nodeid: str = ""
    replay: str = ""
    attempts: tuple[str, ...] = ()


def junit_names(nodeid: str) -> tuple[str, str]:
    """(classname, name) for a pytest node id, as pytest's own --junitxml derives them."""
    path, bracket, params = nodeid.partition("[")
    parts = path.split("::")
    parts[0] = re.sub(r"\.py$", "", parts[0].replace("/", "."))
    parts[-1] += bracket + params
    return ".".join(parts[:-1]), parts[-1]


@dataclass(frozen=True)
class FileRecord:
    """How one test file's process(es) ended, and what the JIT did in it."""

    file: str
    module: str
    exit_status: int | None
    signal: str | None
    duration: float
    counts: dict[str, int]
    jit: dict[str, Any] | None = None
    jit_error: str | None = None
    contamination: str | None = None
    culprit: str | None = None
    processes: int = 1  # more than 1 when the file was resumed in a new process after a crash or hang
    restart: str | None = None  # how it resumes: "warm" (a fork of the collected process) or "fresh: <why>"

    @property
    def vacuous(self) -> bool:
        """A JIT file whose JIT compiled nothing: its passes prove nothing about the JIT."""
        return self.jit is not None and self.jit.get("compiled", 0) == 0


@dataclass(frozen=True)
class RunRecord:
    """What ran where: enough to decide whether two runs may be compared at all."""

    configuration: dict[str, Any]
    tier: str
    threshold: int | None
    interpreter: dict[str, Any]
    versions: dict[str, str | None]
    fingerprint: dict[str, Any]
    tests_dir: str
    test_sources: dict[str, Any]
    started: str
    finished: str | None = None
    status: str = "running"  # running | complete | interrupted
    skipped_reason: str | None = None
    files: tuple[FileRecord, ...] = ()
    command: list[str] = field(default_factory=list)
    targets: tuple[str, ...] = ()  # the files or node ids this run was asked to run (a shard's share)
    shard: str | None = None  # "I/N" when the tier was split across machines
    python: str = ""  # the interpreter the test processes ran under (what --resume reuses)
    schema: int = SCHEMA

    @property
    def jit_mode(self) -> str:
        return str(self.configuration.get("jit", "absent"))

    @property
    def compiled(self) -> int:
        return sum(f.jit.get("compiled", 0) for f in self.files if f.jit)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        known = {f.name for f in fields(cls)}
        file_fields = {f.name for f in fields(FileRecord)}
        values = {key: value for key, value in data.items() if key in known}
        values["files"] = tuple(FileRecord(**{k: v for k, v in item.items() if k in file_fields})
                                for item in data.get("files", ()))
        values["targets"] = tuple(values.get("targets", ()))
        return cls(**values)

"""The shapes that pass from run to record to compare: test results, file records, run records.

A run directory holds `run.json` (a RunRecord) and one JUnit XML file per test file. Everything a
comparison needs to judge validity (interpreter, versions, JIT proof, contamination, test source
identity, completeness) lives in the RunRecord.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from collections.abc import Sequence
from typing import Any, NamedTuple

from harness.protocol import Outcome
from harness.record import typed


def side_label(configuration: str, threshold: int | None) -> str:
    """How every report names a run's side: its configuration, with the JIT threshold when one was set."""
    return f"{configuration} (threshold {threshold})" if threshold is not None else configuration

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


# One test's TestResult fields, in order, as a plain tuple (TestResult(*fields) makes one): what the JUnit
# reader hands the stream into SQLite, which takes them straight to rows; a frozen dataclass per test
# costs more than parsing the test's XML.
Fields = tuple[str, str, str, str, float, str, str, str, str, tuple[str, ...]]


def fields_of(result: TestResult) -> Fields:
    """A TestResult as Fields."""
    return (result.classname, result.name, result.outcome, result.module, result.duration, result.message,
            result.text, result.nodeid, result.replay, result.attempts)


@dataclass(frozen=True)
class Plain:
    """Plain tests as columns: how the JUnit reader hands over the bulk of a plain pytest report, so
    no per-test Python object is made between the XML and SQLite. A plain pass is nothing but a name,
    a class, a module and a time; a plain skip (pytest's `<skipped>` and nothing else) adds its
    outcome (skipped, or xfailed), its message and its text. Each column holds one entry per test; `joined`
    is each test's `classname::name` (its identity key unless the name holds per-process noise),
    `places` its place in its file (0 for the file's first test)."""

    classnames: Sequence[str]
    names: Sequence[str]
    joined: Sequence[str]
    modules: Sequence[str]
    durations: Sequence[float]
    places: Sequence[int]
    outcomes: Sequence[str] | None = None  # None: every test passed, with no message
    messages: Sequence[str] | None = None  # with `outcomes`: each test's message ("" for none)
    texts: Sequence[str] | None = None  # with `outcomes`: each test's text ("" for none)

    def __len__(self) -> int:
        return len(self.names)

    def fields(self) -> list[Fields]:
        """The same tests as Fields, for a reader that wants them one at a time."""
        count = len(self.names)
        outcomes = self.outcomes if self.outcomes is not None else (_PASSED,) * count
        messages = self.messages if self.messages is not None else ("",) * count
        texts = self.texts if self.texts is not None else ("",) * count
        return [(classname, name, outcome, module, duration, message, text, "", "", ())
                for classname, name, outcome, module, duration, message, text in zip(
                    self.classnames, self.names, outcomes, self.modules, self.durations, messages, texts)]


@dataclass(frozen=True)
class PlainFile:
    """A file read on the JUnit reader's plain path: its plain passes and plain skips, and its other
    tests, each with its place in the file, so they can be written in bulk."""

    passes: Plain
    skips: Plain
    fields: list[Fields]
    places: list[int]  # of each of `fields`

    def __len__(self) -> int:
        return len(self.passes) + len(self.skips) + len(self.fields)

    def in_order(self) -> list[Fields]:
        """Every test as Fields, in the file's order."""
        placed = sorted([*zip(self.passes.places, self.passes.fields()), *zip(self.skips.places, self.skips.fields()),
                         *zip(self.places, self.fields)], key=lambda item: item[0])
        return [fields for _, fields in placed]


Batch = list[Fields] | PlainFile  # what the JUnit reader hands over at a time
_PASSED = Outcome.PASSED.value


def batch_fields(batch: Batch) -> list[Fields]:
    """A batch's tests as Fields, whichever shape it came in."""
    return batch.in_order() if isinstance(batch, PlainFile) else batch


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
    descendants: dict[str, Any] | None = None  # Descendants.as_dict(): the JIT in processes the tests started
    stream_errors: tuple[str, ...] = ()  # lines of its event stream that were not events ("line N: 'text'")
    jit_processes: tuple[dict[str, Any], ...] = ()  # per test process: the JIT state CinderX reported at the
    # switch (`applied`, with `collected` and `compiled_before`) and at the end (`finished`)
    cpu_share: float | None = None  # CPU seconds over wall seconds of its tests (in the processes that finished):
    # below 1 where they waited for a core; recorded durations are weighed with it (record/durations.py)
    peak_mb: float | None = None  # the largest peak RSS of its test processes: what `--jobs auto` sizes runs with
    split: str | None = None  # a file the run's plan split: "K pieces, forked after one collection" or "unsplit: <why>"

    @property
    def compiled(self) -> int:
        """Functions the JIT compiled for this file: in its test processes and in the processes they started."""
        own = self.jit.get("compiled", 0) if self.jit else 0
        return own + (self.descendants.get("compiled", 0) if self.descendants else 0)

    @property
    def vacuous(self) -> bool:
        """A JIT file whose JIT compiled nothing: its passes prove nothing about the JIT."""
        return self.jit is not None and self.compiled == 0


@dataclass(frozen=True)
class Descendants:
    """The processes a file's tests started (multiprocessing workers, subprocesses) and whether
    each ran under the JIT request of its configuration, as it reported when it ended."""

    started: int  # multiprocessing children the test processes announced
    reported: int  # descendants that reported (their own children included)
    as_requested: int  # of those, the JIT was as the configuration asked (on: enabled; off: loaded, disabled)
    compiled: int  # functions they compiled themselves (code inherited through fork not counted)
    without_jit: tuple[str, ...] = ()  # "pid argv: state" of descendants whose JIT was not as asked
    unreported: tuple[str, ...] = ()  # "pid: exit status N" of children that ended normally, unreported
    killed: int = 0  # children ended by a signal before they could report

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def problems(self) -> list[str]:
        """Worker processes that ran without the JIT, or that never proved they had it."""
        found = [f"{len(self.without_jit)} of {self.reported} worker processes ran without the JIT "
                 f"({'; '.join(self.without_jit[:3])})"] if self.without_jit else []
        if self.unreported:
            found.append(f"{len(self.unreported)} of {self.started} worker processes ended without reporting "
                         f"their JIT state ({'; '.join(self.unreported[:3])})")
        return found


@dataclass(frozen=True)
class Sharding:
    """How a shard's tests were chosen (harness/run/shards.py), kept so that every later shard of the
    same sweep, in any configuration, chooses from the same weights: the basis is pinned."""

    selection: str  # hash of what was split: the unsharded targets and entries
    weights: str  # "durations" (recorded per test) or "counts" (one per test: no history)
    basis: tuple[str, ...] = ()  # identities of the runs whose recorded durations weighed the tests


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
    stages: tuple[str, ...] = ()  # the tier's stages the run selected (--stage); none: the whole tier
    python: str = ""  # the interpreter the test processes ran under (what --resume reuses)
    absent: tuple[str, ...] = ()  # files the tier names that the tests directory does not have
    entries: tuple[str, ...] = ()  # PyTorch database entries the run was narrowed to (--select NAME)
    narrowed: tuple[str, ...] = ()  # the files those entries narrow; a file selected by its path runs whole
    sharding: Sharding | None = None  # how a shard's targets were chosen (--shard)
    architecture: str = ""  # the test interpreter's processor architecture ("" in records from before it was kept)
    emulated: bool = False  # it ran under an emulator (qemu-user) on a host of another architecture
    timeout_scale: int = 1  # the tier's time limits were multiplied by this (emulated runs)
    schema: int = SCHEMA

    @property
    def jit_mode(self) -> str:
        return str(self.configuration.get("jit", "absent"))

    @property
    def compiled(self) -> int:
        return sum(f.compiled for f in self.files)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> RunRecord:
        """A record read back, every field checked against its type (ValueError naming the field)."""
        record = typed.from_json(cls, data)
        _check_values(record)
        return record


_SHARD = re.compile(r"([0-9]+)/([0-9]+)")


def shard_problem(text: str) -> str | None:
    """The one rule for a shard, `--shard I/N` as a run record's: what is wrong with `text`, or None."""
    match = _SHARD.fullmatch(text)
    return None if match and 1 <= int(match[1]) <= int(match[2]) else f"must be I/N with 1 <= I <= N, not {text!r}"


class Shard(NamedTuple):
    """A run record's `shard` (`I/N`, checked when the record is read): shard `index` of `count`."""

    index: int
    count: int

    @classmethod
    def of(cls, text: str) -> Shard:
        index, count = text.split("/")
        return cls(int(index), int(count))


def _check_values(record: RunRecord) -> None:
    """What the types alone do not say and readers rely on: a configuration's name, a shard's
    I/N, a JIT state's compiled count."""
    if not isinstance(record.configuration.get("name"), str):
        raise ValueError(f"configuration.name: expected str, not {record.configuration.get('name')!r}")
    if record.shard is not None and shard_problem(record.shard):
        raise ValueError(f"shard: {shard_problem(record.shard)}")
    for index, file in enumerate(record.files):
        compiled = (file.jit or {}).get("compiled", 0)
        if not isinstance(compiled, int) or isinstance(compiled, bool):
            raise ValueError(f"files[{index}].jit.compiled: expected int, not {compiled!r}")

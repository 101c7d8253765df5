"""The contract between the runner and its test processes: one owner for every name both sides use.

The runner starts test processes (and replay, confirmation and perf processes) with a `Request`
in `HARNESS_*` environment variables; the pytest plugin inside them reads it back with the same
type and streams `Event`s, one JSON object per line, naming each test's `Outcome`. Defaults both
sides must agree on live here too.

Standard library only: the plugin imports this inside every configuration's interpreter.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

DEFAULT_THRESHOLD = 1000  # calls before the JIT compiles a function, when a configuration names none


def threshold_problem(threshold: int) -> str | None:
    """The one range rule for a JIT threshold, in a data file as on the command line."""
    return None if threshold >= 0 else f"must be 0 or more, not {threshold}"


class Env(StrEnum):
    """Environment variables the runner sets for its test processes."""

    JIT = "HARNESS_JIT"  # absent | off | on
    THRESHOLD = "HARNESS_THRESHOLD"
    ACTIVATION = "HARNESS_ACTIVATION"  # after-collection | startup
    DISENGAGE = "HARNESS_DISENGAGE"  # "1": pause the JIT while dynamo traces
    EVENTS = "HARNESS_EVENTS"  # the JSON-lines event stream of one file
    DESELECT = "HARNESS_DESELECT"  # node ids, one per line, that an earlier process finished
    CONTROL_FD = "HARNESS_CONTROL_FD"  # a warm host reads `resume` commands from this descriptor
    PROCESS_REPORTS = "HARNESS_PROCESS_REPORTS"  # folder where each descendant process reports its JIT
    COMPILED = "HARNESS_COMPILED"  # folder where every process of a file writes the functions its JIT compiled
    ENTRIES = "HARNESS_ENTRIES"  # comma-separated PyTorch database entries the bundled suites instantiate
    SPLIT = "HARNESS_SPLIT"  # a warm host: the file (JSON: pieces, weights per node id) saying how many workers
    # to fork at once, each running one contiguous piece of the collected tests (docs/scaling.md)
    SELECT = "HARNESS_SELECT"  # a rerun host: the file naming the node ids its next worker runs (see forkserver)
    JIT_SETTINGS = "HARNESS_JIT_SETTINGS"  # a rerun host: the file of CinderX settings (JSON: environment
    # variable -> value) its next worker puts into its environment before it imports CinderX (culprit search)
    LOCATE = "HARNESS_LOCATE"  # a collecting process: the file of module:qualname names whose code to locate
    # Marks that every process of a run, and every descendant, inherits: how its processes are found
    # in /proc at the end of a file and before a resume (harness/run/processes.py).
    RUN_DIR = "HARNESS_RUN_DIR"  # the run directory
    FILE = "HARNESS_FILE"  # the test file, relative to the tests directory


class Setting(StrEnum):
    """Environment variables a user sets to point the harness elsewhere: read by the harness itself,
    never part of a `Request` (listed here so every `HARNESS_*` name has one owner)."""

    RESULTS = "HARNESS_RESULTS"  # the results root (--results; default ./results)
    DATABASE = "HARNESS_DB"  # another results database file than the one in the results root
    CACHE = "HARNESS_CACHE"  # provisioned interpreters, shared package layers, PyTorch checkouts
    CONFIGURATIONS = "HARNESS_CONFIGURATIONS"  # a user file of configurations added to the shipped ones
    TIERS = "HARNESS_TIERS"  # a user file of tiers added to the shipped ones
    KNOWN_REGRESSIONS = "HARNESS_KNOWN_REGRESSIONS"  # a user file of known regressions
    TESTS_DIR = "HARNESS_TESTS_DIR"  # a PyTorch checkout's test/ folder (--tests-dir)
    PYTORCH_REPO = "HARNESS_PYTORCH_REPO"  # where fetch-tests clones PyTorch from (--repo)
    DEBIAN_MIRROR = "HARNESS_DEBIAN_MIRROR"  # where provisioning downloads CPython 3.14 from
    STRESS_SECONDS = "HARNESS_STRESS_SECONDS"  # how long each round of the stress tier traces
    CHROMIUM = "HARNESS_CHROMIUM"  # the browser the HTML report's tests drive (default: chromium on PATH)


ENV_PREFIX = "HARNESS_"  # every variable of Env and Setting: a perf child inherits them all

# Variables meant for the test process alone: the plugin removes them from its environment, so a
# child process (a child pytest, a script a test runs) can neither write the stream nor take a command.
PRIVATE_ENV = (Env.EVENTS, Env.DESELECT, Env.CONTROL_FD, Env.SPLIT, Env.SELECT, Env.JIT_SETTINGS)


class JitMode(StrEnum):
    ABSENT = "absent"  # CinderX must be impossible to import
    OFF = "off"  # CinderX loaded, JIT disabled
    ON = "on"


class Activation(StrEnum):
    AFTER_COLLECTION = "after-collection"
    STARTUP = "startup"


class Event(StrEnum):
    """The kinds of line in an event stream (`{"event": <kind>, "time": ..., ...}`). Every event of a
    worker of a split file, and its host's `worker_exit`, also names the worker's piece (PIECE)."""

    SESSION_START = "session_start"  # a test process started pytest
    WORKER_START = "worker_start"  # a warm host forked a worker to run the tests
    WORKER_EXIT = "worker_exit"  # a worker died before its session finished; the host waits
    COLLECTED = "collected"
    RESTART = "restart"  # how this process would resume after a crash: "warm" or "fresh: <why>"; `pieces`: how many
    # workers it forks at once (a split file; 1 otherwise)
    JIT_APPLIED = "jit_applied"  # the JIT request was applied; its state read back
    JIT_COUNT = "jit_count"  # compiled functions so far (periodic, so a crash keeps a recent count)
    COLLECT_ERROR = "collect_error"
    START = "start"  # a test started
    RESULT = "result"  # a test's final outcome
    SESSION_FINISH = "session_finish"  # every result is written; the JIT's final state
    INTERNAL_ERROR = "internal_error"  # pytest itself broke (INTERNALERROR): the file's remaining tests never ran
    CHILD_START = "child_start"  # the test process started a multiprocessing child (pid)
    CHILD_EXIT = "child_exit"  # that child ended (its exit status: negative for a signal)


PIECE = "piece"  # the field of an event that names the piece (0, 1, ...) of a split file its worker runs

SESSION_STARTS = frozenset({Event.SESSION_START, Event.WORKER_START})


class Outcome(StrEnum):
    """What became of one test. Ranked: when a test's phases disagree, the higher rank wins."""

    PASSED = "passed"
    XPASSED = "xpassed"
    SKIPPED = "skipped"
    XFAILED = "xfailed"
    FAILED = "failed"
    ERROR = "error"
    CRASHED = "crashed"  # its process died while it ran
    TIMEOUT = "timeout"  # it ran past the tier's per-test or per-file limit

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def bad(self) -> bool:
        """Counts against the test: a passing baseline test with this outcome is a regression."""
        return self in BAD_OUTCOMES


_RANK = {outcome: rank for rank, outcome in enumerate(Outcome)}
OUTCOMES = tuple(Outcome)
BAD_OUTCOMES = frozenset({Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMEOUT})


def tallied(outcomes: Iterable[str]) -> list[tuple[str, int]]:
    """Each outcome with how many times it came: the most frequent first, ties the worst first, so
    reruns that ran side by side and ended in any order are told the same way."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], -_RANK.get(item[0], -1), item[0]))


_COLLECTION_ERROR = "collection error: "  # an error that stopped a file's tests before any of them ran
_PYTEST_COLLECTION_FAILURE = "collection failure"  # pytest's own --junitxml message for the same


def collection_error(cause: str) -> str:
    """The message of an error that stopped a file before its tests ran: pytest could not collect it,
    or its process died before pytest started (an import at the top of a script)."""
    return f"{_COLLECTION_ERROR}{cause}"


def stopped_before_tests(outcome: str, message: str) -> bool:
    """A result that stands for a whole file whose tests never ran (this harness's collection errors,
    and pytest's own in plain JUnit): the file's other tests are missing because of it."""
    return outcome == Outcome.ERROR and message.startswith((_COLLECTION_ERROR, _PYTEST_COLLECTION_FAILURE))


WARM = "warm"  # a RESTART event's mode: the process forks its tests' workers after collection
_FRESH = "fresh: "  # ... else this, then why not


def restart_mode(why_not_warm: str | None) -> str:
    """A RESTART event's mode: warm, or fresh and why (shown as it is in run.json and reports)."""
    return f"{_FRESH}{why_not_warm}" if why_not_warm else WARM


def why_not_warm(mode: str | None) -> str | None:
    """Why a process with this RESTART mode could not fork (None: it could, or said nothing)."""
    return mode.removeprefix(_FRESH) if mode and mode != WARM else None


@dataclass(frozen=True)
class Request:
    """What the runner asks of a test process: how to set the JIT, and where to write events."""

    mode: JitMode = JitMode.ABSENT
    threshold: int | None = None
    activation: Activation = Activation.AFTER_COLLECTION
    disengage: bool = False  # pause the JIT while dynamo traces frames and installs guards

    @property
    def effective_threshold(self) -> int:
        return DEFAULT_THRESHOLD if self.threshold is None else self.threshold

    def to_env(self) -> dict[str, str]:
        return {Env.JIT: self.mode, Env.THRESHOLD: "" if self.threshold is None else str(self.threshold),
                Env.ACTIVATION: self.activation, Env.DISENGAGE: "1" if self.disengage else ""}

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Request:
        threshold = env.get(Env.THRESHOLD)
        return cls(mode=JitMode(env.get(Env.JIT) or JitMode.ABSENT), threshold=int(threshold) if threshold else None,
                   activation=Activation(env.get(Env.ACTIVATION) or Activation.AFTER_COLLECTION),
                   disengage=env.get(Env.DISENGAGE) == "1")

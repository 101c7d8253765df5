"""Baseline against candidate: every test put in one category, per-module counts, validity.

Categories (docs/verdicts.md):
- regression: passed in the baseline; failed, error, crashed or timeout in the candidate, or not
  run because its file crashed;
- fix: failed, error, crashed or timeout in the baseline; passed in the candidate;
- new / missing: on one side only;
- skip change: skipped on one side, run on the other;
- xfail drift: xfailed on one side, xpassed on the other;
- failure changed: failing on both sides, with a different exception type;
- flaky: its rerun history disagrees with itself on either side (a would-be regression whose
  baseline also failed and passed is flaky, not a regression), or confirmation reruns disagreed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.compare import identity, pairs, replay, validity
from harness.compare.classify import classify, exception_type
from harness.compare.replay import NOT_RUN
from harness.compare.validity import Allowances
from harness.exits import ExitStatus
from harness.protocol import BAD_OUTCOMES, Outcome, stopped_before_tests
from harness.record.model import FileRecord, StoredResult
from harness.compare.sides import Side

MAX_DETAIL = 500  # characters of failure message kept per regression in reports


@dataclass(frozen=True)
class Known:
    """An entry of the known-regressions file (compare/known.py) that matched a test."""

    reason: str
    link: str = ""
    entry: str = ""  # where the entry is written: file:line
    pattern: str = ""  # the entry's test id or pattern


@dataclass(frozen=True)
class KnownFixed:
    """A test a known-regressions entry names that passed in the candidate: the entry can go."""

    test: str
    module: str
    known: Known


@dataclass(frozen=True)
class Regression:
    test: str
    module: str
    baseline: str
    candidate: str
    detail: str
    classification: str
    replay: str = ""  # the command that replays it in the candidate configuration
    confirmed: bool | None = None  # set by confirmation reruns; None = not confirmed either way
    baseline_replay: str = ""  # the command that replays it in the baseline configuration
    nodeid: str = ""
    confirmation: str = ""  # what the confirmation reruns saw, in words
    polluters: tuple[str, ...] = ()  # tests that must run before it for it to fail (order dependence)
    known: Known | None = None  # set when the known-regressions file names it (it is then in Comparison.known)


@dataclass(frozen=True)
class Change:
    """A test whose outcome moved between categories that are not pass/fail (skips, xfails)."""

    test: str
    module: str
    baseline: str
    candidate: str
    detail: str = ""


@dataclass(frozen=True)
class Flaky:
    test: str
    module: str
    baseline: str
    candidate: str
    reason: str
    replay: str = ""
    confirmed: bool | None = None  # False when confirmation reruns disagreed; None when seen in rerun history


@dataclass(frozen=True)
class ModuleRow:
    module: str
    baseline: dict[str, int]
    candidate: dict[str, int]
    jit_compiled: int | None
    regressions: int  # new ones: known regressions are counted in `known`
    vacuous: bool = False
    known: int = 0


@dataclass(frozen=True)
class Comparison:
    baseline: str
    candidate: str
    problems: tuple[str, ...]
    notes: tuple[str, ...]
    regressions: tuple[Regression, ...]
    fixes: tuple[str, ...]
    new: tuple[str, ...]
    missing: tuple[str, ...]
    modules: tuple[ModuleRow, ...]
    flaky: tuple[Flaky, ...] = field(default=())
    skip_changes: tuple[Change, ...] = ()
    xfail_drift: tuple[Change, ...] = ()
    failure_changes: tuple[Change, ...] = ()
    configuration: str = ""  # the candidate's configuration name (sweeps group on it)
    threshold: int | None = None  # the candidate's JIT threshold, as requested
    jit_threshold: int | None = None  # as CinderX reported it in every test process (None: not read back)
    tier: str = ""
    baseline_versions: dict[str, str | None] = field(default_factory=dict)  # torch, python, cinderx, ... (run records)
    candidate_versions: dict[str, str | None] = field(default_factory=dict)
    baseline_platform: str = ""  # the architecture it ran as, "aarch64 (emulated)" (run records; "" unknown)
    candidate_platform: str = ""
    known: tuple[Regression, ...] = ()  # regressions the known-regressions file names (not in `regressions`)
    known_fixed: tuple[KnownFixed, ...] = ()  # known regressions that passed this time
    known_source: str = ""  # the known-regressions file(s) applied
    candidate_runs: tuple[str, ...] = ()  # the candidate's run directories (a culprit search writes there)

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def platform(self) -> str:
        """Where the sides ran, for a title, when it is news: a side was emulated, or the two differ."""
        sides = {self.baseline_platform, self.candidate_platform}
        if len(sides) > 1:
            return f"{self.candidate_platform or 'unknown'} vs {self.baseline_platform or 'unknown'}"
        return self.candidate_platform if "emulated" in self.candidate_platform else ""

    @property
    def exit_status(self) -> int:
        if not self.valid:
            return ExitStatus.INVALID
        return ExitStatus.REGRESSIONS if self.regressions else ExitStatus.OK


def compare(baseline: Side, candidate: Side, allow: Allowances = Allowances()) -> Comparison:
    """Both sides are walked in a database (harness/compare/pairs.py): `before` and `after` hold
    only the tests that can fall in a category (every test that did not pass on both sides with no
    reruns), so memory holds what the comparison finds, never the sides."""
    with pairs.opened(baseline, candidate) as sides:
        before, after = sides.interesting()
        unrun = _unrun_modules(candidate, after)
        prefixes = _replay_prefixes(sides, unrun)
        counts = sides.counts(sides.before), sides.counts(sides.after)
        repeated = _repeated_notes(sides.streamed)
        reading = validity.reading_findings(sides.streamed)
    regressions: list[Regression] = []
    flaky: list[Flaky] = []
    for key, old in before.items():
        new = after.get(key)
        if old.outcome != Outcome.PASSED:
            continue
        if new is not None and new.outcome in BAD_OUTCOMES:
            found = _regression(key, old, new.outcome, new.message, new.replay)
        elif new is None and old.module in unrun:
            command = replay.command(prefixes[old.module], [old.nodeid]) if old.module in prefixes and old.nodeid else ""
            outcome, cause = unrun[old.module]
            found = _regression(key, old, outcome, cause, command, not_run=True)
        else:
            continue
        if _failed_before(old):
            flaky.append(Flaky(key, old.module, old.outcome, found.candidate,
                               f"the baseline failed too before passing on a rerun ({', '.join(old.attempts)})",
                               found.replay))
        else:
            regressions.append(found)
    flaky.extend(_flaky_passes(before, after, {f.test for f in flaky}))
    regressed = {r.test for r in regressions} | {f.test for f in flaky}
    return Comparison(
        baseline=baseline.label,
        candidate=candidate.label,
        problems=tuple(validity.problems(baseline, candidate, allow)) + reading.problems,
        notes=tuple(_notes(baseline, candidate) + repeated + validity.allowance_notes(baseline, candidate, allow))
        + reading.notes,
        regressions=tuple(sorted(regressions, key=lambda r: r.test)),
        fixes=tuple(sorted(k for k, new in after.items()
                           if new.outcome == Outcome.PASSED and k in before and before[k].outcome in BAD_OUTCOMES)),
        new=tuple(sorted(set(after) - set(before))),
        missing=tuple(sorted(set(before) - set(after) - regressed)),
        modules=tuple(_modules(*counts, candidate, regressions)),
        flaky=tuple(sorted(flaky, key=lambda f: f.test)),
        **_changes(before, after),
        configuration=str(candidate.record.configuration.get("name", "")) if candidate.record else "",
        threshold=candidate.record.threshold if candidate.record else None,
        jit_threshold=validity.read_back_threshold(candidate.record),
        tier=candidate.record.tier if candidate.record else "",
        baseline_versions=dict(baseline.record.versions) if baseline.record else {},
        candidate_versions=dict(candidate.record.versions) if candidate.record else {},
        baseline_platform=validity.platform_of(baseline.record) if baseline.record else "",
        candidate_platform=validity.platform_of(candidate.record) if candidate.record else "",
        candidate_runs=tuple(str(path) for path, _ in candidate.parts),
    )


def _failed_before(result: StoredResult) -> bool:
    return any(outcome in BAD_OUTCOMES for outcome in identity.attempt_outcomes(result))


def _flaky_passes(before: dict[str, StoredResult], after: dict[str, StoredResult], known: set[str]) -> list[Flaky]:
    """Tests that passed in the end on a side only after failing there first."""
    found = []
    rerun = {key for side in (before, after) for key, result in side.items() if result.attempts} - known
    for key in sorted(rerun):
        for role, result in (("candidate", after.get(key)), ("baseline", before.get(key))):
            if result is not None and result.outcome == Outcome.PASSED and _failed_before(result):
                old, new = before.get(key), after.get(key)
                found.append(Flaky(key, result.module, old.outcome if old else "absent", new.outcome if new else "absent",
                                   f"the {role} passed only on a rerun ({', '.join(result.attempts)})", result.replay))
                break
    return found


def _skip_change(old: StoredResult, new: StoredResult) -> str | None:
    return _first_line(new.message or old.message) if (old.outcome == Outcome.SKIPPED) != (new.outcome == Outcome.SKIPPED) else None


def _xfail_drift(old: StoredResult, new: StoredResult) -> str | None:
    return _first_line(new.message or old.message) if {old.outcome, new.outcome} == {Outcome.XFAILED, Outcome.XPASSED} else None


def _failure_change(old: StoredResult, new: StoredResult) -> str | None:
    if old.outcome not in BAD_OUTCOMES or new.outcome not in BAD_OUTCOMES:
        return None
    before = exception_type(old.message) or old.outcome
    after = exception_type(new.message) or new.outcome
    return None if before == after else f"{before} → {after}"


_CHANGE_KINDS = (("skip_changes", _skip_change), ("xfail_drift", _xfail_drift), ("failure_changes", _failure_change))


def _changes(before: dict[str, StoredResult], after: dict[str, StoredResult]) -> dict[str, tuple[Change, ...]]:
    """Skip changes, xfail drift and changed failures, each sorted by test."""
    found: dict[str, list[Change]] = {kind: [] for kind, _ in _CHANGE_KINDS}
    for key in sorted(before.keys() & after.keys()):
        old, new = before[key], after[key]
        if old.outcome == new.outcome == Outcome.PASSED:
            continue
        for kind, moved in _CHANGE_KINDS:
            detail = moved(old, new)
            if detail is not None:
                found[kind].append(Change(key, new.module, old.outcome, new.outcome, detail[:MAX_DETAIL]))
    return {kind: tuple(changes) for kind, changes in found.items()}


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _notes(baseline: Side, candidate: Side) -> list[str]:
    notes = []
    for role, side in (("baseline", baseline), ("candidate", candidate)):
        if side.record is None:
            notes.append(f"{role} has no run record (plain JUnit XML): versions, JIT proof and "
                         "contamination were not checked")
        elif side.record.skipped_reason:
            notes.append(f"{role} tier skipped: {side.record.skipped_reason}")
        else:
            notes.extend(f"{role}: {f.file} is vacuous (JIT compiled nothing in it)"
                         for f in side.record.files if side.record.jit_mode == "on" and f.vacuous)
        if side.record is not None and side.record.absent:
            notes.append(f"{role}: {len(side.record.absent)} files the tier names are absent from its tests "
                         f"directory: {', '.join(side.record.absent)}")
    return notes


def _repeated_notes(streamed: dict[str, pairs.Streamed]) -> list[str]:
    """Tests that a side reports more than once: said, so a folded report is never silent."""
    return [f"{role}: tests reported more than once (in different suites or files): {found.repeated}; each is "
            f"judged on its best report, the others are its attempts (a failure and a pass make it flaky): "
            f"{', '.join(found.repeated_named)}{', ...' if found.repeated > len(found.repeated_named) else ''}"
            for role, found in sorted(streamed.items()) if found.repeated]  # baseline first


def _unrun_modules(candidate: Side, after: dict[str, StoredResult]) -> dict[str, tuple[str, str]]:
    """The candidate's modules whose tests were cut short, with the outcome and cause that their
    missing tests take: a baseline pass that the candidate never ran is a regression, not a missing
    test. Cut short by an error that stopped the file before its tests ran (a collection error, a
    process that died before pytest started: error), or by a crash or timeout that the run record
    names (crashed)."""
    stopped = {_stopped_module(result): (Outcome.ERROR, result.message.strip())
               for result in after.values() if stopped_before_tests(result.outcome, result.message)}
    crashed = {f.module: (Outcome.CRASHED, f.culprit) for f in candidate.record.files if f.culprit} \
        if candidate.record else {}
    return {**stopped, **crashed}


def _stopped_module(result: StoredResult) -> str:
    """The module a file-level error stands for: its own, or, for pytest's plain JUnit (an empty
    classname), the dotted path it writes as the name."""
    classname, _, name = result.test.partition("::")
    return name if not classname and name else result.module


def _replay_prefixes(sides: pairs.Pairs, modules: Iterable[str]) -> dict[str, str]:
    """Each module's replay command without node ids, recovered from its candidate tests' replay
    commands (only the crashed modules' are needed)."""
    prefixes = {module: sides.replay_prefix(sides.after, module) for module in modules}
    return {module: prefix for module, prefix in prefixes.items() if prefix}


def _regression(key: str, old: StoredResult, outcome: str, message: str, replay: str,
                not_run: bool = False) -> Regression:
    """`not_run`: the candidate never ran the test, and `message` says why."""
    said = f"{NOT_RUN}: {message.strip()}" if not_run else message.strip()
    return Regression(
        test=key, module=old.module, baseline=old.outcome, candidate=outcome, detail=said[:MAX_DETAIL],
        classification=classify(outcome, message),
        replay=replay, baseline_replay=old.replay, nodeid=old.nodeid,
    )


def _modules(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], candidate: Side,
             regressions: list[Regression]) -> list[ModuleRow]:
    """`before` and `after`: each side's tests per module and outcome."""
    files: dict[str, list[FileRecord]] = {}
    for record in candidate.record.files if candidate.record else ():
        files.setdefault(record.module, []).append(record)  # a file split over shards: one record per shard
    jit_on = candidate.record is not None and candidate.record.jit_mode == "on"
    per_module = Counter(r.module for r in regressions)
    rows = []
    for module in sorted(set(before) | set(after) | set(files)):
        records = [record for record in files.get(module, []) if record.jit]
        compiled = sum(record.compiled for record in records) if records else None
        rows.append(ModuleRow(module, before.get(module, {}), after.get(module, {}),
                              compiled if jit_on else None, per_module[module],
                              vacuous=bool(jit_on and records and all(record.vacuous for record in records))))
    return rows

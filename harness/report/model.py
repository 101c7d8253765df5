"""The report model: every fact the Markdown, JSON and HTML reports show, decided once.

`build` turns the comparisons (and, when their producers have something to say, a performance
comparison, run history, known regressions and culprits) into frozen dataclasses. The renderers
only lay these out: a rule such as "worst modules first" or "a regression marked known" lives
here, so the three forms cannot disagree. Each optional part is None (or empty) when absent, and
each renderer then leaves its section out (docs/report.md says where each part shows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from harness.compare.diff import Comparison, Known, KnownFixed, ModuleRow
from harness.compare.sweep import Sweep, sweeps
from harness.configure.tiers import HARNESS_ROOT
from harness.protocol import Outcome
from harness.record.coverage import Coverage
from harness.record.culprits import Culprit  # a regression's culprit, as the search recorded it

if TYPE_CHECKING:  # the perf modules import pyperf, which the diff's interpreter need not have
    from harness.compare.history import History as RunHistory
    from harness.perf.compare import PerfComparison, SpeedUp


class Status(StrEnum):
    """Where a finding stands after confirmation reruns (the regressions table's filter)."""

    CONFIRMED = "confirmed"  # failed every rerun in the candidate, passed every rerun in the baseline
    UNCONFIRMED = "not confirmed"  # not rerun (no --confirm) or could not be rerun
    FLAKY = "flaky"  # its reruns or rerun history disagree with themselves


@dataclass(frozen=True)
class TrendPoint:
    """One earlier (or this) run of a configuration, as run history remembers it."""

    run: str
    started: str
    failing: int  # tests failed, error, crashed or timed out in that run
    flaky: int  # of those, tests on the history's flaky list


@dataclass(frozen=True)
class Trend:
    configuration: str
    points: tuple[TrendPoint, ...]  # oldest first

    @property
    def comparable(self) -> bool:
        """Two runs or more: one run alone is no trend, so the reports that say one leave it out."""
        return len(self.points) >= 2


@dataclass(frozen=True)
class Since:
    """A test's state change as run history dates it: failing since, or recovered since, `run`."""

    configuration: str
    test: str
    run: str


@dataclass(frozen=True)
class History:
    """What run history adds: a trend per configuration, when each regression first failed, what recovered."""

    trends: tuple[Trend, ...] = ()
    new_since: tuple[Since, ...] = ()
    recovered: tuple[Since, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One row of the regressions table: a regression or a flaky test of one candidate."""

    test: str
    module: str
    configuration: str  # the candidate's label
    baseline: str
    candidate: str
    classification: str
    status: Status
    confirmation: str = ""  # what confirmation reruns (or rerun attempts) saw
    detail: str = ""
    replay: str = ""
    baseline_replay: str = ""
    polluters: tuple[str, ...] = ()
    known: Known | None = None  # the known-regressions entry it matched (compare/known.py)
    culprit: Culprit | None = None
    new_since: str = ""  # the first failing run, from history


@dataclass(frozen=True)
class KnownGroup:
    """The regressions one known-regressions entry matched: a pattern can match dozens of tests that
    share one reason, so a report that reads top to bottom says it once, with their count."""

    entry: str  # where the entry is written: file:line
    reason: str
    link: str
    count: int

    @property
    def where(self) -> str:
        """The entry's file and line, the shipped file's as in the repository
        (`harness/configure/data/known_regressions.yaml:16`)."""
        return in_repository(self.entry)


def in_repository(path: str) -> str:
    """A file of the harness by its path in the repository, so a report names it the same on every
    machine (and a screen spends no line on a site-packages prefix); any other file as given."""
    return Path(path).relative_to(HARNESS_ROOT).as_posix() if Path(path).is_relative_to(HARNESS_ROOT) else path


def in_repository_all(sources: str) -> str:
    """`in_repository` of each file of a comparison's `known_source` (files joined by ", ")."""
    return ", ".join(in_repository(source) for source in sources.split(", ")) if sources else ""


@dataclass(frozen=True)
class PolluterGroup:
    """The regressions that fail only after the same earlier tests (order dependence): one polluting
    test often breaks many after it, so a report says it once, for all of them."""

    polluters: tuple[str, ...]
    tests: tuple[str, ...]


@dataclass(frozen=True)
class Cell:
    """One module under one candidate: its counts, regressions and JIT-compiled functions."""

    outcomes: Mapping[str, int]
    regressions: int
    compiled: int | None
    vacuous: bool

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())

    @property
    def pass_rate(self) -> float | None:
        """Passed among the tests that ran to a pass or a failure (skips and xfails left out)."""
        ran = sum(self.outcomes.get(o, 0) for o in (Outcome.PASSED, *sorted(_FAILING)))
        return self.outcomes.get(Outcome.PASSED, 0) / ran if ran else None


_FAILING = {Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMEOUT}


@dataclass(frozen=True)
class ModuleLine:
    """A module across every candidate (the heatmap's row), with its baseline counts."""

    module: str
    baseline: Mapping[str, int]
    cells: tuple[Cell | None, ...]  # one per column; None where the candidate has no such module

    @property
    def regressions(self) -> int:
        return sum(cell.regressions for cell in self.cells if cell)


@dataclass(frozen=True)
class Heatmap:
    """Modules x candidates (configuration, threshold), worst modules first."""

    columns: tuple[str, ...]
    rows: tuple[ModuleLine, ...]


@dataclass(frozen=True)
class SweepPoint:
    threshold: int
    regressions: int
    compiled: int | None
    valid: bool


@dataclass(frozen=True)
class SweepLine:
    """One configuration at several JIT thresholds against one baseline (the sweep chart)."""

    sweep: Sweep
    points: tuple[SweepPoint, ...]  # lowest threshold first

    @property
    def title(self) -> str:
        tier = f" (tier {self.sweep.tier})" if self.sweep.tier else ""
        return f"{self.sweep.configuration} vs {self.sweep.baseline}{tier}"


@dataclass(frozen=True)
class Interval:
    """A speed-up with its 95% confidence interval and what that says."""

    ratio: float
    low: float
    high: float
    verdict: str


@dataclass(frozen=True)
class ForestRow:
    benchmark: str
    tag: str
    intervals: tuple[Interval | None, ...]  # one per candidate; None where withheld or missing
    reasons: tuple[str, ...]  # why an interval is None, per candidate


@dataclass(frozen=True)
class Forest:
    """The performance comparison as a forest plot: per benchmark and candidate, speed-up and CI."""

    baseline: str
    candidates: tuple[str, ...]
    rows: tuple[ForestRow, ...]
    means: tuple[tuple[str, tuple[Interval | None, ...]], ...]  # (tag, one per candidate), "all" last
    valid: bool
    problems: tuple[str, ...]
    method: str


@dataclass(frozen=True)
class CoverageSide:
    """The JIT coverage of torch of one candidate (its runs merged): what its tests exercised."""

    label: str
    coverage: Coverage


@dataclass(frozen=True)
class Section:
    """One comparison (baseline vs one candidate) with its findings."""

    comparison: Comparison
    findings: tuple[Finding, ...]  # regressions first (worst first), then flaky tests

    @property
    def title(self) -> str:
        """How every report heads the comparison: the sides, and the tier (one diff can compare
        several tiers of the same configurations)."""
        c = self.comparison
        return f"{c.candidate} vs {c.baseline}" + (f" (tier {c.tier})" if c.tier else "") + (
            f" on {c.platform}" if c.platform else "")

    @property
    def regressions(self) -> tuple[Finding, ...]:
        """New and known regressions (known ones last): everything known stays in view."""
        return tuple(f for f in self.findings if f.status is not Status.FLAKY)

    @property
    def known(self) -> int:
        return sum(1 for f in self.regressions if f.known)

    @property
    def known_groups(self) -> tuple[KnownGroup, ...]:
        """The known regressions per entry of the known-regressions file, in the order of the file."""
        groups: dict[Known, int] = {}
        for finding in self.regressions:
            if finding.known:
                groups[finding.known] = groups.get(finding.known, 0) + 1
        ordered = sorted(groups.items(), key=lambda item: _entry_order(item[0].entry))
        return tuple(KnownGroup(known.entry, known.reason, known.link, count) for known, count in ordered)

    @property
    def polluter_groups(self) -> tuple[PolluterGroup, ...]:
        """The order-dependent regressions per polluter set, the largest group first."""
        groups: dict[tuple[str, ...], list[str]] = {}
        for finding in self.regressions:
            if finding.polluters:
                groups.setdefault(finding.polluters, []).append(finding.test)
        ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
        return tuple(PolluterGroup(polluters, tuple(tests)) for polluters, tests in ordered)

    @property
    def known_fixed(self) -> tuple[KnownFixed, ...]:
        return self.comparison.known_fixed

    @property
    def known_source(self) -> str:
        """The known-regressions file(s) this comparison applied, as `in_repository` names them."""
        return in_repository_all(self.comparison.known_source)


@dataclass(frozen=True)
class Totals:
    """The verdict banner's counts, over every comparison."""

    regressions: int
    confirmed: int
    fixes: int
    flaky: int
    new: int
    missing: int
    known: int


@dataclass(frozen=True)
class Report:
    sections: tuple[Section, ...]
    heatmap: Heatmap
    sweeps: tuple[SweepLine, ...]
    generated: str
    forest: Forest | None = None
    history: History | None = None
    coverage: tuple[CoverageSide, ...] = ()

    @property
    def valid(self) -> bool:
        return all(s.comparison.valid for s in self.sections)

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(f"{s.comparison.candidate}: {p}" if len(self.sections) > 1 else p
                     for s in self.sections for p in s.comparison.problems)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for s in self.sections for f in s.findings)

    @property
    def totals(self) -> Totals:
        regressions = [f for s in self.sections for f in s.regressions]
        comparisons = [s.comparison for s in self.sections]
        return Totals(regressions=sum(1 for f in regressions if not f.known),
                      confirmed=sum(1 for f in regressions if f.status is Status.CONFIRMED),
                      fixes=sum(len(c.fixes) for c in comparisons), flaky=sum(len(c.flaky) for c in comparisons),
                      new=sum(len(c.new) for c in comparisons), missing=sum(len(c.missing) for c in comparisons),
                      known=sum(1 for f in regressions if f.known))

    def trend(self, configuration: str) -> Trend | None:
        """The run history of one configuration (by its label), when the report has any."""
        trends = self.history.trends if self.history else ()
        return next((t for t in trends if t.configuration == configuration), None)

    @property
    def known_source(self) -> str:
        """The known-regressions file(s) the comparisons applied; "" when none was."""
        return ", ".join(dict.fromkeys(s.known_source for s in self.sections if s.known_source))

    @property
    def sides(self) -> tuple[Side, ...]:
        """The baseline(s) and every candidate, each once, in the order compared."""
        found: dict[tuple[str, str], Side] = {}
        for s in self.sections:
            c = s.comparison
            found.setdefault(("baseline", c.baseline), Side(c.baseline, "baseline", None, c.tier, c.baseline_versions,
                                                            c.baseline_platform))
            found.setdefault(("candidate", c.candidate),
                             Side(c.candidate, "candidate", c.threshold, c.tier, c.candidate_versions,
                                  c.candidate_platform))
        return tuple(found.values())


@dataclass(frozen=True)
class Side:
    """A configuration compared: what the banner lists with its versions."""

    label: str
    role: str
    threshold: int | None
    tier: str
    versions: Mapping[str, str | None]
    platform: str = ""  # "aarch64 (emulated)"; "" for runs recorded before the architecture was


def build(comparisons: Sequence[Comparison], *, perf: PerfComparison | None = None, history: History | None = None,
          culprits: Mapping[tuple[str, str], Culprit] | None = None, coverage: Sequence[CoverageSide] = (),
          now: datetime | None = None) -> Report:
    """The report of `comparisons`; `culprits` are keyed by (candidate label, test); `coverage`
    holds the candidates that recorded JIT coverage."""
    new_since = {(s.configuration, s.test): s.run for s in history.new_since} if history else {}
    sections = tuple(_section(c, culprits or {}, new_since) for c in comparisons)
    return Report(sections=sections, heatmap=heatmap(comparisons), sweeps=tuple(map(_sweep_line, sweeps(list(comparisons)))),
                  generated=(now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
                  forest=forest(perf) if perf is not None else None, history=history, coverage=tuple(coverage))


_SEVERITY = (Outcome.CRASHED, Outcome.TIMEOUT, Outcome.ERROR, Outcome.FAILED)


def _order(finding: Finding) -> tuple[int, int, int, str]:
    """Unknown before known, confirmed before unconfirmed, crashes before failures, then by name."""
    status = list(Status).index(finding.status)
    severity = _SEVERITY.index(finding.candidate) if finding.candidate in _SEVERITY else len(_SEVERITY)
    return (finding.known is not None, status, severity, finding.test)


def _section(comparison: Comparison, culprits: Mapping[tuple[str, str], Culprit],
             new_since: Mapping[tuple[str, str], str]) -> Section:
    label = comparison.candidate
    findings = []
    for r in (*comparison.regressions, *comparison.known):
        status = Status.CONFIRMED if r.confirmed else Status.UNCONFIRMED
        findings.append(Finding(
            test=r.test, module=r.module, configuration=label, baseline=r.baseline, candidate=r.candidate,
            classification=r.classification, status=status, confirmation=r.confirmation, detail=r.detail,
            replay=r.replay, baseline_replay=r.baseline_replay, polluters=r.polluters,
            known=r.known,
            culprit=culprits.get((label, r.test)), new_since=new_since.get((label, r.test), "")))
    flaky = [Finding(test=f.test, module=f.module, configuration=label, baseline=f.baseline, candidate=f.candidate,
                     classification="flaky", status=Status.FLAKY, confirmation=f.reason, replay=f.replay)
             for f in comparison.flaky]
    return Section(comparison, tuple(sorted(findings, key=_order)) + tuple(flaky))


def _entry_order(entry: str) -> tuple[str, int]:
    """`file:line` by file, then by line as a number (line 9 before line 28)."""
    file, _, line = entry.rpartition(":")
    return (file, int(line)) if line.isdigit() else (entry, 0)


def heatmap(comparisons: Sequence[Comparison]) -> Heatmap:
    """Every module of every comparison; sorted by regressions (most first), then lowest pass rate."""
    tables = [{row.module: row for row in c.modules} for c in comparisons]
    modules = sorted({module for table in tables for module in table})
    rows = []
    for module in modules:
        found = [table.get(module) for table in tables]
        baseline = next((row.baseline for row in found if row is not None and row.baseline), {})
        rows.append(ModuleLine(module, baseline, tuple(_cell(row) for row in found)))
    return Heatmap(columns=tuple(c.candidate for c in comparisons), rows=tuple(sorted(rows, key=_worst_first)))


def _cell(row: ModuleRow | None) -> Cell | None:
    return None if row is None else Cell(row.candidate, row.regressions, row.jit_compiled, row.vacuous)


def _worst_first(line: ModuleLine) -> tuple[int, float, str]:
    rates = [cell.pass_rate for cell in line.cells if cell and cell.pass_rate is not None]
    return (-line.regressions, min(rates, default=1.0), line.module)


def _sweep_line(sweep: Sweep) -> SweepLine:
    """Each point at the threshold CinderX reported back (the requested one where none was read back)."""
    return SweepLine(sweep, tuple(SweepPoint(c.jit_threshold if c.jit_threshold is not None else c.threshold or 0,
                                             len(c.regressions), compiled_total(c.modules), c.valid)
                                  for c in sweep.comparisons))


def compiled_total(rows: Iterable[ModuleRow]) -> int | None:
    """Functions the JIT compiled over these modules; None when no module recorded a count."""
    values = [r.jit_compiled for r in rows if r.jit_compiled is not None]
    return sum(values) if values else None


def _interval(speedup: SpeedUp | None) -> Interval | None:
    return None if speedup is None else Interval(speedup.ratio, speedup.low, speedup.high, speedup.verdict)


def forest(comparison: PerfComparison) -> Forest:
    """The perf comparison's speed-ups and geometric means, one series per candidate."""
    from harness.perf.report import METHOD

    candidates = comparison.candidates
    rows = tuple(ForestRow(row.name, row.tag, tuple(_interval(cell.speedup) for cell in row.cells),
                           tuple(cell.reason if cell.speedup is None else "" for cell in row.cells))
                 for row in comparison.rows)
    tags = sorted({tag for c in candidates for tag in c.geometric_means}, key=lambda t: (t == "all", t))
    means = tuple((tag, tuple(_interval(c.geometric_means.get(tag)) for c in candidates)) for tag in tags)
    problems = (*comparison.problems, *(p for c in candidates for p in c.problems))
    return Forest(baseline=comparison.baseline_label, candidates=tuple(c.label for c in candidates), rows=rows,
                  means=means, valid=comparison.valid, problems=tuple(problems), method=METHOD)


def history_part(found: RunHistory, comparisons: Sequence[Comparison]) -> History:
    """What the results database says about the compared series, under the labels the report uses:
    per configuration the failing and flaky tests of each run, the run each failing test of the
    newest run fails since, and the tests that recovered in it."""
    labels = {}
    for c in comparisons:
        labels[(c.configuration, c.tier, c.threshold)] = c.candidate
        labels.setdefault((c.baseline, c.tier, None), c.baseline)  # a baseline without a JIT: labelled by its name
    trends, new_since, recovered = [], [], []
    for entry in found.series:
        series = entry.series
        label = labels.get((series.configuration, series.tier, series.threshold), series.label)
        flaky = [dict(zip(t.runs, t.outcomes)) for t in entry.flaky]
        trends.append(Trend(label, tuple(
            TrendPoint(run.name, run.started[:10], sum(n for o, n in run.counts.items() if o in _FAILING),
                       sum(1 for outcomes in flaky if outcomes.get(run.name) in _FAILING))
            for run in entry.runs)))
        new_since += [Since(label, t.test, t.failing_since) for t in entry.failing if t.failing_since]
        recovered += [Since(label, t.test, t.recovered_in) for t in (entry.latest.recovered if entry.latest else ())
                      if t.recovered_in]
    return History(tuple(trends), tuple(new_since), tuple(recovered))

"""Words and numbers as every report form writes them (one place, so Markdown and HTML agree)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness.configure import beyond_cpu
from harness.protocol import Outcome
from harness.record.coverage import Coverage, Row
from harness.record.culprits import Culprit
from harness.report.model import Interval, PolluterGroup, Report
from harness.run.coverage import census_of

_CORE = (Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED, Outcome.XFAILED)


def coverage_rows(coverage: Coverage) -> tuple[Row, ...]:
    """Every subpackage's coverage row, with its functions a CPU-only machine cannot run (the shipped
    rules, harness/configure/data/beyond_cpu.yaml), as every report form shows them."""
    rules = beyond_cpu.load()
    return coverage.rows_beyond(rules, census_of(coverage, rules))


def coverage_module_rows(coverage: Coverage, subpackage: str) -> tuple[Row, ...]:
    """The rows of one subpackage's modules, counted by the same rules as `coverage_rows`."""
    rules = beyond_cpu.load()
    return coverage.module_rows(subpackage, rules, census_of(coverage, rules))


def counts(outcomes: Mapping[str, int]) -> str:
    """`P/F/E/S/XF`, with crashed, timeout and xpassed added when there are any."""
    if not outcomes:
        return "absent"
    core = "/".join(str(outcomes.get(k, 0)) for k in _CORE)
    extra = [f"{outcomes[k]} {k}" for k in (Outcome.CRASHED, Outcome.TIMEOUT, Outcome.XPASSED) if outcomes.get(k)]
    return core + (f" (+{', '.join(extra)})" if extra else "")


def summed(entries: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for entry in entries:
        for key, value in entry.items():
            total[key] = total.get(key, 0) + value
    return total


def percent(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.1f}%"


def speedup(interval: Interval) -> str:
    return f"{interval.ratio:.2f}x [{interval.low:.2f}, {interval.high:.2f}] {interval.verdict}"


def verdict_line(report: Report) -> str:
    """The banner's sentence: the verdict, or why there is none."""
    if not report.valid:
        return f"INVALID comparison: no verdict ({len(report.problems)} problem{'s' * (len(report.problems) != 1)})"
    totals = report.totals
    known = f", {totals.known} known" if totals.known else ""
    if not totals.regressions:
        return "Valid comparison: no new regressions" + known if totals.known else "Valid comparison: no regressions"
    confirmed = f", {totals.confirmed} confirmed" if totals.confirmed else ""
    return f"Valid comparison: {totals.regressions} regression{'s' * (totals.regressions != 1)}{confirmed}{known}"


def polluter_line(group: PolluterGroup) -> str:
    """`10 regressions, all after test_x.py::test_p` (the order-dependent ones a polluter set explains)."""
    tests = len(group.tests)
    after = " then ".join(group.polluters)
    return (f"{tests} regressions, all after {after}" if tests > 1 else f"1 regression, after {after}") + (
        " (order dependence: each passes alone)")


def culprit_functions(culprit: Culprit) -> str:
    """`module:qualname (file:line)` per culprit function, or why there is none (the search's status)."""
    return ", ".join(function.where for function in culprit.functions) or f"none ({culprit.status})"


def culprit_inlined(culprit: Culprit) -> str:
    """What CinderX inlined into the culprit functions: `f ← g, h` (empty when nothing was)."""
    return "; ".join(f"{function.name} ← {', '.join(function.inlined)}" for function in culprit.functions
                     if function.inlined)


def culprit_cost(culprit: Culprit) -> str:
    return (f"{culprit.status}: {culprit.candidates} candidates, {culprit.probes} probes "
            f"({culprit.reruns} reruns), {culprit.seconds:.0f} s")

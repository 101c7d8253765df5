"""The first screen: what a person reads on standard output after `nox -s diff` or `python -m harness diff`.

The verdict and its counts come first, then the regressions to act on, then one line per entry of
the known-regressions file, the worst modules, and the few torch subpackages the JIT compiled most.
A clean P0 comparison fits in about 30 lines. report.md and report.html hold every table in full,
so this screen drops rows, never facts: each cut says where the rest is. Written as Markdown and laid
out by rich (harness/report/output.py), like every text a person reads.
"""

from __future__ import annotations

import textwrap

from harness.record.coverage import total_of
from harness.report.markdown import counts_line, module_table, perf_part, regression_lines, sweep_table
from harness.report.model import CoverageSide, KnownGroup, Report, Section
from harness.report.text import coverage_rows, percent, verdict_line

SCREEN_REGRESSIONS = 5  # new regressions shown with their replay commands; report.md lists 10, the HTML all
SCREEN_MODULES = 5  # worst modules; report.md lists 20
SCREEN_SUBPACKAGES = 4  # torch subpackages the JIT compiled most in; report.md lists 20
KNOWN_LINE = 116  # characters of one known-regressions line in a log (LOG_WIDTH): its reason is shortened to fit
POINTER = "Every table and every test: report.md and report.html (`nox -s diff` writes them to results/reports)."


def render(report: Report) -> str:
    parts = [f"**{verdict_line(report)}**\n"]
    parts += [sweep_table(line) for line in report.sweeps]
    parts += [_section(report, section) for section in report.sections]
    parts += [_coverage(side) for side in report.coverage]
    if report.forest is not None:
        parts.append(perf_part(report))
    return "\n".join(parts) + "\n" + POINTER + "\n"


def _section(report: Report, section: Section) -> str:
    comparison = section.comparison
    lines = [f"### {section.title}", "", counts_line(section), ""]
    lines += [f"- problem: {problem}" for problem in comparison.problems]
    lines += [f"- note: {note}" for note in comparison.notes]
    new = [finding for finding in section.regressions if not finding.known]
    if new:
        lines += ["", f"New regressions ({min(len(new), SCREEN_REGRESSIONS)} of {len(new)}):"]
        for finding in new[:SCREEN_REGRESSIONS]:
            lines += regression_lines(finding)
    if section.known_groups:
        lines += ["", f"Known regressions ({len(comparison.known)}), per entry of the known-regressions file:"]
        lines += [_known(group) for group in section.known_groups]
    if comparison.known_fixed:
        lines += ["", f"Known, now fixed: {len(comparison.known_fixed)} (remove their entries: report.md lists them)"]
    trend = report.trend(comparison.candidate)
    if trend is not None and trend.comparable:
        lines += ["", "Failing tests per run (run history), oldest first: "
                  + " → ".join(str(point.failing) for point in trend.points)]
    return "\n".join([*lines, "", *module_table(comparison.modules, SCREEN_MODULES)]) + "\n"


def _known(group: KnownGroup) -> str:
    """One line: how many tests the entry matched, where it is written, and its reason, shortened."""
    head = f"- {group.count} × {group.where}: "
    return head + textwrap.shorten(group.reason, max(KNOWN_LINE - len(head), 20), placeholder=" …")


def _coverage(side: CoverageSide) -> str:
    """The torch total and the subpackages the JIT compiled most functions in (where this configuration
    spends its compiles), in two lines; the full table, with what a CPU cannot run, is in report.md."""
    rows = coverage_rows(side.coverage)
    total = total_of(rows)
    most = sorted((row for row in rows if row.compiled), key=lambda row: (-row.compiled, row.name))[:SCREEN_SUBPACKAGES]
    where = ("Most in: " + ", ".join(f"{row.name} {row.compiled:,} of {row.defined:,}" for row in most) + ". "
             if most else "")  # a vacuous run compiled nothing: there is no "most"
    return (f"JIT coverage of torch {side.coverage.torch}, {side.label}: {total.compiled:,} of {total.defined:,} "
            f"functions compiled ({percent(total.share)}). {where}"
            f"Every subpackage ({len(rows)}): report.md, or `python -m harness coverage RUN_DIR`.\n")

"""The report as Markdown: short enough for a GitHub job summary and a terminal.

Per comparison: the verdict, the counts, the worst modules (the per-module table of docs/background.md §2) and the
top regressions with their replay commands; then a pointer to the HTML report, which has
everything. A threshold sweep gets its table, one column per threshold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.compare.diff import ModuleRow
from harness.compare.sweep import column_label
from harness.configure import beyond_cpu
from harness.record.coverage import Row, total_of
from harness.report.model import (Culprit, CoverageSide, Finding, KnownGroup, Report, Section, Status, SweepLine,
                                   compiled_total)
from harness.report.text import (counts, coverage_rows, culprit_cost, culprit_inlined, percent, polluter_line, speedup,
                                 summed)

TOP_REGRESSIONS = 10  # per comparison; the HTML report lists them all
TOP_MODULES = 20  # per table, worst first
TOP_SUBPACKAGES = 20  # of torch's ~60, the biggest first, in a comparison's coverage table
HTML_POINTER = ("Everything else (heatmap, charts, every regression with its failure message, filters, copy "
                "buttons): the HTML report `report.html` written beside this file (in CI: the job's report artifact).")


def render(report: Report) -> str:
    parts = [sweep_table(line) for line in report.sweeps] + [_section(report, s) for s in report.sections]
    parts += [coverage_section(side, TOP_SUBPACKAGES) for side in report.coverage]
    if report.forest is not None:
        parts.append(perf_part(report))
    if report.history is not None and report.history.recovered:
        parts.append(f"Recovered since an earlier run: {len(report.history.recovered)} test(s).\n")
    return "\n".join(parts) + "\n" + HTML_POINTER + "\n"


def _section(report: Report, section: Section) -> str:
    comparison = section.comparison
    lines = [f"## {section.title}", ""]
    if comparison.valid:
        lines.append("**Valid comparison.**")
    else:
        lines.append("**INVALID comparison: no verdict.**")
        lines.extend(f"- {problem}" for problem in comparison.problems)
    lines.extend(f"- note: {note}" for note in comparison.notes)
    lines += ["", counts_line(section), ""]
    if comparison.known or comparison.known_fixed:
        fixed = (f"; known, now fixed: {len(comparison.known_fixed)} (remove their entries)"
                 if comparison.known_fixed else "")
        lines += [f"Known regressions: {len(comparison.known)}, from {section.known_source}{fixed} "
                  "(every test listed in the HTML and JSON reports), per entry:", ""]
        lines += [_known_group(group) for group in section.known_groups]
        lines += [""] if section.known_groups else []
    if section.polluter_groups:
        lines += [f"- {polluter_line(group)}" for group in section.polluter_groups] + [""]
    trend = report.trend(comparison.candidate)
    if trend is not None and trend.comparable:
        lines += ["Failing tests per run (run history), oldest first: "
                  + " → ".join(str(p.failing) for p in trend.points), ""]
    lines += module_table(comparison.modules)
    regressions = [f for f in section.regressions if not f.known]
    if regressions:
        shown = min(len(regressions), TOP_REGRESSIONS)
        lines += ["", f"### Top regressions ({shown} of {len(regressions)})", ""]
        for finding in regressions[:TOP_REGRESSIONS]:
            lines += regression_lines(finding)
    others = [(name, len(items)) for name, items in (
        ("flaky", comparison.flaky), ("skip changes", comparison.skip_changes), ("xfail drift", comparison.xfail_drift),
        ("failures that changed", comparison.failure_changes)) if items]
    if others:
        lines += ["", "Also: " + " · ".join(f"{name} {count}" for name, count in others) + " (listed in the HTML and JSON reports)"]
    return "\n".join(lines) + "\n"


def counts_line(section: Section) -> str:
    """The comparison's counts in one line: new regressions first (the known ones beside them)."""
    comparison = section.comparison
    confirmed = sum(1 for f in section.regressions if f.status is Status.CONFIRMED)
    known = f" (+{len(comparison.known)} known)" if comparison.known else ""
    return (f"Regressions: **{len(comparison.regressions)}**{known}" + (f" ({confirmed} confirmed)" if confirmed else "")
            + f" · fixes: {len(comparison.fixes)} · new: {len(comparison.new)} · missing: {len(comparison.missing)}"
            f" · flaky: {len(comparison.flaky)}")


def _known_group(group: KnownGroup) -> str:
    """One entry of the known-regressions file: how many tests it matched, why, where to read more."""
    link = f" ({group.link})" if group.link else ""
    return f"- {group.count} × {group.reason}{link} · `{group.where}`"


def regression_lines(f: Finding) -> list[str]:
    status = " · confirmed" if f.status is Status.CONFIRMED else ""
    new = f" · new since {f.new_since}" if f.new_since else ""
    lines = [f"- `{f.test}`: {f.baseline} → **{f.candidate}** ({f.classification}){status}{new}"]
    if f.known:
        lines.append(f"  - known: {f.known.reason}" + (f" ({f.known.link})" if f.known.link else ""))
    if f.detail:
        lines.append(f"  - {f.detail.splitlines()[0]}".replace("<", "\\<"))  # `<class 'X'>` is text, not an HTML tag to drop
    if f.culprit:
        lines += _culprit(f.culprit)
    if f.polluters:
        lines.append(f"  - fails only after: {', '.join(f'`{p}`' for p in f.polluters)}")
    if f.confirmation:
        lines.append(f"  - reruns: {f.confirmation}")
    if f.baseline_replay:
        lines.append(f"  - baseline replay: `{f.baseline_replay}`")
    if f.replay:
        lines.append(f"  - candidate replay: `{f.replay}`")
    return lines


def _culprit(culprit: Culprit) -> list[str]:
    """The functions to blame with their inlining and passes, what the search cost, its reproducer."""
    lines = [f"  - culprit: {', '.join(f'`{fn.where}`' for fn in culprit.functions) or 'none'} ({culprit_cost(culprit)})"]
    if culprit_inlined(culprit):
        lines.append(f"  - inlined into it: {culprit_inlined(culprit)}")
    if culprit.passes:
        lines.append(f"  - HIR passes that matter: {', '.join(culprit.passes)}")
    if culprit.note:
        lines.append(f"  - culprit search: {culprit.note}")
    if culprit.reproducer:
        lines.append(f"  - reproducer (JIT list `{culprit.jit_list}`): `{culprit.reproducer}`")
    return lines


def module_table(rows: tuple[ModuleRow, ...], limit: int = TOP_MODULES) -> list[str]:
    """The per-module table, the worst `limit` modules first, then the total over all of them."""
    lines = ["| Module | Baseline P/F/E/S/XF | Candidate P/F/E/S/XF | Compiled | Regressions |",
             "|---|---|---|---|---|"]
    worst = sorted(rows, key=lambda r: (-r.regressions, r.module))
    for row in worst[:limit]:
        regressions = f"**{row.regressions}**" if row.regressions else "0"
        lines.append(f"| {row.module} | {counts(row.baseline)} | {counts(row.candidate)} | {_compiled(row)} | {regressions} |")
    if len(rows) > limit:
        lines.append(f"| … {len(rows) - limit} more modules (HTML report) | | | | |")
    lines.append(f"| **TOTAL** | {counts(summed(r.baseline for r in rows))} | {counts(summed(r.candidate for r in rows))} | "
                 f"{_total(rows)} | {sum(r.regressions for r in rows)} |")
    return lines


def sweep_table(line: SweepLine) -> str:
    """One row per module (worst first), one column per threshold: candidate counts · compiled · regressions."""
    sweep = line.sweep
    columns = [column_label(c) for c in sweep.comparisons]
    lines = [f"## Threshold sweep: {line.title}", "",
             "Each threshold cell: candidate P/F/E/S/XF · functions compiled · regressions.", "",
             "| Module | Baseline P/F/E/S/XF | " + " | ".join(columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    tables = [{row.module: row for row in c.modules} for c in sweep.comparisons]
    modules = sorted(sweep.modules, key=lambda m: (-sum(t[m].regressions for t in tables if m in t), m))
    for module in modules[:TOP_MODULES]:
        rows = [table.get(module) for table in tables]
        baseline = next((row.baseline for row in rows if row is not None), {})
        lines.append(f"| {module} | {counts(baseline)} | " + " | ".join(_cell(row) for row in rows) + " |")
    if len(modules) > TOP_MODULES:
        lines.append(f"| … {len(modules) - TOP_MODULES} more modules (HTML report) | |" + " |" * len(columns))
    totals = [f"{counts(summed(r.candidate for r in c.modules))} · {_total(c.modules)} · {len(c.regressions)}"
              + (f" (+{len(c.known)} known)" if c.known else "") for c in sweep.comparisons]
    lines.append(f"| **TOTAL** | {counts(summed(r.baseline for r in sweep.comparisons[0].modules))} | "
                 + " | ".join(totals) + " |")
    return "\n".join(lines) + "\n"


def perf_part(report: Report) -> str:
    forest = report.forest
    lines = [f"## Performance vs {forest.baseline}", ""]
    if not forest.valid:
        lines += [f"- {problem}" for problem in forest.problems] + [""]
    means = dict(forest.means).get("all", ())
    for candidate, interval in zip(forest.candidates, means):
        lines.append(f"- {candidate}: geometric mean {speedup(interval) if interval else 'withheld'}")
    return "\n".join(lines) + "\n"


def _cell(row: ModuleRow | None) -> str:
    if row is None:
        return "absent"
    return f"{counts(row.candidate)} · {_compiled(row)} · {_regressions_cell(row)}"


def _regressions_cell(row: ModuleRow) -> str:
    """New regressions in bold, known ones beside them."""
    new = f"**{row.regressions}**" if row.regressions else "0"
    return new + (f" (+{row.known} known)" if row.known else "")


def _compiled(row: ModuleRow) -> str:
    return "—" if row.jit_compiled is None else f"{row.jit_compiled:,}" + (" (vacuous)" if row.vacuous else "")


def _total(rows: Iterable[ModuleRow]) -> str:
    total = compiled_total(rows)
    return "—" if total is None else f"{total:,}"


def coverage_modules_section(side: CoverageSide, subpackage: str, rows: Sequence[Row]) -> str:
    """Per module of one subpackage: functions defined and compiled, the most left uncompiled first,
    and what a module's functions need that a CPU-only machine lacks (how many, when only some do)."""
    total = total_of(rows)
    lines = [f"## JIT coverage of torch {side.coverage.torch}, {subpackage} by module: {side.label}", "",
             f"{total.compiled:,} of its {total.defined:,} functions compiled, in {sum(1 for row in rows if row.compiled)} "
             f"of {len(rows)} modules that define functions; the most functions left uncompiled first. "
             f"{_rest(total)}", "",
             "| Module | Defined | Compiled | Not compiled | Compiled % | Beyond a CPU |", "|---|---:|---:|---:|---:|---|"]
    lines += [f"| {row.name} | {row.defined:,} | {row.compiled:,} | {row.defined - row.compiled:,} | "
              f"{percent(row.share)} | {_beyond(row)} |" for row in rows]
    return "\n".join(lines) + "\n" + _needs_legend()


def _beyond(row: Row) -> str:
    """What a module's functions beyond a CPU need; how many, when they are not all of them."""
    if not row.beyond:
        return ""
    return str(row.needs) if row.beyond == row.defined else f"{row.beyond:,} of {row.defined:,}: {row.needs}"


def _rest(total: Row) -> str:
    """The share of what a CPU-only machine can run (harness/configure/data/beyond_cpu.yaml)."""
    return (f"{total.beyond:,} of the functions are ones a CPU-only machine cannot run (Beyond a CPU); of the "
            f"other {total.defined - total.beyond:,}, {total.compiled - total.beyond_compiled:,} compiled "
            f"({percent(total.rest_share)}).")


def _needs_legend() -> str:
    return "\nBeyond a CPU: " + "; ".join(f"{need.needs}: {need.why}" for need in beyond_cpu.load().rules) + ".\n"


def coverage_section(side: CoverageSide, limit: int | None = None) -> str:
    """Per torch subpackage (the biggest first, `limit` of them): functions defined, and compiled
    by the JIT at least once; then what was compiled outside torch's definitions."""
    coverage = side.coverage
    rows = coverage_rows(coverage)
    shown = rows if limit is None else rows[:limit]
    lines = [f"## JIT coverage of torch {coverage.torch}: {side.label}", "",
             f"Functions torch's sources define, and those the JIT compiled at least once (docs/coverage.md); "
             f"{len(coverage.exercised)} of {len(rows)} subpackages exercised. Beyond a CPU: functions (whole modules, "
             f"or some functions of one) that need a GPU, another accelerator or a compiler this machine lacks "
             f"(harness/configure/data/beyond_cpu.yaml); % of the rest: compiled of the others.", "",
             "| Subpackage | Defined | Compiled | Compiled % | Beyond a CPU | % of the rest |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {row.name} | {row.defined:,} | {row.compiled:,} | {percent(row.share)} | {row.beyond:,} | "
              f"{percent(row.rest_share)} |" for row in shown]
    if len(rows) > len(shown):
        lines.append(f"| … {len(rows) - len(shown)} more subpackages (HTML and JSON reports) | | | | | |")
    total = total_of(rows)
    lines += [f"| **torch** | **{total.defined:,}** | **{total.compiled:,}** | **{percent(total.share)}** | "
              f"**{total.beyond:,}** | **{percent(total.rest_share)}** |", "",
              f"Also compiled: {len(coverage.unattributed):,} functions of torch's modules that match no definition "
              f"(code made at run time: dataclass methods, AOTAutograd's generated wrappers), {len(coverage.other):,} outside torch "
              f"(tests, pytest, the standard library). Runs: {len(coverage.runs)}, processes: {coverage.processes}."]
    return "\n".join(lines) + "\n"

"""The report as one self-contained HTML page: Jinja2 templates, matplotlib SVG, our own script.

Everything the page needs is inlined (styles, script, pictures, data): it opens from `file://` and
as a CI artifact with no network. The templates only lay out what `_page` hands them; every
number, word and colour is decided here or in the model. Long tables (findings, modules) travel
as JSON and the page's script shows them a page at a time, filtered, so 5,000 regressions never
put 5,000 rows in the document at once.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from harness.record.coverage import total_of
from harness.report import charts
from harness.report.model import Cell, CoverageSide, Finding, Heatmap, Report, Section, Status
from harness.report.text import (counts, coverage_rows, culprit_cost, culprit_functions, culprit_inlined, percent,
                                 polluter_line, speedup, verdict_line)

HEATMAP_ROWS = 40  # modules drawn in the heatmap; the modules table below holds them all
PAGE_ROWS = 50  # table rows shown at once
LISTED = 200  # tests listed per category of other changes; report.json has them all

_ENVIRONMENT = Environment(loader=PackageLoader("harness.report", "templates"),
                           autoescape=select_autoescape(default=True, default_for_string=True),
                           trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(report: Report) -> str:
    return _ENVIRONMENT.get_template("report.html.j2").render(_page(report))


def _asset(name: str) -> Markup:
    """A static file of the templates folder, inlined as is (our own CSS and script)."""
    source, _, _ = _ENVIRONMENT.loader.get_source(_ENVIRONMENT, name)
    return Markup(source)


def _page(report: Report) -> dict[str, Any]:
    totals = report.totals
    return {
        "title": " · ".join(dict.fromkeys(s.comparison.candidate for s in report.sections)) + " vs "
                 + ", ".join(dict.fromkeys(s.comparison.baseline for s in report.sections)),
        "generated": report.generated,
        "valid": str(report.valid).lower(),
        "banner": "invalid" if not report.valid else "valid regressed" if totals.regressions else "valid",
        "verdict": verdict_line(report),
        "problems": report.problems,
        "notes": [f"{s.comparison.candidate}: {note}" for s in report.sections for note in s.comparison.notes],
        "counts": [("regressions", totals.regressions), ("confirmed", totals.confirmed), ("fixes", totals.fixes),
                   ("flaky", totals.flaky), ("new", totals.new), ("missing", totals.missing)]
                  + ([("known", totals.known)] if report.known_source else []),
        "sides": _sides(report),
        "comparisons": [_comparison(s) for s in report.sections],
        "changes": [changes for changes in map(_changes, report.sections) if changes["groups"]],
        "heatmap": _heatmap(report.heatmap),
        "sweeps": [{"title": line.title, "svg": Markup(charts.sweep_chart(line, f"sweep{index}"))}
                   for index, line in enumerate(report.sweeps)],
        "findings": [_finding(f) for f in report.findings],
        "culprits": any(f.culprit for f in report.findings),
        "filters": _filters(report),
        "modules": _modules(report.heatmap),
        "columns": report.heatmap.columns,
        "forest": _forest(report),
        "coverage": [_coverage(side, f"coverage{index}") for index, side in enumerate(report.coverage)],
        "trends": _trends(report),
        "known": _known(report),
        "order_dependence": _order_dependence(report),
        "page_rows": PAGE_ROWS,
        "style": _asset("report.css"),
        "script": _asset("report.js"),
    }


def _sides(report: Report) -> dict[str, Any]:
    sides = report.sides
    keys = sorted({key for side in sides for key in side.versions})
    return {"headers": [side.label for side in sides],
            "rows": [("role", [side.role for side in sides]), ("tier", [side.tier or "—" for side in sides]),
                     ("JIT threshold", ["—" if side.threshold is None else f"{side.threshold:,}" for side in sides]),
                     ("architecture", [side.platform or "—" for side in sides]),
                     *((key, [side.versions.get(key) or "—" for side in sides]) for key in keys)]}


def _comparison(section: Section) -> dict[str, Any]:
    c = section.comparison
    return {"title": section.title, "state": "valid" if c.valid else "invalid",
            "verdict": "valid" if c.valid else "INVALID, no verdict", "problems": c.problems,
            "counts": [("regressions", len(c.regressions)), ("fixes", len(c.fixes)), ("flaky", len(c.flaky)),
                       ("new", len(c.new)), ("missing", len(c.missing)), ("skip changes", len(c.skip_changes)),
                       ("xfail drift", len(c.xfail_drift)), ("failures that changed", len(c.failure_changes))]}


def _changes(section: Section) -> dict[str, Any]:
    """Fixes, new and missing tests, skip changes, xfail drift, changed failures: a folded list each."""
    c = section.comparison
    moved = [(name, [(change.test, f"{change.baseline} → {change.candidate}" + (f": {change.detail}" if change.detail else ""))
                     for change in changes])
             for name, changes in (("skip changes", c.skip_changes), ("xfail drift", c.xfail_drift),
                                   ("failures that changed", c.failure_changes))]
    plain = [(name, [(test, "") for test in tests])
             for name, tests in (("fixes", c.fixes), ("new tests", c.new), ("missing tests", c.missing))]
    return {"title": section.title,
            "groups": [{"name": name, "count": len(items), "tests": items[:LISTED], "more": max(0, len(items) - LISTED)}
                       for name, items in moved + plain if items]}


def _cell_view(cell: Cell | None, worst: int, module: str, column: str) -> dict[str, Any]:
    if cell is None:
        return {"text": "", "rate": "absent", "style": "", "title": f"{module}: not run by {column}", "module": module}
    background, ink = charts.heat_colour(cell.regressions, worst)
    compiled = "" if cell.compiled is None else f"; {cell.compiled:,} functions JIT-compiled"
    return {"text": str(cell.regressions), "rate": percent(cell.pass_rate), "module": module,
            "style": f"background-color: {background}; color: {ink}",
            "title": f"{module} under {column}: {cell.regressions} regression(s); pass rate {percent(cell.pass_rate)} "
                     f"({counts(cell.outcomes)} P/F/E/S/XF){compiled}"}


def _heatmap(heatmap: Heatmap) -> dict[str, Any]:
    worst = max((cell.regressions for row in heatmap.rows for cell in row.cells if cell), default=0)
    rows = [{"module": row.module, "regressions": row.regressions,
             "cells": [_cell_view(cell, worst, row.module, column) for cell, column in zip(row.cells, heatmap.columns)]}
            for row in heatmap.rows[:HEATMAP_ROWS]]
    return {"columns": heatmap.columns, "rows": rows, "hidden": max(0, len(heatmap.rows) - HEATMAP_ROWS)}


def _modules(heatmap: Heatmap) -> list[dict[str, str]]:
    """The modules table's rows: baseline counts, then per candidate counts, compiled functions, regressions."""
    rows = []
    for line in heatmap.rows:
        row = {"module": line.module, "baseline": counts(line.baseline), "regressions": str(line.regressions)}
        for index, cell in enumerate(line.cells):
            row[f"c{index}_counts"] = counts(cell.outcomes) if cell else "absent"
            row[f"c{index}_compiled"] = _compiled(cell)
            row[f"c{index}_regressions"] = str(cell.regressions) if cell else "—"
        rows.append(row)
    return rows


def _compiled(cell: Cell | None) -> str:
    if cell is None or cell.compiled is None:
        return "—"
    return f"{cell.compiled:,}" + (" (vacuous)" if cell.vacuous else "")


def _finding(finding: Finding) -> dict[str, str]:
    culprit = finding.culprit
    return {
        "test": finding.test, "module": finding.module, "configuration": finding.configuration,
        "baseline": finding.baseline, "candidate": finding.candidate, "classification": finding.classification,
        "status": finding.status.value, "confirmation": finding.confirmation, "detail": finding.detail,
        "replay": finding.replay, "baseline_replay": finding.baseline_replay,
        "polluters": ", ".join(finding.polluters),
        "known": f"known: {finding.known.reason}" if finding.known else "",
        "known_link": finding.known.link if finding.known else "",
        "culprit": culprit_functions(culprit) if culprit else "",
        "culprit_inlined": culprit_inlined(culprit) if culprit else "",
        "culprit_passes": ", ".join(culprit.passes) if culprit else "",
        "culprit_note": "; ".join(filter(None, [culprit_cost(culprit), culprit.note])) if culprit else "",
        "culprit_jit_list": culprit.jit_list if culprit else "",
        "culprit_reproducer": culprit.reproducer if culprit else "",
        "new_since": f"new since {finding.new_since}" if finding.new_since else "",
    }


def _filters(report: Report) -> dict[str, list[str]]:
    findings = report.findings
    statuses = [status.value for status in Status if any(f.status is status for f in findings)]
    return {"module": sorted({f.module for f in findings}),
            "classification": sorted({f.classification for f in findings}),
            "status": statuses + (["known"] if any(f.known for f in findings) else []),
            "configuration": list(dict.fromkeys(f.configuration for f in findings))}


def _forest(report: Report) -> dict[str, Any] | None:
    forest = report.forest
    if forest is None:
        return None
    table = [{"benchmark": row.benchmark, "tag": row.tag,
              "cells": [speedup(i) if i else reason for i, reason in zip(row.intervals, row.reasons)]}
             for row in forest.rows]
    table += [{"benchmark": f"geometric mean ({tag})", "tag": "", "cells": [speedup(i) if i else "—" for i in intervals]}
              for tag, intervals in forest.means]
    return {"svg": Markup(charts.forest_chart(forest, "forest")) if any(
                i for row in forest.rows for i in row.intervals) else None,
            "baseline": forest.baseline, "candidates": forest.candidates, "table": table,
            "valid": forest.valid, "problems": forest.problems, "method": forest.method}


def _coverage(side: CoverageSide, name: str) -> dict[str, Any]:
    """One candidate's JIT coverage: its chart, every subpackage's row (with its functions a CPU-only
    machine cannot run, and the share of the rest), what was compiled outside."""
    coverage = side.coverage
    rows = coverage_rows(coverage)
    total = total_of(rows)
    return {"label": side.label, "svg": Markup(charts.coverage_chart(coverage, name)),
            "summary": f"{total.compiled:,} of torch {coverage.torch}'s {total.defined:,} functions compiled "
                       f"({percent(total.share)}; {percent(total.rest_share)} of the {total.defined - total.beyond:,} "
                       f"a CPU-only machine can run), {len(coverage.exercised)} of {len(rows)} subpackages exercised",
            "rows": [{"name": row.name, "defined": f"{row.defined:,}", "compiled": f"{row.compiled:,}",
                      "share": percent(row.share), "beyond": f"{row.beyond:,}", "rest": percent(row.rest_share)}
                     for row in rows],
            "outside": f"Also compiled: {len(coverage.unattributed):,} functions of torch's modules that match no "
                       f"definition (code made at run time), {len(coverage.other):,} outside torch."}


def _trends(report: Report) -> dict[str, Any] | None:
    """The history section: a trend chart per configuration with two runs or more, what recovered."""
    history = report.history
    if history is None:
        return None
    trends = {"charts": [{"configuration": trend.configuration,
                          "svg": Markup(charts.trend_chart(trend, f"trend{index}"))}
                         for index, trend in enumerate(history.trends) if trend.comparable],
              "recovered": [asdict(since) for since in history.recovered]}
    return trends if trends["charts"] or trends["recovered"] else None


def _order_dependence(report: Report) -> list[str]:
    """One line per polluter set and candidate: `10 regressions, all after TEST`."""
    several = len(report.sections) > 1
    return [f"{section.comparison.candidate}: {polluter_line(group)}" if several else polluter_line(group)
            for section in report.sections for group in section.polluter_groups]


def _known(report: Report) -> dict[str, Any] | None:
    """Known regressions still failing, and known ones that passed (their entries can go)."""
    still = [{"test": f.test, "configuration": f.configuration, "reason": f.known.reason, "link": f.known.link,
              "entry": f.known.entry} for f in report.findings if f.known]
    fixed = [{"test": item.test, "configuration": s.comparison.candidate, "reason": item.known.reason,
              "link": item.known.link, "entry": item.known.entry} for s in report.sections for item in s.known_fixed]
    return {"source": report.known_source, "failing": still, "fixed": fixed} if still or fixed else None

"""The report as JSON, in the shape promised to other tools (docs/report.md) (and more).

One document per comparison (a list when there are several). The contract's keys (`valid`,
`problems`, `summary`, `modules`, `regressions` with their fields) keep their meaning; newer keys
only add to them: per regression `status`, `known`, `culprit` and `new_since`; per document
`known_fixed` when a known-regressions file was given, `trend` when run history knows the
candidate, `perf` when a performance comparison was made, and `coverage` when the candidate's
runs recorded JIT coverage of torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from harness.compare.diff import Known, Regression
from harness.record.coverage import Coverage, Row, total_of
from harness.report.model import Culprit, Finding, Forest, Interval, Report, Section
from harness.report.text import coverage_rows, polluter_line


def to_json(report: Report) -> dict[str, Any] | list[dict[str, Any]]:
    documents = [_document(report, section) for section in report.sections]
    return documents[0] if len(documents) == 1 else documents


def _document(report: Report, section: Section) -> dict[str, Any]:
    comparison = section.comparison
    findings = {f.test: f for f in section.regressions}

    def regression(r: Regression) -> dict[str, Any]:
        return {"test": r.test, "module": r.module, "nodeid": r.nodeid, "baseline": r.baseline,
                "candidate": r.candidate, "detail": r.detail, "confirmed": r.confirmed, "confirmation": r.confirmation,
                "polluters": list(r.polluters), "classification": r.classification, "replay": r.replay,
                "candidate_replay": r.replay, "baseline_replay": r.baseline_replay, **_annotations(findings[r.test])}

    document = {
        "baseline": comparison.baseline,
        "candidate": comparison.candidate,
        "configuration": comparison.configuration,
        "threshold": comparison.threshold,
        "tier": comparison.tier,
        "valid": comparison.valid,
        "problems": list(comparison.problems),
        "notes": list(comparison.notes),
        "exit_status": comparison.exit_status,
        "versions": {"baseline": comparison.baseline_versions, "candidate": comparison.candidate_versions},
        "platform": {"baseline": comparison.baseline_platform, "candidate": comparison.candidate_platform},
        "candidate_runs": list(comparison.candidate_runs),
        # order-dependent regressions grouped by the earlier tests they fail after (each also lists its `polluters`)
        "order_dependence": [{"polluters": list(group.polluters), "regressions": list(group.tests),
                              "summary": polluter_line(group)} for group in section.polluter_groups],
        "summary": {
            "regressions": len(comparison.regressions),
            "known_regressions": len(comparison.known),
            "known_fixed": len(comparison.known_fixed),
            "fixes": len(comparison.fixes),
            "flaky": len(comparison.flaky),
            "new": len(comparison.new),
            "missing": len(comparison.missing),
            "skip_changes": len(comparison.skip_changes),
            "xfail_drift": len(comparison.xfail_drift),
            "failure_changes": len(comparison.failure_changes),
            "confirmed": sum(1 for r in comparison.regressions if r.confirmed),
        },
        "modules": [
            {"module": row.module, "baseline": row.baseline, "candidate": row.candidate,
             "jit_compiled": row.jit_compiled, "regressions": row.regressions, "known_regressions": row.known,
             "vacuous": row.vacuous}
            for row in comparison.modules
        ],
        "regressions": [regression(r) for r in comparison.regressions],
        "known_regressions": [regression(r) for r in comparison.known],
        "known_fixed": [{"test": f.test, "module": f.module, **_known(f.known)} for f in comparison.known_fixed],
        "known_regressions_file": comparison.known_source or None,
        "flaky": [asdict(f) for f in comparison.flaky],
        "skip_changes": [asdict(c) for c in comparison.skip_changes],
        "xfail_drift": [asdict(c) for c in comparison.xfail_drift],
        "failure_changes": [asdict(c) for c in comparison.failure_changes],
        "fixes": list(comparison.fixes),
        "new": list(comparison.new),
        "missing": list(comparison.missing),
    }
    trend = report.trend(comparison.candidate)
    if trend is not None:
        document["trend"] = [asdict(point) for point in trend.points]
    if report.forest is not None:
        document["perf"] = _perf(report.forest)
    covered = next((side.coverage for side in report.coverage if side.label == comparison.candidate), None)
    if covered is not None:
        document["coverage"] = coverage_json(covered)
    return document


def coverage_json(coverage: Coverage) -> dict[str, Any]:
    """JIT coverage of torch: per subpackage (the biggest first) functions defined and compiled, and
    of those, the ones a CPU-only machine cannot run (`beyond_cpu`)."""
    rows = coverage_rows(coverage)
    return {"torch": coverage.torch, "runs": list(coverage.runs), "processes": coverage.processes,
            "subpackages": [_row(row, "subpackage") for row in rows], "total": _row(total_of(rows)),
            "exercised": list(coverage.exercised), "unattributed": len(coverage.unattributed),
            "other": len(coverage.other)}


def coverage_modules_json(coverage: Coverage, subpackage: str, rows: Sequence[Row]) -> dict[str, Any]:
    """JIT coverage of one subpackage's modules, the most functions left uncompiled first, each with
    what it needs that a CPU-only machine lacks (`needs`, null when nothing)."""
    return {"torch": coverage.torch, "runs": list(coverage.runs), "subpackage": subpackage,
            "modules": [{**_row(row, "module"), "needs": row.needs} for row in rows], "total": _row(total_of(rows))}


def _row(row: Row, part: str | None = None) -> dict[str, Any]:
    counts = {"defined": row.defined, "compiled": row.compiled, "beyond_cpu": row.beyond,
              "beyond_cpu_compiled": row.beyond_compiled}
    return {part: row.name, **counts} if part else counts


def _annotations(finding: Finding) -> dict[str, Any]:
    return {"status": finding.status.value, "known": _known(finding.known) if finding.known else None,
            "culprit": _culprit(finding.culprit) if finding.culprit else None, "new_since": finding.new_since or None}


def _known(known: Known) -> dict[str, str]:
    """Why a test is known to regress: the entry's reason, link, test id or pattern, and file:line."""
    return {"reason": known.reason, "link": known.link, "known_as": known.pattern, "entry": known.entry}


def _culprit(culprit: Culprit) -> dict[str, Any]:
    return culprit.to_json()


def _interval(interval: Interval | None) -> dict[str, Any] | None:
    return None if interval is None else {"speedup": interval.ratio, "ci95": [interval.low, interval.high],
                                          "verdict": interval.verdict}


def _perf(forest: Forest) -> dict[str, Any]:
    """The forest plot's data: per benchmark and candidate the speed-up and its 95% interval."""
    return {"baseline": forest.baseline, "candidates": list(forest.candidates), "valid": forest.valid,
            "problems": list(forest.problems),
            "benchmarks": [{"name": row.benchmark, "tag": row.tag,
                            "speedups": [_interval(i) for i in row.intervals]} for row in forest.rows],
            "geometric_means": {tag: [_interval(i) for i in intervals] for tag, intervals in forest.means}}

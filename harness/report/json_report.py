"""The comparison as JSON, in the shape PRODUCT.md promises to other tools (and more)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from harness.compare.diff import Comparison, Known, Regression


def to_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "baseline": comparison.baseline,
        "candidate": comparison.candidate,
        "configuration": comparison.configuration,
        "threshold": comparison.threshold,
        "tier": comparison.tier,
        "valid": comparison.valid,
        "problems": list(comparison.problems),
        "notes": list(comparison.notes),
        "exit_status": comparison.exit_status,
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
        },
        "modules": [
            {"module": row.module, "baseline": row.baseline, "candidate": row.candidate,
             "jit_compiled": row.jit_compiled, "regressions": row.regressions, "known_regressions": row.known,
             "vacuous": row.vacuous}
            for row in comparison.modules
        ],
        "regressions": [_regression(r) for r in comparison.regressions],
        "known_regressions": [{**_regression(r), **_known(r.known)} for r in comparison.known if r.known],
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


def _regression(r: Regression) -> dict[str, Any]:
    return {"test": r.test, "module": r.module, "nodeid": r.nodeid, "baseline": r.baseline, "candidate": r.candidate,
            "detail": r.detail, "confirmed": r.confirmed, "confirmation": r.confirmation,
            "polluters": list(r.polluters), "classification": r.classification,
            "replay": r.replay, "candidate_replay": r.replay, "baseline_replay": r.baseline_replay}


def _known(known: Known) -> dict[str, str]:
    """Why a test is known to regress: the entry's reason, link, test id or pattern, and file:line."""
    return {"reason": known.reason, "link": known.link, "known_as": known.pattern, "entry": known.entry}

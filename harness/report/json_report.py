"""The comparison as JSON, in the shape PRODUCT.md promises to other tools."""

from __future__ import annotations

from typing import Any

from harness.compare.diff import Comparison


def to_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "baseline": comparison.baseline,
        "candidate": comparison.candidate,
        "valid": comparison.valid,
        "problems": list(comparison.problems),
        "notes": list(comparison.notes),
        "exit_status": comparison.exit_status,
        "summary": {
            "regressions": len(comparison.regressions),
            "fixes": len(comparison.fixes),
            "flaky": len(comparison.flaky),
            "new": len(comparison.new),
            "missing": len(comparison.missing),
        },
        "modules": [
            {"module": row.module, "baseline": row.baseline, "candidate": row.candidate,
             "jit_compiled": row.jit_compiled, "regressions": row.regressions, "vacuous": row.vacuous}
            for row in comparison.modules
        ],
        "regressions": [
            {"test": r.test, "module": r.module, "baseline": r.baseline, "candidate": r.candidate,
             "detail": r.detail, "confirmed": r.confirmed, "classification": r.classification,
             "replay": r.replay}
            for r in comparison.regressions
        ],
        "fixes": list(comparison.fixes),
        "new": list(comparison.new),
        "missing": list(comparison.missing),
        "flaky": list(comparison.flaky),
    }

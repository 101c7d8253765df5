"""Report: pass rate per model and per op, coverage, dedupe efficiency and runtime per case.

Built from the plan (known to every process) and from test reports (which reach the xdist
controller with their user properties), so the numbers are the same with or without `-n`.
Written as JSON + Markdown with `--manifest-report DIR`; a short summary goes to the terminal.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.protocol import Outcome

from .plan import Plan, Settings

REPORT_NAME = "op_manifests_report"
# Outcomes where the op actually ran and was judged; skips and expected failures are not.
_JUDGED = (Outcome.PASSED, Outcome.FAILED, Outcome.ERROR)
_COLUMNS = (Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED)  # of the Markdown tables
_SLOWEST = 10  # enough to spot the cases worth shrinking without flooding the Markdown


@dataclass(frozen=True)
class CaseOutcome:
    test_id: str
    model: str
    op: str
    outcome: Outcome
    duration_s: float
    max_abs_err: float | None
    max_rel_err: float | None


class ManifestReport:
    """pytest plugin collecting one CaseOutcome per op-manifest test."""

    def __init__(self, plan: Plan, settings: Settings) -> None:
        self.plan = plan
        self.settings = settings
        self._outcome: dict[str, Outcome] = {}
        self._duration: Counter[str] = Counter()
        self._props: dict[str, dict[str, Any]] = {}
        self.summary: dict[str, Any] | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if "manifest" not in props:
            return
        node = report.nodeid
        self._props[node] = props
        self._duration[node] += report.duration
        self._outcome[node] = _fold(self._outcome.get(node), report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput") or not self._outcome:
            return  # xdist workers report to the controller, which writes the report
        self.summary = summarize(self.plan, self.outcomes())
        if self.settings.report_dir is not None:
            write(self.summary, self.settings.report_dir)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.summary is None:
            return
        terminalreporter.section("op manifests")
        for line in summary_lines(self.summary):
            terminalreporter.line(line)
        if self.settings.report_dir is not None:
            terminalreporter.line(f"report: {self.settings.report_dir / REPORT_NAME}.json (.md)")

    def outcomes(self) -> list[CaseOutcome]:
        result = []
        for node, outcome in sorted(self._outcome.items()):
            props = self._props[node]
            test_id = node[node.index("[") + 1 : -1] if node.endswith("]") else node
            result.append(
                CaseOutcome(
                    test_id=test_id,
                    model=str(props.get("model", "")),
                    op=str(props.get("op", "")),
                    outcome=outcome,
                    duration_s=round(self._duration[node], 6),
                    max_abs_err=_float(props.get("max_abs_err")),
                    max_rel_err=_float(props.get("max_rel_err")),
                )
            )
        return result


def _fold(previous: Outcome | None, report: pytest.TestReport) -> Outcome:
    """One outcome per test from its setup/call/teardown reports (the harness's vocabulary)."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if xfail:
            return Outcome.XFAILED if report.skipped else Outcome.XPASSED
        return Outcome(report.outcome)
    if report.failed:
        return Outcome.ERROR if previous in (None, Outcome.PASSED) else previous
    if report.skipped:
        return Outcome.XFAILED if xfail else Outcome.SKIPPED
    return previous or Outcome.PASSED


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def summarize(plan: Plan, outcomes: list[CaseOutcome]) -> dict[str, Any]:
    cases = [case for manifest in plan.manifests for case in manifest.cases]
    per_model_sigs: dict[str, set[str]] = defaultdict(set)
    per_model_ops: dict[str, set[str]] = defaultdict(set)
    for case in cases:
        per_model_sigs[case.model].add(case.signature)
        per_model_ops[case.model].add(case.op)
    collected = sum(1 for item in plan.items if item.case is not None)
    return {
        "backend": plan.backend,
        "dedupe": plan.dedupe,
        "totals": _counts(outcomes),
        "models": {model: _counts(group) for model, group in _group(outcomes, "model").items()},
        "ops": {op: _counts(group) for op, group in _group(outcomes, "op").items() if op},
        "coverage": {
            "distinct_ops": len({case.op for case in cases}),
            "distinct_input_signatures": len({case.signature for case in cases}),
            "models": {
                model: {
                    "ops": len(per_model_ops[model]),
                    "input_signatures": len(per_model_sigs[model]),
                    "duplicates_not_collected": sum(1 for d in plan.duplicates if d.model == model),
                }
                for model in sorted(per_model_ops)
            },
        },
        "dedupe_stats": {
            "valid_cases": len(cases),
            "collected": collected,
            "duplicates_not_collected": len(plan.duplicates),
            "efficiency": round(len(plan.duplicates) / len(cases), 4) if cases else 0.0,
        },
        "manifest_errors": [item.error for item in plan.items if item.error is not None],
        "runtime_s": round(sum(o.duration_s for o in outcomes), 3),
        "slowest": [asdict(o) for o in sorted(outcomes, key=lambda o: -o.duration_s)[:_SLOWEST]],
        "cases": [asdict(o) for o in outcomes],
    }


def _group(outcomes: list[CaseOutcome], field: str) -> dict[str, list[CaseOutcome]]:
    groups: dict[str, list[CaseOutcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[getattr(outcome, field)].append(outcome)
    return dict(sorted(groups.items()))


def _counts(outcomes: list[CaseOutcome]) -> dict[str, Any]:
    counts = Counter(o.outcome for o in outcomes)
    judged = sum(counts[k] for k in _JUDGED)
    return {
        "tests": len(outcomes),
        **dict(sorted(counts.items())),
        "pass_rate": round(counts[Outcome.PASSED] / judged, 4) if judged else None,
        "runtime_s": round(sum(o.duration_s for o in outcomes), 3),
    }


def summary_lines(summary: dict[str, Any]) -> list[str]:
    totals, dedupe, coverage = summary["totals"], summary["dedupe_stats"], summary["coverage"]
    outcome_text = ", ".join(
        f"{totals[k]} {k}" for k in sorted(totals) if k not in ("tests", "pass_rate", "runtime_s")
    )
    lines = [
        (
            f"backend {summary['backend']}: {totals['tests']} tests ({outcome_text}) "
            f"in {totals['runtime_s']}s; pass rate {_percent(totals['pass_rate'])}"
        ),
        (
            f"coverage: {coverage['distinct_ops']} ops, {coverage['distinct_input_signatures']} input "
            f"signatures; dedupe {'on' if summary['dedupe'] else 'off'}: "
            f"{dedupe['duplicates_not_collected']} of {dedupe['valid_cases']} cases not collected as "
            f"duplicates ({_percent(dedupe['efficiency'])})"
        ),
    ]
    for model, counts in summary["models"].items():
        lines.append(
            f"  {model}: {counts.get(Outcome.PASSED, 0)}/{counts['tests']} {Outcome.PASSED}, pass rate {_percent(counts['pass_rate'])}"
        )
    if summary["manifest_errors"]:
        lines.append(f"manifest errors: {len(summary['manifest_errors'])} (see failed tests)")
    return lines


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


def write(summary: dict[str, Any], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{REPORT_NAME}.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (directory / f"{REPORT_NAME}.md").write_text(markdown(summary))


def markdown(summary: dict[str, Any]) -> str:
    out = [f"# Op manifest report (backend `{summary['backend']}`)", ""]
    out += [f"- {line}" for line in summary_lines(summary)[:2]]
    out += ["", "## Pass rate per model", ""]
    out += _table(
        ("model", "tests", *_COLUMNS, "pass rate", "runtime s"),
        summary["models"],
    )
    out += ["", "## Pass rate per op", ""]
    out += _table(
        ("op", "tests", *_COLUMNS, "pass rate", "runtime s"), summary["ops"]
    )
    out += ["", "## Coverage per model", "", "| model | ops | input signatures | duplicates not collected |"]
    out += ["|---|---:|---:|---:|"]
    out += [
        f"| {m} | {c['ops']} | {c['input_signatures']} | {c['duplicates_not_collected']} |"
        for m, c in summary["coverage"]["models"].items()
    ]
    out += ["", "## Slowest cases", "", "| test | op | outcome | seconds | max abs err | max rel err |"]
    out += ["|---|---|---|---:|---:|---:|"]
    out += [
        f"| `{c['test_id']}` | `{c['op']}` | {c['outcome']} | {c['duration_s']:.3f} | {c['max_abs_err']} | {c['max_rel_err']} |"
        for c in summary["slowest"]
    ]
    if summary["manifest_errors"]:
        out += ["", "## Manifest errors", ""] + [f"- `{error}`" for error in summary["manifest_errors"]]
    return "\n".join(out) + "\n"


def _table(header: tuple[str, ...], rows: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for name, c in rows.items():
        cells = [c["tests"], *(c.get(outcome, 0) for outcome in _COLUMNS)]
        lines.append(
            f"| `{name}` | "
            + " | ".join(map(str, cells))
            + f" | {_percent(c['pass_rate'])} | {c['runtime_s']} |"
        )
    return lines

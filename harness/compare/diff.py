"""Baseline against candidate: regressions, fixes, new and missing tests, and validity.

A verdict is only given when it can be backed: a JIT run that compiled nothing, a baseline that
could import CinderX, different torch versions, interpreters or test sources, or an incomplete
run make the comparison invalid (exit status 2), whatever the test outcomes say.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from harness.record.model import BAD_OUTCOMES, FileRecord, RunRecord, TestResult
from harness.record.store import Side

EXIT_OK, EXIT_REGRESSIONS, EXIT_INVALID, EXIT_USAGE = 0, 1, 2, 3


@dataclass(frozen=True)
class Regression:
    test: str
    module: str
    baseline: str
    candidate: str
    detail: str
    classification: str
    replay: str = ""
    confirmed: bool | None = None  # set by confirmation reruns; None = not confirmed either way


@dataclass(frozen=True)
class ModuleRow:
    module: str
    baseline: dict[str, int]
    candidate: dict[str, int]
    jit_compiled: int | None
    regressions: int
    vacuous: bool = False


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
    flaky: tuple[str, ...] = field(default=())

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def exit_status(self) -> int:
        if not self.valid:
            return EXIT_INVALID
        return EXIT_REGRESSIONS if self.regressions else EXIT_OK


def compare(baseline: Side, candidate: Side) -> Comparison:
    before = {r.test_id: r for r in baseline.results}
    after = {r.test_id: r for r in candidate.results}
    crashed_files = _crashed_modules(candidate.record)
    regressions = []
    for test_id, old in before.items():
        if old.outcome != "passed":
            continue
        new = after.get(test_id)
        if new is not None and new.outcome in BAD_OUTCOMES:
            regressions.append(_regression(test_id, old, new.outcome, new.message, new))
        elif new is None and old.module in crashed_files:
            regressions.append(_regression(test_id, old, "crashed", f"not run: {crashed_files[old.module]}", None))
    fixes = [t for t, new in after.items() if new.outcome == "passed" and t in before and before[t].outcome in BAD_OUTCOMES]
    regressed = {r.test for r in regressions}
    return Comparison(
        baseline=baseline.label,
        candidate=candidate.label,
        problems=tuple(validity_problems(baseline.record, candidate.record)),
        notes=tuple(_notes(baseline, candidate)),
        regressions=tuple(sorted(regressions, key=lambda r: r.test)),
        fixes=tuple(sorted(fixes)),
        new=tuple(sorted(set(after) - set(before))),
        missing=tuple(sorted(set(before) - set(after) - regressed)),
        modules=tuple(_modules(baseline, candidate, regressions)),
    )


def validity_problems(baseline: RunRecord | None, candidate: RunRecord | None) -> list[str]:
    """Why the two runs cannot be compared; empty when they can."""
    problems: list[str] = []
    for role, record in (("baseline", baseline), ("candidate", candidate)):
        if record is None:
            continue
        if record.status != "complete":
            problems.append(f"{role} run is incomplete (status: {record.status})")
        if record.jit_mode == "on":
            problems.extend(f"{role}: {p}" for p in _jit_problems(record))
    if baseline is not None and baseline.jit_mode == "absent":
        problems.extend(f"baseline is contaminated: {c}" for c in _contamination(baseline))
    if baseline is None or candidate is None:
        return problems
    for what, key in (("torch", "torch"), ("interpreter", "python")):
        if baseline.versions.get(key) != candidate.versions.get(key):
            problems.append(f"{what} versions differ: baseline {baseline.versions.get(key)}, "
                            f"candidate {candidate.versions.get(key)}")
    if baseline.test_sources.get("hash") != candidate.test_sources.get("hash"):
        problems.append(f"test sources differ: baseline {baseline.test_sources.get('hash')}, "
                        f"candidate {candidate.test_sources.get('hash')}")
    if baseline.tier != candidate.tier:
        problems.append(f"tiers differ: baseline {baseline.tier}, candidate {candidate.tier}")
    return problems


def _jit_problems(record: RunRecord) -> list[str]:
    errors = sorted({f.jit_error for f in record.files if f.jit_error})
    if record.files and record.compiled == 0:
        errors.append(f"vacuous: the JIT was on but compiled 0 functions in {len(record.files)} files")
    return errors


def _contamination(record: RunRecord) -> list[str]:
    found = {f.contamination for f in record.files if f.contamination}
    if record.interpreter.get("cinderx_origin"):
        found.add(f"cinderx importable from {record.interpreter['cinderx_origin']}")
    return sorted(found)


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
    return notes


def _crashed_modules(record: RunRecord | None) -> dict[str, str]:
    if record is None:
        return {}
    return {f.module: f.culprit for f in record.files if f.culprit}


def _regression(test_id: str, old: TestResult, outcome: str, message: str, new: TestResult | None) -> Regression:
    return Regression(
        test=test_id, module=old.module, baseline=old.outcome, candidate=outcome,
        detail=message.strip()[:500], classification=classify(outcome, message),
        replay=new.replay if new is not None else "",
    )


_NUMERIC = re.compile(r"not close|Mismatched elements|Greatest absolute difference|allclose", re.I)
_EXCEPTION = re.compile(r"^(?:E\s+)?([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))\b")


def classify(outcome: str, message: str) -> str:
    """A first hint at what kind of regression this is, from its outcome and message."""
    if outcome == "crashed":
        signal_name = re.search(r"\bSIG[A-Z]+\b", message)
        return f"crash ({signal_name.group(0)})" if signal_name else "crash"
    if outcome == "timeout":
        return "timeout"
    if message.startswith("collection error"):
        return "infrastructure (collection or import)"
    if _NUMERIC.search(message):
        return "numerics beyond tolerance"
    exception = _EXCEPTION.match(message.strip())
    return f"exception ({exception.group(1)})" if exception else outcome


def _modules(baseline: Side, candidate: Side, regressions: list[Regression]) -> list[ModuleRow]:
    files = {f.module: f for f in candidate.record.files} if candidate.record else {}
    jit_on = candidate.record is not None and candidate.record.jit_mode == "on"
    before = _counts(baseline.results)
    after = _counts(candidate.results)
    per_module = Counter(r.module for r in regressions)
    rows = []
    for module in sorted(set(before) | set(after) | set(files)):
        record: FileRecord | None = files.get(module)
        compiled = record.jit.get("compiled") if record and record.jit else None
        rows.append(ModuleRow(module, before.get(module, {}), after.get(module, {}),
                              compiled if jit_on else None, per_module[module],
                              vacuous=bool(jit_on and record and record.vacuous)))
    return rows


def _counts(results: tuple[TestResult, ...]) -> dict[str, dict[str, int]]:
    counts: dict[str, Counter[str]] = {}
    for result in results:
        counts.setdefault(result.module, Counter())[result.outcome] += 1
    return {module: dict(counter) for module, counter in counts.items()}

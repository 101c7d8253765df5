"""Verify: run every emitted case once through the op-manifest loader and runner (eager, CPU) and fix
what would not be green, so a scanned manifest never ships a failing case.

- The loader rejects the case: it is left out and reported (a scanner bug, shown in the header).
- The op raises on the synthesized inputs: the case is kept, skipped with the error as its reason.
- Two identical calls give different values (nondeterminism the op tables did not know about): the
  case compares metadata only; if even shape/dtype/strides differ, it is skipped.

The op-manifest framework is `op_manifests`; this module is imported only when a scan
verifies (the runner imports torch).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from op_manifests import loader, runner
from op_manifests.loader import CaseSpec, Limits
from harness.scan.normalize import Case, Omission, Scan

_RAISED = ("CPU eager reference raised", "backend eager raised")  # how runner.run_case reports an op's error


@dataclass(frozen=True)
class Verdict:
    case: str
    change: str  # "metadata" | "skip" | "omit"
    reason: str


def verify(scan: Scan, render: Callable[[Scan], str]) -> tuple[Scan, tuple[Verdict, ...]]:
    """`scan` with every case adjusted to what running it showed, and the changes made."""
    limits = Limits()
    with tempfile.TemporaryDirectory(prefix="scan-verify-") as folder:
        path = Path(folder) / "scan.yaml"
        path.write_text(render(scan), encoding="utf-8")
        manifest = loader.load_manifest(path, limits)
    verdicts: list[Verdict] = [
        Verdict(error.case or "", "omit", f"rejected by the manifest loader: {error.message}")
        for _, error in manifest.errors
    ]
    for spec in manifest.cases:
        verdict = _run(spec, limits)
        if verdict is not None:
            verdicts.append(verdict)
    return apply(scan, verdicts), tuple(verdicts)


def _run(spec: CaseSpec, limits: Limits) -> Verdict | None:
    try:
        result = runner.run_case(spec, "eager", limits)
    except runner.CaseError as exc:
        return Verdict(spec.name, "skip", f"inputs cannot be built: {_first_line(exc)}")
    if result.mismatch is None:
        return None
    if result.mismatch.startswith(_RAISED):
        return Verdict(spec.name, "skip", f"raised at scan time on synthesized inputs: {_first_line(result.mismatch)}")
    if spec.compare == "values":
        metadata = runner.run_case(dataclasses.replace(spec, compare="metadata"), "eager", limits)
        if metadata.mismatch is None:
            return Verdict(spec.name, "metadata", "two identical calls returned different values at scan time")
    return Verdict(spec.name, "skip", f"not reproducible at scan time: {_first_line(result.mismatch)}")


def apply(scan: Scan, verdicts: Sequence[Verdict]) -> Scan:
    changes = {verdict.case: verdict for verdict in verdicts}
    cases: list[Case] = []
    omitted = list(scan.omitted)
    for case in scan.cases:
        verdict = changes.get(case.name)
        if verdict is None:
            cases.append(case)
        elif verdict.change == "omit":
            omitted.append(Omission(case.op, verdict.reason, 1))
        elif verdict.change == "metadata":
            note = f"compare: metadata because {verdict.reason}"
            cases.append(dataclasses.replace(case, compare="metadata", description=f"{case.description}\n{note}"))
        else:
            cases.append(dataclasses.replace(case, skip_reason=verdict.reason))
    return dataclasses.replace(scan, cases=tuple(cases), omitted=tuple(omitted))


def _first_line(error: object) -> str:
    text = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return text[:240]


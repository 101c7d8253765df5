"""Plan: which manifest cases become which tests (model selection, skips, dedupe, test ids).

Decided entirely at collection from the manifests and the options, in file order, so every
process (each xdist worker included) computes the same tests with the same ids; no outcome
depends on which test ran first. Duplicates are left out of collection, never skipped at run time.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import safe_eval
from .loader import CaseSpec, Limits, Location, Manifest, ManifestError, format_error

# Markers every pytest knows; anything else must be registered under `markers =` in pytest.ini.
BUILTIN_MARKERS = frozenset({"skip", "xfail"})
BACKENDS = ("eager", "aot_eager", "inductor")


@dataclass(frozen=True)
class Settings:
    """The session's op-manifest options, resolved and validated once."""

    manifest_dir: Path
    backend: str
    dedupe: bool
    models: tuple[str, ...]
    limits: Limits
    report_dir: Path | None


class UnknownModel(ValueError):
    """--model named a model no manifest defines."""


@dataclass(frozen=True)
class PlannedCase:
    """One collected test: a runnable case, or an error that the test reports as its failure."""

    test_id: str
    model: str
    op: str
    where: str
    case: CaseSpec | None = None
    error: str | None = None
    skip_reason: str | None = None
    marks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Duplicate:
    """A case not collected because an identical one (same signature) is collected as `kept`."""

    test_id: str
    model: str
    op: str
    kept: str


@dataclass(frozen=True)
class Plan:
    manifests: tuple[Manifest, ...]
    items: tuple[PlannedCase, ...]
    duplicates: tuple[Duplicate, ...]
    backend: str
    dedupe: bool


def build_plan(
    manifests: Sequence[Manifest],
    *,
    models: Sequence[str],
    dedupe: bool,
    backend: str,
    known_markers: frozenset[str],
) -> Plan:
    selected = select_models(manifests, models)
    items: list[PlannedCase] = []
    duplicates: list[Duplicate] = []
    kept: dict[str, str] = {}  # signature -> test id of the first runnable case
    used_ids: set[str] = set()
    for manifest, owner_error in _owners(selected):
        if owner_error is not None:
            items.append(_error_item(manifest, -1, owner_error, used_ids))
            continue
        for index, case, error in _in_file_order(manifest):
            if error is not None:
                items.append(_error_item(manifest, index, error, used_ids))
                continue
            assert case is not None
            item = _plan_case(case, backend, known_markers)
            runnable = item.error is None and item.skip_reason is None and "xfail" not in item.marks
            if dedupe and runnable and case.signature in kept:
                duplicates.append(Duplicate(case.test_id, case.model, case.op, kept[case.signature]))
                continue
            if runnable:
                kept.setdefault(case.signature, case.test_id)
            used_ids.add(item.test_id)
            items.append(item)
    return Plan(tuple(selected), tuple(items), tuple(duplicates), backend, dedupe)


def select_models(manifests: Sequence[Manifest], models: Sequence[str]) -> list[Manifest]:
    """Manifests of the requested models (all when none requested); a file's stem also matches,
    so a broken `gpt_oss.yaml` still shows up (as an error) under `--model gpt_oss`."""
    if not models:
        return list(manifests)
    known = {m.model for m in manifests} | {m.path.stem for m in manifests}
    unknown = sorted(set(models) - known)
    if unknown:
        names = ", ".join(sorted({m.model for m in manifests})) or "none"
        raise UnknownModel(f"unknown model(s): {', '.join(unknown)} (known: {names})")
    wanted = set(models)
    return [m for m in manifests if m.model in wanted or m.path.stem in wanted]


def _owners(manifests: Sequence[Manifest]) -> Iterator[tuple[Manifest, ManifestError | None]]:
    """Each manifest with its file-level error; a second file claiming a model is an error."""
    owner: dict[str, Manifest] = {}
    for manifest in manifests:
        file_errors = [error for index, error in manifest.errors if index < 0]
        if file_errors:
            yield manifest, file_errors[0]
        elif manifest.model in owner:
            first = owner[manifest.model].path.name
            message = f"model '{manifest.model}' is already defined by {first}; model names must be unique"
            yield manifest, ManifestError(manifest.where, message)
        else:
            owner[manifest.model] = manifest
            yield manifest, None


def _in_file_order(manifest: Manifest) -> Iterator[tuple[int, CaseSpec | None, ManifestError | None]]:
    errors = {index: error for index, error in manifest.errors if index >= 0}
    cases = iter(manifest.cases)
    for index in range(manifest.case_count):
        if index in errors:
            yield index, None, errors[index]
        else:
            yield index, next(cases), None


def _error_item(manifest: Manifest, index: int, error: ManifestError, used_ids: set[str]) -> PlannedCase:
    """Ids carry the case name when it is known and unique, else the case's index in the file."""
    if index < 0:
        test_id = f"{manifest.path.name}::manifest-error"
    elif error.case is not None and not error.case.startswith("#"):
        test_id = f"{manifest.model}::{error.case}"
    else:
        test_id = f"{manifest.model}::#{index}"
    if test_id in used_ids:
        test_id = f"{manifest.model}::#{index}"
    used_ids.add(test_id)
    return PlannedCase(test_id, manifest.model, "", str(error.where), error=str(error))


def _plan_case(case: CaseSpec, backend: str, known_markers: frozenset[str]) -> PlannedCase:
    def errored(where: Location, message: str) -> PlannedCase:
        error = format_error(where, case.name, message)
        return PlannedCase(case.test_id, case.model, case.op, str(case.where), error=error)

    for mark in case.marks:
        if mark not in known_markers and mark not in BUILTIN_MARKERS:
            return errored(case.where, f"unknown marker '{mark}'; register it under markers in pytest.ini")
    skip_reason = "marked skip in the manifest" if "skip" in case.marks else None
    variables = condition_variables(case, backend)
    for rule in case.skip_if:
        try:
            if skip_reason is None and rule.condition.evaluate(variables):
                skip_reason = rule.reason
        except safe_eval.UnsafeExpression as exc:
            return errored(rule.where, f"skip_if: {exc}")
    return PlannedCase(
        case.test_id, case.model, case.op, str(case.where), case, None, skip_reason, case.marks
    )


def condition_variables(case: CaseSpec, backend: str) -> Mapping[str, object]:
    """The plain values a `skip_if` expression may read (see safe_eval.CONDITION_NAMES)."""
    return _Variables(
        {
            "backend": backend,
            "device": "cpu",
            "dtype": case.dtype,
            "model": case.model,
            "op": case.op,
            "torch_version": torch_version(),
            "python_version": tuple(sys.version_info[:3]),
            "platform": sys.platform,
        }
    )


class _Variables(Mapping[str, object]):
    """Values for conditions; `cuda_available` imports torch, so only when an expression reads it."""

    def __init__(self, values: dict[str, object]) -> None:
        self._values = values

    def __getitem__(self, name: str) -> object:
        if name == "cuda_available":
            return _cuda_available()
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*self._values, "cuda_available"])

    def __len__(self) -> int:
        return len(self._values) + 1


@functools.cache
def torch_version() -> tuple[int, ...]:
    """Installed torch version from package metadata (no torch import), e.g. (2, 13, 0)."""
    try:
        text = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return ()
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


@functools.cache
def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def model_lines(manifests: Sequence[Manifest]) -> list[str]:
    """`--list-models` output: one line per manifest file."""
    lines = []
    for manifest in manifests:
        file_errors = [error for index, error in manifest.errors if index < 0]
        if file_errors:
            lines.append(f"{manifest.path.stem}: ERROR {file_errors[0]}")
            continue
        bad = len(manifest.errors)
        extra = f", {bad} invalid" if bad else ""
        lines.append(f"{manifest.model}: {manifest.case_count} cases{extra} ({manifest.path.name})")
    return lines


def case_lines(plan: Plan, op_problem: Mapping[str, str]) -> list[str]:
    """`--list-cases` output: every planned test, every duplicate left out, every error line.

    `op_problem` maps op names that do not resolve to their reason (the caller resolves them).
    """
    lines = []
    for item in plan.items:
        if item.error is not None:
            lines.append(f"{item.test_id}  ERROR {item.error}")
        elif item.op in op_problem and item.case is not None:
            error = format_error(item.case.op_where, item.case.name, op_problem[item.op])
            lines.append(f"{item.test_id}  ERROR {error}")
        elif item.skip_reason is not None:
            lines.append(f"{item.test_id}  {item.op}  [skip: {item.skip_reason}]")
        else:
            lines.append(f"{item.test_id}  {item.op}")
    for dup in plan.duplicates:
        lines.append(f"{dup.test_id}  {dup.op}  [duplicate of {dup.kept}: not collected]")
    errors = sum(1 for line in lines if "  ERROR " in line)
    lines.append(
        f"{len(plan.items)} tests from {len(plan.manifests)} manifests; "
        f"{len(plan.duplicates)} duplicates not collected (dedupe {'on' if plan.dedupe else 'off'}); "
        f"{errors} errors"
    )
    return lines

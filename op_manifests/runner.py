"""Runner: run one case under the compile backend and compare it with the CPU eager reference.

The candidate is the op wrapped in a one-line function and `torch.compile`d with the chosen
backend (`fullgraph=False`, so a graph break degrades to eager instead of failing); for the
`eager` backend the op is simply called. Both sides get freshly built, identical inputs.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from . import registry
from .inputs import InputError, build_arguments
from .loader import CaseSpec, ErrorSpec, Limits, format_error

_NUMBER = (bool, int, float, complex)


class CaseError(Exception):
    """The case could not be run at all (unknown op, rejected input); one-line message."""


@dataclass(frozen=True)
class CaseResult:
    """Largest element-wise errors over all outputs (None when values were not compared)."""

    max_abs_err: float | None
    max_rel_err: float | None
    mismatch: str | None


@dataclass(frozen=True)
class _Outcome:
    value: Any = None
    error: Exception | None = None


def run_case(case: CaseSpec, backend: str, limits: Limits) -> CaseResult:
    try:
        op = registry.resolve(case.op)
    except registry.UnknownOp as exc:
        raise CaseError(format_error(case.op_where, case.name, str(exc))) from None
    reference = _call(op, case, limits)
    candidate = _call(_under_backend(op, backend), case, limits)
    if case.expects_error is not None:
        return CaseResult(None, None, _check_errors(case.expects_error, reference, candidate, backend))
    for label, outcome in (("CPU eager reference", reference), (f"backend {backend}", candidate)):
        if outcome.error is not None:
            return CaseResult(None, None, f"{label} raised {_describe(outcome.error)}")
    return compare(reference.value, candidate.value, case)


def _call(fn: Callable[..., Any], case: CaseSpec, limits: Limits) -> _Outcome:
    try:
        args, kwargs = build_arguments(case, limits)
    except InputError as exc:
        raise CaseError(str(exc)) from None
    try:
        return _Outcome(value=fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the op's error is the observation, judged later
        return _Outcome(error=exc)


def _under_backend(op: Callable[..., Any], backend: str) -> Callable[..., Any]:
    if backend == "eager":
        return op
    # Fresh compile state per case: cases must not share compiled code, and dynamo's recompile
    # limit would otherwise silently fall back to eager after a handful of cases.
    torch.compiler.reset()

    def call(*args: Any, **kwargs: Any) -> Any:
        return op(*args, **kwargs)

    return torch.compile(call, backend=backend, fullgraph=False)


def _check_errors(expected: ErrorSpec, reference: _Outcome, candidate: _Outcome, backend: str) -> str | None:
    want = f"{expected.type} matching {expected.match!r}"
    problems = []
    for label, outcome in (("CPU eager reference", reference), (f"backend {backend}", candidate)):
        if outcome.error is None:
            problems.append(f"{label} returned normally; expected {want}")
        elif not _error_matches(outcome.error, expected):
            problems.append(f"{label} raised {_describe(outcome.error)}; expected {want}")
    return "; ".join(problems) or None


def _error_matches(error: BaseException, expected: ErrorSpec) -> bool:
    """torch.compile wraps op errors (e.g. TorchRuntimeError), so the cause chain is searched."""
    kind = getattr(builtins, expected.type)
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, kind) and expected.match in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _describe(error: BaseException) -> str:
    first = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {first[:300]}"


def compare(expected: Any, actual: Any, case: CaseSpec) -> CaseResult:
    """Compare outputs leaf by leaf: values with the case's rtol/atol, or metadata only."""
    try:
        pairs = list(_pairs(expected, actual, "output"))
    except _StructureMismatch as exc:
        return CaseResult(None, None, str(exc))
    if case.compare == "metadata":
        problems = [p for path, e, a in pairs if (p := _metadata_problem(path, e, a))]
        return CaseResult(None, None, "\n".join(problems) or None)
    max_abs = max_rel = 0.0
    problems = []
    for path, exp, act in pairs:
        if isinstance(exp, (torch.Tensor, *_NUMBER)):
            abs_err, rel_err = max_errors(exp, act)
            max_abs, max_rel = max(max_abs, abs_err), max(max_rel, rel_err)
            try:
                torch.testing.assert_close(
                    act,
                    exp,
                    rtol=case.rtol,
                    atol=case.atol,
                    equal_nan=True,
                    check_device=False,
                    check_stride=False,
                )
            except AssertionError as exc:
                problems.append(f"{path}: {exc}")
        elif exp != act:
            problems.append(f"{path}: expected {exp!r}, got {act!r}")
    return CaseResult(max_abs, max_rel, "\n".join(problems) or None)


class _StructureMismatch(Exception):
    pass


def _pairs(expected: Any, actual: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise _StructureMismatch(f"{path}: expected a sequence of {len(expected)}, got {_kind(actual)}")
        for index, (e, a) in enumerate(zip(expected, actual)):
            yield from _pairs(e, a, f"{path}[{index}]")
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or actual.keys() != expected.keys():
            raise _StructureMismatch(
                f"{path}: expected a dict with keys {sorted(expected)}, got {_kind(actual)}"
            )
        for key in expected:
            yield from _pairs(expected[key], actual[key], f"{path}[{key!r}]")
    else:
        yield path, expected, actual


def _kind(value: Any) -> str:
    return (
        f"{type(value).__name__} of {len(value)}"
        if isinstance(value, (list, tuple, dict))
        else type(value).__name__
    )


def _metadata_problem(path: str, expected: Any, actual: Any) -> str | None:
    if not isinstance(expected, torch.Tensor):
        same = type(expected) is type(actual)
        return None if same else f"{path}: expected {type(expected).__name__}, got {type(actual).__name__}"
    if not isinstance(actual, torch.Tensor):
        return f"{path}: expected a tensor, got {type(actual).__name__}"
    for what in ("shape", "dtype", "stride"):
        want = getattr(expected, what)
        got = getattr(actual, what)
        want, got = (want(), got()) if what == "stride" else (want, got)
        if want != got:
            return f"{path}: {what} differs: expected {want}, got {got}"
    return None


def max_errors(expected: Any, actual: Any) -> tuple[float, float]:
    """Largest absolute and relative element-wise difference, computed in float64/complex128.

    Equal values (including both-NaN and equal infinities) count as 0; a NaN on one side only,
    or a difference where the reference is 0, counts as inf, so drift is never hidden.
    """
    exp = torch.as_tensor(expected).detach().cpu()
    act = torch.as_tensor(actual).detach().cpu() if isinstance(actual, (torch.Tensor, *_NUMBER)) else None
    if act is None or exp.shape != act.shape:
        return float("inf"), float("inf")
    if exp.numel() == 0:
        return 0.0, 0.0
    wide = torch.complex128 if exp.is_complex() or act.is_complex() else torch.float64
    e, a = exp.to(wide), act.to(wide)
    same = (e == a) | (torch.isnan(e) & torch.isnan(a))
    diff = torch.where(same, 0.0, (a - e).abs()).nan_to_num(nan=math.inf, posinf=math.inf)
    rel = torch.where(diff == 0, 0.0, diff / e.abs()).nan_to_num(nan=math.inf, posinf=math.inf)
    return float(diff.max()), float(rel.max())

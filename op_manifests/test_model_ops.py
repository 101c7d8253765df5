"""The op-manifest test: one instance per planned case (see conftest.pytest_generate_tests).

Run as `pytest op_manifests [--model NAME] [--compile-backend NAME] [-k CASE_OR_OP]`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from op_manifests.plan import PlannedCase, Settings

pytestmark = pytest.mark.op_manifest  # selects every generated test: `-m op_manifest`


def test_op(
    manifest_case: PlannedCase,
    op_manifest_settings: Settings,
    record_property: Callable[[str, object], None],
) -> None:
    if manifest_case.error is not None:
        pytest.fail(manifest_case.error, pytrace=False)
    # Imported here, not at module level: collecting 10,000 cases must not pay torch's import.
    from op_manifests import runner

    case = manifest_case.case
    assert case is not None
    try:
        result = runner.run_case(case, op_manifest_settings.backend, op_manifest_settings.limits)
    except runner.CaseError as exc:
        pytest.fail(str(exc), pytrace=False)
    if result.max_abs_err is not None:
        record_property("max_abs_err", result.max_abs_err)
        record_property("max_rel_err", result.max_rel_err)
    if result.mismatch is not None:
        context = f"{case.where}: case '{case.name}' ({case.op}, backend {op_manifest_settings.backend})"
        pytest.fail(f"{context}: {result.mismatch}", pytrace=False)

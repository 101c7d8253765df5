"""The `export` stage's checks can fail: an exported program that computes other numbers than
eager, one that captured no operator, and an export that fails all fail the test
(harness/torch_suites/export/exportchecks.py). Run in-process with this interpreter's torch."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_utils import TestCase

from harness.torch_suites.compiled.compilechecks import module_wrapper
from harness.torch_suites.export.exportchecks import EmptyExport, ExportMode, check_exported, draws_random

pytestmark = pytest.mark.integration


class Case(TestCase):
    def runTest(self) -> None:
        pass


def honest(x: torch.Tensor) -> torch.Tensor:
    return x.sin() * 2 + x


def exporting_differs(x: torch.Tensor) -> torch.Tensor:
    return honest(x) * (2 if torch.compiler.is_exporting() else 1)  # traced code that is not eager's


@pytest.mark.parametrize("mode", list(ExportMode))
def test_an_exported_program_must_compute_eagers_numbers(mode):
    x = torch.randn(3, 4)
    check_exported(Case(), module_wrapper(honest), (x,), {}, mode)
    with pytest.raises(AssertionError, match="not close"):
        check_exported(Case(), module_wrapper(exporting_differs), (x,), {}, mode)


@pytest.mark.parametrize("mode", list(ExportMode))
def test_a_program_that_captured_no_operator_proves_nothing(mode):
    with pytest.raises(EmptyExport, match="captured no operator"):
        check_exported(Case(), module_wrapper(lambda x: x), (torch.randn(3),), {}, mode)


def test_strict_export_fails_where_dynamo_cannot_capture_the_forward():
    def breaks(x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()  # strict export must capture the whole forward in one graph
        return x.sin()

    with pytest.raises(torch._dynamo.exc.Unsupported, match="graph_break"):
        check_exported(Case(), module_wrapper(breaks), (torch.randn(3),), {}, ExportMode.STRICT)
    check_exported(Case(), module_wrapper(breaks), (torch.randn(3),), {}, ExportMode.NON_STRICT)  # Python runs


def test_random_results_are_compared_by_metadata_only():
    assert draws_random(torch.randn_like, torch.ones(3)) and not draws_random(torch.sin, torch.ones(3))

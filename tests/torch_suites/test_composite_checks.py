"""TestCompositeCompliance.test_operator's body (harness/torch_suites/eager/opchecks.py) compares with
eager exactly where eager agrees with itself, and only shapes and dtypes where an op returns
uninitialized memory: `empty` is never a false regression (breadth shard 8 had one under the JIT,
where the allocator hands back other blocks), while a wrong shape still fails. Run in-process with
this interpreter's torch, on ops of our own shaped as OpInfos and on op_db's own `empty`."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
from torch.testing._internal import composite_compliance
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import SampleInput

from harness.torch_suites.shared.determinism import deterministic
from harness.torch_suites.eager.opchecks import composite_operator
from tests.torch_suites import test_transform_checks as shaped  # its OpInfo-shaped op and TestCase instance

pytestmark = pytest.mark.integration


def op_like(function: Any) -> shaped.OpLike:
    """An OpInfo's shape, as the check reads it: one sample of one float tensor."""
    def sample_inputs(device: str, dtype: torch.dtype, requires_grad: bool = False) -> list[SampleInput]:
        return [SampleInput(torch.randn(3, 4, device=device, dtype=dtype, requires_grad=requires_grad))]

    return shaped.OpLike(op=function, sample_inputs=sample_inputs)


def garbage() -> Any:
    """Other values on every call, as the memory `empty_like` returns can hold."""
    calls = itertools.count()
    return lambda x: torch.full_like(x, float(next(calls)))


def test_an_op_returning_other_garbage_each_call_passes_on_shapes_and_dtypes() -> None:
    op = op_like(garbage())
    composite_operator(shaped.Case(), "cpu", torch.float32, op)
    sample = op.sample_inputs("cpu", torch.float32)[0]
    with pytest.raises(AssertionError, match="not close|not equal"):  # what PyTorch's own body does with it
        composite_compliance.check_with_mode(op, [sample.input], {}, shaped.Case().assertEqual)


def test_blocks_that_hold_an_earlier_fill_are_taken_for_uninitialized_memory() -> None:
    """Seen in the harness's own suite: `empty` returned NaN in both plain runs and under the fill
    (the allocator handed back blocks an earlier fill had written), then 0.0 in the compared run."""
    calls = itertools.count()

    def earlier_fill_then_zeros(x: torch.Tensor) -> torch.Tensor:
        return torch.full_like(x, float("nan")) if next(calls) < 3 else torch.zeros_like(x)

    composite_operator(shaped.Case(), "cpu", torch.float32, op_like(earlier_fill_then_zeros))
    assert deterministic(torch.abs, torch.randn(3)) and not deterministic(torch.full_like, torch.ones(3), float("nan"))
    assert not deterministic(torch.full_like, torch.ones(3, dtype=torch.int64), torch.iinfo(torch.int64).max)


def test_a_shape_that_changes_between_calls_still_fails() -> None:
    calls = itertools.count()
    op = op_like(lambda x: x.new_zeros(next(calls) + 1))
    with pytest.raises(AssertionError):
        composite_operator(shaped.Case(), "cpu", torch.float32, op)


def test_a_deterministic_op_is_compared_by_value() -> None:
    def differs_under_the_mode(x: torch.Tensor) -> torch.Tensor:  # eager agrees with itself; a wrapped input does not
        return x * 2 if type(x) is torch.Tensor else x * 3

    with pytest.raises(AssertionError, match="not close|not equal"):
        composite_operator(shaped.Case(), "cpu", torch.float32, op_like(differs_under_the_mode))


def test_op_dbs_empty_passes() -> None:
    (empty,) = [op for op in op_db if op.name == "empty" and not op.variant_test_name]
    composite_operator(shaped.Case(), "cpu", torch.float32, empty)

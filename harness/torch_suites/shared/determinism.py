"""Whether eager agrees with itself on a call, and comparing with eager accordingly: values under
the test's tolerances where it does, only shapes and dtypes where it cannot (uninitialized memory
from `empty`-like ops). Shared by every check that compares a transformed run (torch.compile,
export, vmap, PyTorch's composite-compliance mode) with eager, so such an op is never a false
regression in one of them and an exact comparison in another."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.testing._internal.common_utils import TestCase, freeze_rng_state
from torch.utils._pytree import tree_flatten


def seeded(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)` from the same RNG state every time, so random ops agree."""
    with freeze_rng_state():
        torch.manual_seed(0)
        return function(*args, **kwargs)


def deterministic(function: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Whether eager agrees with itself (from one RNG state) on these inputs, also when PyTorch
    fills uninitialized memory: ops that return it (`empty_like`, `new_empty_strided`) do not, and
    only their metadata is compared. Two plain runs alone can agree by chance (the allocator hands
    back the same block twice), then differ from a vmapped or compiled run: a false regression. So
    can all three, when the blocks handed back hold an earlier fill: an output that is nothing but
    PyTorch's fill is taken for uninitialized memory (an op whose real output is all NaN loses only
    a NaN-to-NaN comparison)."""
    first, second = seeded(function, *args, **kwargs), seeded(function, *args, **kwargs)
    with filling_uninitialized_memory():
        filled = seeded(function, *args, **kwargs)
    return _agree(first, second) and _agree(first, filled) and not _only_fill(filled)


@contextmanager
def filling_uninitialized_memory() -> Iterator[None]:
    """PyTorch's deterministic mode, which fills the memory `empty`-like ops return (NaN, or the
    integer type's largest value); warnings only, for ops without a deterministic kernel."""
    enabled, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


def _only_fill(value: Any) -> bool:
    """Whether some tensor of `value` holds nothing but what PyTorch's deterministic mode writes into
    uninitialized memory: NaN in floating and complex types, the largest value in integer types."""
    for leaf in tree_flatten(value)[0]:
        if not isinstance(leaf, torch.Tensor) or leaf.numel() == 0 or leaf.dtype == torch.bool:
            continue
        if leaf.is_floating_point() or leaf.is_complex():
            if bool(torch.isnan(leaf).all()):
                return True
        elif bool((leaf == torch.iinfo(leaf.dtype).max).all()):
            return True
    return False


def _agree(first: Any, second: Any) -> bool:
    try:
        torch.testing.assert_close(first, second, equal_nan=True, check_dtype=False)
    except (AssertionError, TypeError, RuntimeError, ValueError):
        return False
    return True


def assert_same(case: TestCase, actual: Any, expected: Any, exact: bool) -> None:
    """Values under the test's tolerances, or only shapes and dtypes where eager is not exact."""
    if exact:
        case.assertEqual(actual, expected, exact_device=True)
        return
    actual_leaves, expected_leaves = tree_flatten(actual)[0], tree_flatten(expected)[0]
    case.assertEqual(len(actual_leaves), len(expected_leaves))
    for got, want in zip(actual_leaves, expected_leaves):
        if isinstance(want, torch.Tensor):
            case.assertEqual((got.shape, got.dtype), (want.shape, want.dtype))

"""The bodies of PyTorch's checks of its Python references (`torch._refs`, the `python_ref_db`
entries of `test/test_ops.py`'s TestCommon) and of error inputs (test_errors and its fake-tensor
twin for references), written in our own code against the OpInfo API and the wheel's
`torch._prims_common`, `torch._prims.context` and `torch._subclasses`; the modules of tier
breadth keep PyTorch's class and test names so each entry's decorations apply.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import partial

import torch
import torch._prims_common as prims_common
import torch.utils._pytree as pytree
from torch._prims.context import TorchRefsMode
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.testing._internal.common_utils import TestCase

NO_FAKE_RESULT = (fake_tensor.UnsupportedFakeTensorException, fake_tensor.DataDependentOutputException,
                  fake_tensor.UnsupportedOperatorException)  # the fake mode declines: nothing to compare
CONJ_UNCHECKED = frozenset({torch._refs.linalg.svd})  # its conjugate bit is not modelled by its meta
Context = Callable[[], contextlib.AbstractContextManager]


def strict_refs() -> contextlib.AbstractContextManager:
    """test_python_ref's context: `torch.foo` calls inside a reference run `torch._refs.foo`."""
    return TorchRefsMode(strict=True)


def python_ref(case: TestCase, device: str, dtype: torch.dtype, op, context: Context = contextlib.nullcontext) -> None:
    """test_python_ref (strict_refs) and test_python_ref_torch_fallback (no context): on every
    reference input the reference and its torch operator agree in metadata (and in being a view,
    unless the entry opts out) and in value; where values differ in a low-precision dtype, the
    reference must be at least as close as the operator to the operator run in a precise dtype."""
    inaccurate = False
    for sample in op.reference_inputs(device, dtype, requires_grad=False):
        with context():
            ours = op(sample.input, *sample.args, **sample.kwargs)
        theirs = op.torch_opinfo(sample.input, *sample.args, **sample.kwargs)
        for got, want in _tensor_pairs(ours, theirs):
            prims_common.compare_tensor_meta(got, want)
            if getattr(op, "validate_view_consistency", True):
                case.assertEqual(got._is_view(), want._is_view(), "the reference and the operator differ in viewing")
        try:
            case.assertEqual(ours, theirs, exact_stride=False, exact_device=True, exact_layout=True,
                             exact_is_coalesced=True)
        except AssertionError:
            precise = _precise(dtype)
            if precise is dtype:
                raise
            inaccurate = True
            _reference_closer(case, op, sample, dtype, precise, ours, theirs)
    if inaccurate:
        warnings.warn("Passed: where the reference and the operator differ, the reference is the more accurate.")


def _tensor_pairs(ours, theirs) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    for got, want in zip(pytree.tree_leaves(ours), pytree.tree_leaves(theirs)):
        if isinstance(got, torch.Tensor) or isinstance(want, torch.Tensor):
            yield got, want


def _precise(dtype: torch.dtype) -> torch.dtype:
    """The dtype a more precise result is computed in: float64, complex128, or the dtype itself."""
    if dtype.is_complex:
        return torch.cdouble
    return torch.double if dtype.is_floating_point else dtype


def _reference_closer(case: TestCase, op, sample, dtype: torch.dtype, precise: torch.dtype, ours, theirs) -> None:
    def more_precise(x):
        if isinstance(x, torch.dtype):
            return precise
        return x.to(precise) if isinstance(x, torch.Tensor) and x.dtype is dtype else x

    exact = sample.transform(more_precise)
    truth = op.torch_opinfo(exact.input, *exact.args, **exact.kwargs)
    ours_off, theirs_off = _distance(ours, truth), _distance(theirs, truth)
    case.assertTrue(ours_off <= theirs_off, msg=f"the reference is farther ({ours_off}) from the precise result "
                                                f"than the operator ({theirs_off})")


def _distance(result, truth):
    """The summed absolute error of `result` against `truth` (NaN against NaN is no error)."""
    total = 0
    for got, want in zip(pytree.tree_leaves(result), pytree.tree_leaves(truth)):
        if got.dtype is torch.bool:
            total = total + (got ^ want).sum()
            continue
        same = got == want
        if got.dtype.is_floating_point or got.dtype.is_complex:
            same = same | (got.isnan() & want.isnan())
        total = total + torch.where(same, 0, (got - want).abs()).sum()
    return total


def traced(op):
    """The entry with its reference traced by `torch._prims.executor` and run by ATen
    (test_python_ref_executor, which PyTorch runs on CUDA only)."""
    from torch._prims.executor import make_traced

    op = copy.copy(op)
    op.op = partial(make_traced(op.op), executor="aten")
    return op


def _faked(mode: FakeTensorMode):
    return lambda x: FakeTensor.from_tensor(x, mode) if isinstance(x, torch.Tensor) else x


def python_ref_meta(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_python_ref_meta: the reference run on fake tensors gives fake results with the real
    results' metadata (shape, strides, dtype, device, conjugate bit)."""
    mode = FakeTensorMode()
    for sample in op.reference_inputs(device, dtype, requires_grad=False):
        real = op(sample.input, *sample.args, **sample.kwargs)
        fake = sample.transform(_faked(mode))
        try:
            with mode:
                meta = op(fake.input, *fake.args, **fake.kwargs)
        except NO_FAKE_RESULT:
            continue
        pairs = [(real, meta)] if isinstance(real, torch.Tensor) else zip(real, meta) if isinstance(real, Sequence) else []
        for want, got in pairs:
            if isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor):
                case.assertIsInstance(got, FakeTensor)
                prims_common.compare_tensor_meta(want, got, check_conj=op.op not in CONJ_UNCHECKED)


def errors(case: TestCase, device: str, op, *, fake: bool = False) -> None:
    """test_errors (fake=False) and test_python_ref_errors (on fake tensors): every error input
    raises its error type with its message, and never returns NotImplemented."""
    transform = _faked(FakeTensorMode()) if fake else (lambda x: x)
    for error in op.error_inputs(device):
        sample = error.sample_input.transform(transform)
        with case.assertRaisesRegex(error.error_type, error.error_regex):
            result = op(sample.input, *sample.args, **sample.kwargs)
            case.assertIsNot(result, NotImplemented)

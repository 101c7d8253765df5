"""The bodies of PyTorch's `out=` checks (TestCommon.test_out and test_out_warning of
`test/test_ops.py`), written in our own code against the OpInfo API, shared by tier P1's
p1/test_ops_out.py (`op_db`) and tier breadth's test_ops_refs.py (`python_ref_db`); see
p1/test_ops_out.py for what each checks.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator
from functools import partial

import torch
from torch._prims_common.wrappers import _maybe_remove_out_wrapper
from torch.testing import make_tensor
from torch.testing._internal.common_dtype import floating_and_complex_types_and
from torch.testing._internal.common_utils import TestCase, is_iterable_of_tensors

RESIZE_WARNING = "An output with one or more elements"
INEXACT = floating_and_complex_types_and(torch.float16, torch.bfloat16)
RAISE_TYPE_ERROR = frozenset({"_chunk_cat", "cat", "column_stack", "dstack", "hstack", "vstack", "stack"})


def _each(transform, result):
    """Apply `transform` to a tensor result or to each tensor of a tuple result."""
    return transform(result) if isinstance(result, torch.Tensor) else tuple(map(transform, result))


def _tensors(result) -> tuple[torch.Tensor, ...]:
    return (result,) if isinstance(result, torch.Tensor) else tuple(result)


def _filled(t: torch.Tensor) -> torch.Tensor:
    """Values an out= argument must not leak into the result: NaN, or the integer maximum."""
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return torch.full_like(t, float("nan"))
    return torch.full_like(t, torch.iinfo(t.dtype).max if t.dtype != torch.bool else True)


def _noncontiguous(t: torch.Tensor) -> torch.Tensor:
    return make_tensor(t.shape, dtype=t.dtype, device=t.device, noncontiguous=True)


def _empty(t: torch.Tensor) -> torch.Tensor:
    return make_tensor((0,), dtype=t.dtype, device=t.device)


def _as_long(t: torch.Tensor) -> torch.Tensor:
    return make_tensor(t.shape, dtype=torch.long, device=t.device)


def _wrong_shape(t: torch.Tensor) -> torch.Tensor:
    shape = list(t.shape) or [1]
    shape[-1] += 1
    return make_tensor(shape, dtype=t.dtype, device=t.device)



def _without_out_wrapper(op):
    """An entry that claims no `out=`, with its function's generic `out=` wrapper removed (a
    Python reference's decorator would otherwise accept `out=` for it)."""
    if op.supports_out:
        return op
    op = copy.copy(op)
    op.op = _maybe_remove_out_wrapper(op.op)
    return op


def _samples_with_outputs(case: TestCase, op, device: str, dtype: torch.dtype) -> Iterator[tuple]:
    """(sample, expected result, call with out=) for each sample, or a skip for non-tensor results."""
    for sample in op.sample_inputs(device, dtype):
        expected = op(sample.input, *sample.args, **sample.kwargs)
        if not isinstance(expected, torch.Tensor) and not is_iterable_of_tensors(expected, include_empty=True):
            case.skipTest("Skipped! Only supports single tensor or iterable of tensor outputs.")
        yield sample, expected, partial(op, sample.input, *sample.args, **sample.kwargs)


def _refuses_out(case: TestCase, call: Callable, expected) -> None:
    with case.assertRaises(Exception, msg="the op claims no out= support but accepted out="):
        assert call(out=expected) is not NotImplemented


def _writes_into(case: TestCase, call: Callable, expected, out, *, same_storage: bool) -> None:
    strides = [t.stride() for t in _tensors(out)]
    pointers = [t.data_ptr() for t in _tensors(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call(out=out)
    case.assertEqual(out, expected)
    if same_storage:
        case.assertEqual([t.stride() for t in _tensors(out)], strides, msg="out= strides changed")
        case.assertEqual([t.data_ptr() for t in _tensors(out)], pointers, msg="out= storage changed")


def out(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_out: see p1/test_ops_out.py."""
    op = _without_out_wrapper(op)
    for sample, expected, call in _samples_with_outputs(case, op, device, dtype):
        if not op.supports_out:
            _refuses_out(case, call, expected)
            return
        _writes_into(case, call, expected, _each(_filled, expected), same_storage=True)
        _writes_into(case, call, expected, _each(_noncontiguous, expected), same_storage=True)
        _writes_into(case, call, expected, _each(_empty, expected), same_storage=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(out=_each(_empty, expected))
        case.assertFalse([w for w in caught if RESIZE_WARNING in str(w.message)],
                         "resizing an empty out= warned about resizing")
        if any(t.dtype in INEXACT for t in _tensors(expected)):
            as_long = _each(_as_long, expected)
            if op.is_factory_function and sample.kwargs.get("dtype") is None:
                call(out=as_long)
            else:
                refused = TypeError if op.name in RAISE_TYPE_ERROR else RuntimeError
                with case.assertRaises(refused, msg="an unsafe cast into an int64 out= was accepted"):
                    call(out=as_long)


def out_warning(case: TestCase, device: str, op) -> None:
    """test_out_warning: see p1/test_ops_out.py."""
    supported = op.supported_dtypes(case.device_type)
    if not supported:
        case.skipTest("Skipped! Op has not supported dtypes on this device.")
    dtype = torch.float32 if torch.float32 in supported else next(iter(supported))
    op = _without_out_wrapper(op)
    for _sample, expected, call in _samples_with_outputs(case, op, device, dtype):
        if not op.supports_out:
            _refuses_out(case, call, expected)
            return
        _writes_into(case, call, expected, _each(_wrong_shape, expected), same_storage=False)
        wrong = _each(_wrong_shape, expected)
        if any(t.numel() > 0 for t in _tensors(wrong)):
            with case.assertWarnsRegex(UserWarning, RESIZE_WARNING, msg="a non-empty out= was resized silently"):
                call(out=wrong)

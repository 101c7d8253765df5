"""PyTorch's `out=` checks on `op_db` (CPU, one dtype per op: float32 where the op supports it).

The checks are the ones PyTorch's `test/test_ops.py` makes under the same names, written here in
our own code against the OpInfo API, so the class is `TestCommon` and the tests `test_out` and
`test_out_warning`: each OpInfo's skips and expected failures for those names apply. Like
PyTorch, `test_out` runs one supported dtype per op (`OpDTypes.any_one`: float32 first) and
`test_out_warning` float32 or the op's first supported dtype. PyTorch also runs both on
`python_ref_db`; we run `op_db` only.

For every sample input of an op that claims `supports_out`:
- test_out: `out=` filled with NaN (or the integer maximum) gives the function's result and keeps
  its strides and storage; a non-contiguous `out=` likewise; an empty `out=` is resized without the
  "An output with one or more elements" warning; an int64 `out=` for a floating-point result is
  refused (unless the op is a factory function called without a dtype). The wrong-device case is
  PyTorch's too, but PyTorch makes it only off CPU.
- test_out_warning: a non-empty `out=` of the wrong shape gives the right values, with the warning.
An op that claims no `out=` support must refuse `out=`.
"""

import warnings
from functools import partial

import torch
from torch.testing import make_tensor
from torch.testing._internal.common_device_type import OpDTypes, ops
from torch.testing._internal.common_dtype import floating_and_complex_types_and
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, is_iterable_of_tensors, run_tests

from harness.torch_suites.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries(op_db)
OPS = ENTRIES.chosen()
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


class TestCommon(TestCase):
    exact_dtype = True

    def _samples_with_outputs(self, op, device, dtype):
        """(sample, expected result, call with out=) for each sample, or a skip for non-tensor results."""
        for sample in op.sample_inputs(device, dtype):
            expected = op(sample.input, *sample.args, **sample.kwargs)
            if not isinstance(expected, torch.Tensor) and not is_iterable_of_tensors(expected, include_empty=True):
                self.skipTest("Skipped! Only supports single tensor or iterable of tensor outputs.")
            yield sample, expected, partial(op, sample.input, *sample.args, **sample.kwargs)

    def _refuses_out(self, call, expected) -> None:
        with self.assertRaises(Exception, msg="the op claims no out= support but accepted out="):
            assert call(out=expected) is not NotImplemented

    def _writes_into(self, call, expected, out, *, same_storage: bool) -> None:
        strides = [t.stride() for t in _tensors(out)]
        pointers = [t.data_ptr() for t in _tensors(out)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(out=out)
        self.assertEqual(out, expected)
        if same_storage:
            self.assertEqual([t.stride() for t in _tensors(out)], strides, msg="out= strides changed")
            self.assertEqual([t.data_ptr() for t in _tensors(out)], pointers, msg="out= storage changed")

    @ops(OPS, dtypes=OpDTypes.any_one)
    def test_out(self, device, dtype, op):
        for sample, expected, call in self._samples_with_outputs(op, device, dtype):
            if not op.supports_out:
                self._refuses_out(call, expected)
                return
            self._writes_into(call, expected, _each(_filled, expected), same_storage=True)
            self._writes_into(call, expected, _each(_noncontiguous, expected), same_storage=True)
            self._writes_into(call, expected, _each(_empty, expected), same_storage=False)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call(out=_each(_empty, expected))
            self.assertFalse([w for w in caught if RESIZE_WARNING in str(w.message)],
                             "resizing an empty out= warned about resizing")
            if any(t.dtype in INEXACT for t in _tensors(expected)):
                as_long = _each(_as_long, expected)
                if op.is_factory_function and sample.kwargs.get("dtype") is None:
                    call(out=as_long)
                else:
                    refused = TypeError if op.name in RAISE_TYPE_ERROR else RuntimeError
                    with self.assertRaises(refused, msg="an unsafe cast into an int64 out= was accepted"):
                        call(out=as_long)

    @ops(OPS, dtypes=OpDTypes.none)
    def test_out_warning(self, device, op):
        supported = op.supported_dtypes(self.device_type)
        if not supported:
            self.skipTest("Skipped! Op has not supported dtypes on this device.")
        dtype = torch.float32 if torch.float32 in supported else next(iter(supported))
        for _sample, expected, call in self._samples_with_outputs(op, device, dtype):
            if not op.supports_out:
                self._refuses_out(call, expected)
                return
            self._writes_into(call, expected, _each(_wrong_shape, expected), same_storage=False)
            out = _each(_wrong_shape, expected)
            if any(t.numel() > 0 for t in _tensors(out)):
                with self.assertWarnsRegex(UserWarning, RESIZE_WARNING, msg="a non-empty out= was resized silently"):
                    call(out=out)


instantiate_cpu_tests(TestCommon, globals(), OPS)

if __name__ == "__main__":
    run_tests()

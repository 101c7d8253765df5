"""PyTorch's reference checks on `op_db`: an op's results against its NumPy reference (`op.ref`).

Three checks, each the one PyTorch makes under the same class and test name, written here in our
own code against the OpInfo API, so every OpInfo's skips, expected failures and tolerance
overrides for that name apply:

- TestCommon.test_numpy_ref (`test/test_ops.py`): every reference input of an op with a `ref` that
  is not a unary or binary ufunc, reduction or spectral op is compared with the reference, in
  float64 with float64 as the default dtype. PyTorch also runs int64 and complex128; we run
  float64 (tier breadth runs all three; body in opchecks.py). (PyTorch's current test_ops.py
  skips this test on CPU; the check and its OpInfo decorations are unchanged, so we run it on CPU
  as PyTorch did before.)
- TestUnaryUfuncs.test_reference_numerics_normal (`test/test_unary_ufuncs.py`): unary ufuncs
  with a reference, on `generate_elementwise_unary_tensors` (empty, 1-D and a large 2-D tensor),
  float32 (PyTorch runs every supported dtype).
- TestBinaryUfuncs.test_reference_numerics (`test/test_binary_ufuncs.py`): binary ufuncs with a
  reference, on `generate_elementwise_binary_tensors`, float32.

Reductions and spectral ops have references too, but PyTorch compares them through their own
conventions (test_reductions.py, test_spectral_ops.py); compared naively they fail by design, so
they are not run here. References that need SciPy are unavailable without it (see
docs/torch_suites.md for the one such failure, `nn.functional.pdist`).
"""

from numbers import Number

import numpy as np
import torch
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_methods_invocations import (
    BinaryUfuncInfo,
    UnaryUfuncInfo,
    generate_elementwise_binary_tensors,
    generate_elementwise_unary_tensors,
    op_db,
)
from torch.testing._internal.common_utils import (
    TestCase,
    numpy_to_torch_dtype_dict,
    run_tests,
    suppress_warnings,
    torch_to_numpy_dtype_dict,
)

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries(op for op in op_db if op.ref is not None)
OPS = ENTRIES.chosen()
GENERAL = opchecks.numpy_ref_ops(OPS)
UNARY = [op for op in OPS if isinstance(op, UnaryUfuncInfo)]
BINARY = [op for op in OPS if isinstance(op, BinaryUfuncInfo)]


class TestCommon(TestCase):
    exact_dtype = True

    @suppress_warnings
    @ops(GENERAL, allowed_dtypes=(torch.float64,))
    def test_numpy_ref(self, device, dtype, op):
        opchecks.numpy_ref(self, device, dtype, op)


class ReferenceNumerics(TestCase):
    """Compares an elementwise op's tensor result with its reference's NumPy result."""

    exact_dtype = True

    def assert_matches_reference(self, dtype, actual, expected) -> None:
        if not isinstance(actual, torch.Tensor):  # several outputs
            for one, reference in zip(actual, expected):
                self.assert_matches_reference(dtype, one, reference)
            return
        if isinstance(expected, Number):
            self.assertEqual(actual.item(), expected, equal_nan=True)
            return
        if not isinstance(expected, np.ndarray):
            self.assertEqual(actual, expected, exact_device=False, equal_nan=True)
            return
        if torch.can_cast(numpy_to_torch_dtype_dict[expected.dtype.type], dtype):
            same = expected.dtype == torch_to_numpy_dtype_dict[actual.dtype]
            widened = expected.dtype == np.float32 and actual.dtype in (torch.float16, torch.bfloat16)
            self.assertTrue(same or widened, f"reference dtype {expected.dtype}, result dtype {actual.dtype}")
        self.assertEqual(actual, torch.from_numpy(expected).to(actual.dtype), exact_device=False, equal_nan=True)


class TestUnaryUfuncs(ReferenceNumerics):
    @suppress_warnings
    @ops(UNARY, allowed_dtypes=(torch.float32,))
    def test_reference_numerics_normal(self, device, dtype, op):
        for sample in generate_elementwise_unary_tensors(op, device=device, dtype=dtype, requires_grad=False):
            tensor = sample.input
            torch_kwargs, numpy_kwargs = op.sample_kwargs(tensor.device, dtype, tensor)
            expected = op.ref(tensor.cpu().numpy(), **numpy_kwargs)
            self.assert_matches_reference(dtype, op(tensor, **torch_kwargs), expected)


class TestBinaryUfuncs(ReferenceNumerics):
    @suppress_warnings
    @ops(BINARY, allowed_dtypes=(torch.float32,))
    def test_reference_numerics(self, device, dtype, op):
        for sample in generate_elementwise_binary_tensors(op, device=device, dtype=dtype):
            as_numpy = sample.numpy()
            lhs, rhs = as_numpy.input, as_numpy.args[0]
            expected = op.ref(lhs, rhs)
            if op.name == "sub" and isinstance(lhs, np.ndarray):
                expected = expected.astype(lhs.dtype)  # NumPy 2 promotes differently
            self.assert_matches_reference(dtype, op(sample.input, sample.args[0]), expected)


instantiate_cpu_tests(TestCommon, globals(), GENERAL)
instantiate_cpu_tests(TestUnaryUfuncs, globals(), UNARY)
instantiate_cpu_tests(TestBinaryUfuncs, globals(), BINARY)

if __name__ == "__main__":
    run_tests()

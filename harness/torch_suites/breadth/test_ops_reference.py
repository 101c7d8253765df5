"""PyTorch's NumPy reference check of tier P1's test_ops_reference.py at PyTorch's breadth:
TestCommon.test_numpy_ref in every dtype PyTorch's `test/test_ops.py` runs it in (float64, int64
and complex128, each one the op supports; P1: float64), body in `harness/torch_suites/eager/opchecks.py`.

P1's unary and binary ufunc reference checks (test_reference_numerics*) stay float32: PyTorch runs
them in every supported dtype, with per-dtype rules (low-precision and integer dtypes computed by
NumPy in other types, compared with their own tolerances) that are not ported yet.
"""

import torch
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests, suppress_warnings

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries(opchecks.numpy_ref_ops(op_db))
OPS = ENTRIES.chosen()


class TestCommon(TestCase):
    exact_dtype = True

    @suppress_warnings
    @ops(OPS, allowed_dtypes=(torch.float64, torch.long, torch.complex128))
    def test_numpy_ref(self, device, dtype, op):
        opchecks.numpy_ref(self, device, dtype, op)


instantiate_cpu_tests(TestCommon, globals(), OPS)

if __name__ == "__main__":
    run_tests()

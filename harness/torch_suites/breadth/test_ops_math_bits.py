"""PyTorch's math-bit checks: `TestMathBits` of `test/test_ops.py` (CPU) on `op_db` and
`python_ref_db`, as PyTorch runs them.

Conjugation and negation can be lazy: a tensor carries a bit and the math happens when it is read.
Each check gives the op an input whose bit is set on a view over the physically computed values,
and compares with the op on those values (forward, the first input's gradient, and the in-place
variant, which must keep the bit). Bodies in `harness/torch_suites/eager/opchecks.py`, under PyTorch's
class and test names, so each OpInfo's decorations for them apply:
- test_conj_view (complex64): conjugate views;
- test_neg_view (float64): negative views;
- test_neg_conj_view (complex128): both, on the first sample only.
"""

import torch
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_methods_invocations import op_db, python_ref_db
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries([*op_db, *python_ref_db])
OPS = ENTRIES.chosen()


class TestMathBits(TestCase):
    @ops(OPS, allowed_dtypes=(torch.complex64,))
    def test_conj_view(self, device, dtype, op):
        opchecks.conj_view(self, device, dtype, op)

    @ops(OPS, allowed_dtypes=(torch.float64,))
    def test_neg_view(self, device, dtype, op):
        opchecks.neg_view(self, device, dtype, op)

    @ops(OPS, allowed_dtypes=(torch.complex128,))
    def test_neg_conj_view(self, device, dtype, op):
        opchecks.neg_conj_view(self, device, dtype, op)


instantiate_cpu_tests(TestMathBits, globals(), OPS)

if __name__ == "__main__":
    run_tests()

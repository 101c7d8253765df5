"""PyTorch's backward gradient checks at PyTorch's breadth: `TestBwdGradients` of
`test/test_ops_gradients.py` (CPU, float64 and complex128: every one of them the entry supports).

Tier P1 runs test_fn_grad in float64 only; this module runs PyTorch's four gradient checks of the
class under their names (bodies in `harness/torch_suites/opchecks.py`, through PyTorch's own
`TestGradients` helpers in the wheel), so each OpInfo's decorations for them apply:
- test_fn_grad: gradcheck of the function variant (with the op's batched-gradient, fast-mode and
  nondeterminism settings);
- test_fn_gradgrad: gradgradcheck of the function variant, where the op claims second order;
- test_inplace_grad: gradcheck of the in-place variant; an op claiming no in-place autograd must
  refuse a backward pass through it;
- test_inplace_gradgrad: gradgradcheck of the in-place variant.
On `op_db` and `custom_op_db` as PyTorch does, with `hop_db` for the function variant's checks.
"""

from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestGradients, run_tests
from torch.testing._internal.custom_op_db import custom_op_db
from torch.testing._internal.hop_db import hop_db

from harness.torch_suites import opchecks
from harness.torch_suites.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries([*op_db, *hop_db, *custom_op_db])
OPS = ENTRIES.chosen()
WITH_INPLACE = [op for op in OPS if op not in hop_db]


class TestBwdGradients(TestGradients):
    @opchecks.gradient_ops(OPS)
    def test_fn_grad(self, device, dtype, op):
        opchecks.fn_grad(self, device, dtype, op)

    @opchecks.gradient_ops(OPS)
    def test_fn_gradgrad(self, device, dtype, op):
        opchecks.fn_gradgrad(self, device, dtype, op)

    @opchecks.gradient_ops(WITH_INPLACE)
    def test_inplace_grad(self, device, dtype, op):
        opchecks.inplace_grad(self, device, dtype, op)

    @opchecks.gradient_ops(WITH_INPLACE)
    def test_inplace_gradgrad(self, device, dtype, op):
        opchecks.inplace_gradgrad(self, device, dtype, op)


instantiate_cpu_tests(TestBwdGradients, globals(), OPS)

if __name__ == "__main__":
    run_tests()

"""PyTorch's backward gradient checks at PyTorch's breadth: `TestBwdGradients` of
`test/test_ops_gradients.py` (CPU, float64 and complex128: every one of them the entry supports).

Tier P1 runs test_fn_grad in float64 only; this module runs PyTorch's five gradient checks of the
class under their names (bodies in `harness/torch_suites/eager/opchecks.py`, through PyTorch's own
`TestGradients` helpers in the wheel), so each OpInfo's decorations for them apply:
- test_fn_grad: gradcheck of the function variant (with the op's batched-gradient, fast-mode and
  nondeterminism settings);
- test_fn_gradgrad: gradgradcheck of the function variant, where the op claims second order;
- test_fn_fail_gradgrad: an op claiming no second order must refuse it;
- test_inplace_grad: gradcheck of the in-place variant; an op claiming no in-place autograd must
  refuse a backward pass through it;
- test_inplace_gradgrad: gradgradcheck of the in-place variant.
Over the databases PyTorch gives each: `op_db` always, `custom_op_db` but for
test_inplace_gradgrad, `hop_db` for test_fn_grad and test_fn_gradgrad.
"""

from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestGradients, run_tests
from torch.testing._internal.custom_op_db import custom_op_db
from torch.testing._internal.hop_db import hop_db

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries([*op_db, *hop_db, *custom_op_db])
OPS = ENTRIES.chosen()
WITHOUT_HOPS = [op for op in OPS if op not in hop_db]
OP_DB = [op for op in WITHOUT_HOPS if op not in custom_op_db]


class TestBwdGradients(TestGradients):
    @opchecks.gradient_ops(OPS)
    def test_fn_grad(self, device, dtype, op):
        opchecks.fn_grad(self, device, dtype, op)

    @opchecks.gradient_ops(OPS)
    def test_fn_gradgrad(self, device, dtype, op):
        opchecks.fn_gradgrad(self, device, dtype, op)

    @opchecks.gradient_ops(WITHOUT_HOPS)
    def test_fn_fail_gradgrad(self, device, dtype, op):
        opchecks.fn_fail_gradgrad(self, device, dtype, op)

    @opchecks.gradient_ops(WITHOUT_HOPS)
    def test_inplace_grad(self, device, dtype, op):
        opchecks.inplace_grad(self, device, dtype, op)

    @opchecks.gradient_ops(OP_DB)
    def test_inplace_gradgrad(self, device, dtype, op):
        opchecks.inplace_gradgrad(self, device, dtype, op)


instantiate_cpu_tests(TestBwdGradients, globals(), OPS)

if __name__ == "__main__":
    run_tests()

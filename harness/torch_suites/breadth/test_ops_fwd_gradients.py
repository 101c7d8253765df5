"""PyTorch's forward-mode gradient checks at PyTorch's breadth: `TestFwdGradients` of
`test/test_ops_fwd_gradients.py` on `op_db` (CPU, float64 and complex128: every one of them the
entry supports). Tier P1 checks no forward-mode gradient.

PyTorch's three checks of the class under their names (bodies in `harness/torch_suites/eager/opchecks.py`,
through PyTorch's own `TestGradients` helpers in the wheel), so each OpInfo's decorations apply:
- test_forward_mode_AD: forward-mode gradcheck of the function variant (with batched forward
  gradients where the op claims them); an op claiming no forward AD must refuse it;
- test_inplace_forward_mode_AD: the same for the in-place variant, where in-place autograd is claimed;
- test_fn_fwgrad_bwgrad: forward-over-reverse gradgradcheck; an op claiming no support must refuse it.
"""

from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestGradients, run_tests

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries(op_db)
OPS = ENTRIES.chosen()


class TestFwdGradients(TestGradients):
    @opchecks.gradient_ops(OPS)
    def test_forward_mode_AD(self, device, dtype, op):
        opchecks.forward_mode_ad(self, device, dtype, op, inplace=False)

    @opchecks.gradient_ops(OPS)
    def test_inplace_forward_mode_AD(self, device, dtype, op):
        opchecks.forward_mode_ad(self, device, dtype, op, inplace=True)

    @opchecks.gradient_ops(OPS)
    def test_fn_fwgrad_bwgrad(self, device, dtype, op):
        opchecks.fn_fwgrad_bwgrad(self, device, dtype, op)


instantiate_cpu_tests(TestFwdGradients, globals(), OPS)

if __name__ == "__main__":
    run_tests()

"""PyTorch's composite-compliance checks: three tests of `TestCompositeCompliance` in
`test/test_ops.py` on `op_db` (CPU, float32, as PyTorch).

A composite operator (one written in terms of other ATen operators) must work for every backend
and tensor subclass: no reaching into a tensor's storage, no in-place writes into arguments that
might be subclasses, view and metadata consistency. PyTorch's own checker ships in the wheel
(`torch.testing._internal.composite_compliance`): it runs the op with its arguments wrapped, each
subset of them in turn, in a `__torch_dispatch__` subclass that checks every ATen call. Our bodies
call it as PyTorch's do, under PyTorch's class and test names, so each OpInfo's decorations apply:
- test_operator: the op under the checking mode, then with every subset of its arguments wrapped
  (only shapes and dtypes compared where eager disagrees with itself: `empty`'s garbage);
- test_backward: the backward formula, through wrapped inputs and wrapped output gradients;
- test_forward_ad: the forward-mode formula, through wrapped primals and tangents;
- test_cow_input: with its strided inputs lazily cloned (copy-on-write), the forward and backward
  passes write into none of them and materialize none the OpInfo does not allow to;
- test_view_replay: every output that views the input replays, forward and reverse, through its
  view functions (original view tracking on).
test_operator's body and the last two are in `harness/torch_suites/eager/opchecks.py`.
"""

import torch
from torch.testing._internal import composite_compliance
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries(op_db)
OPS = ENTRIES.chosen()
WITH_AUTOGRAD = [op for op in OPS if op.supports_autograd]


class TestCompositeCompliance(TestCase):
    @ops(OPS, allowed_dtypes=(torch.float32,))
    def test_operator(self, device, dtype, op):
        opchecks.composite_operator(self, device, dtype, op)

    @ops(WITH_AUTOGRAD, allowed_dtypes=(torch.float32,))
    def test_backward(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype, requires_grad=True):
            args, kwargs = opchecks.sample_arguments(sample)
            composite_compliance.check_backward_formula(
                op.get_op(), args, kwargs, sample.output_process_fn_grad, op.gradcheck_wrapper, self.assertEqual)

    @ops(OPS, allowed_dtypes=(torch.float32,))
    def test_forward_ad(self, device, dtype, op):
        if not opchecks.backward_in(op, device, dtype):
            self.skipTest("Does not support autograd")
        if not op.supports_forward_ad:
            self.skipTest("Does not support forward_ad")
        for sample in op.sample_inputs(device, dtype, requires_grad=True):
            args, kwargs = opchecks.sample_arguments(sample)
            composite_compliance.check_forward_ad_formula(op.get_op(), args, kwargs, op.gradcheck_wrapper,
                                                          self.assertEqual)

    @ops(OPS, allowed_dtypes=(torch.float32,))
    def test_cow_input(self, device, dtype, op):
        opchecks.cow_input(self, device, dtype, op)

    @ops(OPS, allowed_dtypes=(torch.float32,))
    def test_view_replay(self, device, dtype, op):
        opchecks.view_replay(self, device, dtype, op)


instantiate_cpu_tests(TestCompositeCompliance, globals(), OPS)

if __name__ == "__main__":
    run_tests()

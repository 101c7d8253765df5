"""test_ops.py's two small classes beside its six large ones, under PyTorch's class and test names
(bodies in `harness/torch_suites/eager/opchecks.py`):
- `TestForwardADWithScalars.test_0d_tensor_with_python_scalar` (CPU, float32, on `op_db`'s `add`,
  `mul` and the three `div` entries, as PyTorch's file selects them): forward AD with a Python
  scalar on either side keeps primal and tangent in one dtype;
- `TestSelfKwarg.test_self_kwargs` (not per device, as in PyTorch's file): ATen overloads take their
  `self` argument by keyword; its entry name for `--select` is `self_kwargs`.
"""

import torch
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import Entries, instantiate_cpu_tests

SCALAR_FAMILIES = ("add", "mul", "div")  # the ops PyTorch's test takes from op_db, by name
SELF_KWARGS = "self_kwargs"  # TestSelfKwarg's entry: it runs over no database
ENTRIES = Entries((*(op for op in op_db if op.name in SCALAR_FAMILIES), SELF_KWARGS),
                  full_name=lambda entry: getattr(entry, "full_name", entry),
                  family=lambda entry: getattr(entry, "name", entry))
CHOSEN = ENTRIES.chosen()
OPS = [entry for entry in CHOSEN if entry != SELF_KWARGS]


class TestForwardADWithScalars(TestCase):
    @ops(OPS, allowed_dtypes=(torch.float32,))
    def test_0d_tensor_with_python_scalar(self, device, dtype, op):
        opchecks.forward_ad_with_python_scalar(self, device, dtype, op)


class TestSelfKwarg(TestCase):
    def test_self_kwargs(self):
        opchecks.self_kwargs(self)


instantiate_cpu_tests(TestForwardADWithScalars, globals(), OPS)
if SELF_KWARGS not in CHOSEN:
    del TestSelfKwarg

if __name__ == "__main__":
    run_tests()

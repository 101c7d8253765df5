"""PyTorch's generic module checks on `module_db` (CPU): forward, pickling, non-contiguous inputs
and gradients of every ModuleInfo's module inputs.

The checks are the ones PyTorch's `test/test_modules.py` makes under the same names, written here
in our own code against the ModuleInfo API (bodies in `harness/torch_suites/eager/modulechecks.py`, shared
with tier breadth), so the class is `TestModule` and each ModuleInfo's
skips, expected failures and tolerance overrides for these names apply:

- test_forward (float32): the module built from each constructor input, moved to the dtype, gives
  its reference function's output where the input has one; after `.float()` its floating-point
  parameters and buffers are float32 on the device. PyTorch also runs float64.
- test_repr (float32): `repr()` and `str()` of every constructed module work.
- test_pickle (float32): a module saved with `torch.save` and loaded back gives the same output.
- test_non_contiguous_tensors (float32): outputs, input gradients and parameter gradients are the
  same for contiguous and non-contiguous inputs and output gradients, in all four combinations.
- test_grad (float64): `gradcheck` of the output with respect to inputs, parameters and tensor
  keyword arguments together, then with respect to each parameter and keyword tensor alone.
Modules whose train and eval modes differ run both (`_train_mode` / `_eval_mode`), as in PyTorch.
"""

import torch
from torch.testing._internal.common_modules import module_db, modules
from torch.testing._internal.common_utils import TestCase, gradcheck, run_tests

from harness.torch_suites.eager import modulechecks
from harness.torch_suites.shared.entries import Entries, instantiate_cpu_tests

ENTRIES = Entries(tuple(module_db), full_name=lambda info: info.name)
MODULES = ENTRIES.chosen()


class TestModule(TestCase):
    precision = 1e-5
    rel_tol = 1e-5

    @modules(MODULES, allowed_dtypes=(torch.float32,))
    def test_forward(self, device, dtype, module_info, training):
        modulechecks.forward(self, device, dtype, module_info, training)

    @modules(MODULES, allowed_dtypes=(torch.float32,))
    def test_repr(self, device, dtype, module_info, training):
        modulechecks.repr_(self, device, dtype, module_info, training)

    @modules(MODULES, allowed_dtypes=(torch.float32,))
    def test_pickle(self, device, dtype, module_info, training):
        modulechecks.save_load(self, device, dtype, module_info, training)

    @modules(MODULES, allowed_dtypes=(torch.float32,))
    def test_non_contiguous_tensors(self, device, dtype, module_info, training):
        modulechecks.non_contiguous_tensors(self, device, dtype, module_info, training)

    @modules(MODULES, allowed_dtypes=(torch.float64,))
    def test_grad(self, device, dtype, module_info, training):
        modulechecks.gradients(self, device, dtype, module_info, training, gradcheck)


instantiate_cpu_tests(TestModule, globals(), MODULES)

if __name__ == "__main__":
    run_tests()

"""PyTorch's module checks at PyTorch's breadth: `TestModule` of `test/test_modules.py` on
`module_db` (CPU), every check in every dtype its `@modules` gives (each ModuleInfo's own dtypes:
float32 and float64, and for some float16, bfloat16, complex), without what tier P1 runs.

Bodies in `harness/torch_suites/eager/modulechecks.py` (P1's, and the others written there), under
PyTorch's class and test names so each ModuleInfo's decorations apply:
- test_forward, test_repr, test_non_contiguous_tensors: P1's checks, in the dtypes but float32;
- test_save_load: P1's test_pickle (PyTorch's name since), in the dtypes but float32;
- test_gradgrad (float64, ModuleInfos claiming second order): P1's test_grad with gradgradcheck;
- test_factory_kwargs, test_check_inplace (modules with an `inplace` flag), test_memory_format,
  test_if_train_and_eval_modes_differ (training mode only), test_device_ctx_init, test_errors
  (ModuleInfos with error inputs): every dtype;
- test_to (float32, swapping on and off, with and without gradients) and test_to_empty (float32,
  swapping on and off): non-lazy modules.
PyTorch's test_multiple_device_transfer and test_cpu_gpu_parity are CUDA-only (skipped on CPU), so
they are not written.
"""

import torch
from torch.testing._internal.common_dtype import get_all_dtypes
from torch.testing._internal.common_modules import TrainEvalMode, module_db, modules
from torch.testing._internal.common_utils import TestCase, gradgradcheck, parametrize, run_tests, swap

from harness.torch_suites.eager import modulechecks
from harness.torch_suites.shared.entries import Entries, instantiate_cpu_tests

ENTRIES = Entries(tuple(module_db), full_name=lambda info: info.name)
MODULES = ENTRIES.chosen()
BEYOND_P1 = set(get_all_dtypes(include_complex32=True)) - {torch.float32}  # P1 runs these checks in float32
EAGER = [info for info in MODULES if not info.is_lazy]


class TestModule(TestCase):
    precision = 1e-5
    rel_tol = 1e-5

    @modules(MODULES, allowed_dtypes=BEYOND_P1)
    def test_forward(self, device, dtype, module_info, training):
        modulechecks.forward(self, device, dtype, module_info, training)

    @modules(MODULES, allowed_dtypes=BEYOND_P1)
    def test_repr(self, device, dtype, module_info, training):
        modulechecks.repr_(self, device, dtype, module_info, training)

    @modules(MODULES, allowed_dtypes=BEYOND_P1)
    def test_save_load(self, device, dtype, module_info, training):
        modulechecks.save_load(self, device, dtype, module_info, training)

    @modules(MODULES, allowed_dtypes=BEYOND_P1)
    def test_non_contiguous_tensors(self, device, dtype, module_info, training):
        modulechecks.non_contiguous_tensors(self, device, dtype, module_info, training)

    @modules([info for info in MODULES if info.supports_gradgrad], allowed_dtypes=(torch.float64,))
    def test_gradgrad(self, device, dtype, module_info, training):
        modulechecks.gradients(self, device, dtype, module_info, training, gradgradcheck)

    @modules(MODULES)
    def test_factory_kwargs(self, device, dtype, module_info, training):
        modulechecks.factory_kwargs(self, device, dtype, module_info, training)

    @modules([info for info in MODULES if modulechecks.takes_inplace(info)])
    def test_check_inplace(self, device, dtype, module_info, training):
        modulechecks.check_inplace(self, device, dtype, module_info, training)

    @modules(MODULES)
    def test_memory_format(self, device, dtype, module_info, training):
        modulechecks.memory_format(self, device, dtype, module_info, training)

    @modules(MODULES, train_eval_mode=TrainEvalMode.train_only)
    def test_if_train_and_eval_modes_differ(self, device, dtype, module_info, training):
        modulechecks.train_and_eval_differ(self, device, dtype, module_info, training)

    @modules(MODULES)
    def test_device_ctx_init(self, device, dtype, module_info, training):
        modulechecks.device_ctx_init(self, device, dtype, module_info, training)

    @modules([info for info in MODULES if info.module_error_inputs_func is not None])
    def test_errors(self, device, dtype, module_info, training):
        modulechecks.errors(self, device, dtype, module_info, training)

    @modules(EAGER, allowed_dtypes=(torch.float32,))
    @parametrize("set_grad", [True, False])
    @swap([True, False])
    def test_to(self, device, dtype, module_info, training, set_grad):
        modulechecks.to(self, device, dtype, module_info, training, set_grad)

    @modules(EAGER, allowed_dtypes=(torch.float32,))
    @swap([True, False])
    def test_to_empty(self, device, dtype, module_info, training):
        modulechecks.to_empty(self, device, dtype, module_info, training)


instantiate_cpu_tests(TestModule, globals(), MODULES)

if __name__ == "__main__":
    run_tests()

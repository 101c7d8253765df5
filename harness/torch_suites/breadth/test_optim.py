"""PyTorch's optimizer checks at PyTorch's breadth: `TestOptimRenewed` of `test/test_optim.py` on
`optim_db` (CPU), the checks tier P1 does not run, in the dtypes their `@optims` give.

Bodies in `harness/torch_suites/optim/optimchecks.py`, under PyTorch's class and test names so each
OptimizerInfo's decorations apply (float32 unless said):
- test_optim_infos_do_not_specify_global_cliquey_kwargs;
- test_rosenbrock_sparse (float64; with and without LR schedulers; sparse-capable optimizers);
- test_complex, test_complex_2d (complex64; optimizers supporting complex);
- test_fused_matches_forloop (float64, float32, bfloat16, float16; P1's foreach body with `fused`),
  test_fused_error_on_params_on_meta (fused optimizers);
- test_param_groups_weight_decay, test_param_groups_lr, test_step_is_noop_when_params_have_no_grad,
  test_step_is_noop_for_zero_grads, test_optimizer_can_be_printed, test_state_dict_deterministic
  (parameter names on either side), test_can_load_older_state_dict,
  test_can_load_from_to_named_state_dict, test_save_load_equality_with_weights_only,
  test_load_nontensor_step, the state-dict, load-state-dict and step hook checks,
  test_deepcopy_copies_all_public_attrs, test_second_order_optims_return_consistent_types (closure
  optimizers), test_non_empty_state.
Checks that give an optimizer a 1-D parameter leave out optimizers that take only matrices (Muon),
as P1 does, and test_step_is_noop_for_zero_grads leaves out Muon (it decays by default): PyTorch's
current file adapts its parameters and settings for Muon in code the wheel lacks.
"""

import torch
from torch.testing._internal.common_dtype import floating_types_and
from torch.testing._internal.common_optimizers import optim_db, optims
from torch.testing._internal.common_utils import TestCase, parametrize, run_tests

from harness.torch_suites.optim import optimchecks
from harness.torch_suites.shared.entries import Entries, instantiate_cpu_tests
from harness.torch_suites.optim.optimizers import takes_vectors

ENTRIES = Entries(tuple(optim_db), full_name=lambda info: info.name)
OPTIMIZERS = ENTRIES.chosen()
VECTORS = [info for info in OPTIMIZERS if takes_vectors(info)]  # checks with a 1-D parameter
FUSED = [info for info in OPTIMIZERS if "fused" in info.supported_impls]
COMPLEX = [info for info in OPTIMIZERS if info.supports_complex]
FLOAT32 = [torch.float32]
# Muon decays parameters by default (weight_decay 0.1), so a zero gradient moves them: the check
# allows for AdamW's default decay only (it lowers AdamW's lr); PyTorch's current file for Muon's too
NO_DEFAULT_DECAY = [info for info in OPTIMIZERS if info.name != "Muon"]


class TestOptimRenewed(TestCase):
    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_optim_infos_do_not_specify_global_cliquey_kwargs(self, device, dtype, optim_info):
        optimchecks.no_global_flags_in_inputs(self, device, dtype, optim_info)

    @parametrize("with_lrsched", [True, False])
    @optims([info for info in VECTORS if info.supports_sparse or info.only_supports_sparse_grads],
            dtypes=[torch.float64])
    def test_rosenbrock_sparse(self, device, dtype, optim_info, with_lrsched):
        optimchecks.rosenbrock_sparse(self, device, dtype, optim_info, with_lrsched)

    @optims(COMPLEX, dtypes=[torch.complex64])
    def test_complex(self, device, dtype, optim_info):
        optimchecks.complex_params(self, device, dtype, optim_info)

    @optims(COMPLEX, dtypes=[torch.complex64])
    def test_complex_2d(self, device, dtype, optim_info):
        optimchecks.complex_2d(self, device, dtype, optim_info)

    @optims(FUSED, dtypes=floating_types_and(torch.bfloat16, torch.float16))
    def test_fused_matches_forloop(self, device, dtype, optim_info):
        if torch.device(device).type not in optim_info.supports_fused_on:
            self.skipTest(f"{device} is not supported for fused on {optim_info.name}")
        optimchecks.derived_matches_forloop(self, device, dtype, optim_info, "fused")

    @optims(FUSED, dtypes=FLOAT32)
    def test_fused_error_on_params_on_meta(self, device, dtype, optim_info):
        optimchecks.fused_error_on_meta(self, device, dtype, optim_info)

    @optims(VECTORS, dtypes=FLOAT32)
    def test_param_groups_weight_decay(self, device, dtype, optim_info):
        optimchecks.param_groups_weight_decay(self, device, dtype, optim_info)

    @optims(VECTORS, dtypes=FLOAT32)
    def test_param_groups_lr(self, device, dtype, optim_info):
        optimchecks.param_groups_lr(self, device, dtype, optim_info)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_step_is_noop_when_params_have_no_grad(self, device, dtype, optim_info):
        optimchecks.step_without_grads(self, device, dtype, optim_info)

    @optims(NO_DEFAULT_DECAY, dtypes=FLOAT32)
    def test_step_is_noop_for_zero_grads(self, device, dtype, optim_info):
        optimchecks.step_with_zero_grads(self, device, dtype, optim_info)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_optimizer_can_be_printed(self, device, dtype, optim_info):
        optimchecks.printable(self, device, dtype, optim_info)

    @parametrize("is_named_optim0", [True, False])
    @parametrize("is_named_optim1", [True, False])
    @optims(VECTORS, dtypes=FLOAT32)
    def test_state_dict_deterministic(self, device, dtype, optim_info, is_named_optim0, is_named_optim1):
        optimchecks.state_dict_deterministic(self, device, dtype, optim_info, (is_named_optim0, is_named_optim1))

    @optims(VECTORS, dtypes=FLOAT32)
    def test_can_load_older_state_dict(self, device, dtype, optim_info):
        optimchecks.load_older_state_dict(self, device, dtype, optim_info)

    @parametrize("is_named_optim0", [True, False])
    @parametrize("is_named_optim1", [True, False])
    @optims([info for info in VECTORS if not info.only_supports_sparse_grads], dtypes=FLOAT32)
    def test_can_load_from_to_named_state_dict(self, device, dtype, optim_info, is_named_optim0, is_named_optim1):
        optimchecks.load_named_state_dict(self, device, dtype, optim_info, (is_named_optim0, is_named_optim1))

    @parametrize("is_named_optim", [True, False])
    @optims(VECTORS, dtypes=FLOAT32)
    def test_save_load_equality_with_weights_only(self, device, dtype, optim_info, is_named_optim):
        optimchecks.save_load_weights_only(self, device, dtype, optim_info, is_named_optim)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_load_nontensor_step(self, device, dtype, optim_info):
        optimchecks.load_nontensor_step(self, device, dtype, optim_info)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_state_dict_pre_hook(self, device, dtype, optim_info):
        optimchecks.state_dict_hooks(self, device, dtype, optim_info, pre=True, post=False)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_state_dict_post_hook(self, device, dtype, optim_info):
        optimchecks.state_dict_hooks(self, device, dtype, optim_info, pre=False, post=True)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_state_dict_pre_post_hook(self, device, dtype, optim_info):
        optimchecks.state_dict_hooks(self, device, dtype, optim_info, pre=True, post=True)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_load_state_dict_pre_hook_and_prepend(self, device, dtype, optim_info):
        optimchecks.load_state_dict_pre_hook_and_prepend(self, device, dtype, optim_info)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_load_state_dict_post_hook(self, device, dtype, optim_info):
        optimchecks.load_state_dict_post_hook(self, device, dtype, optim_info, with_pre=False)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_load_state_dict_pre_post_hook(self, device, dtype, optim_info):
        optimchecks.load_state_dict_post_hook(self, device, dtype, optim_info, with_pre=True)

    @optims(VECTORS, dtypes=FLOAT32)
    def test_step_post_hook(self, device, dtype, optim_info):
        optimchecks.step_hook(self, device, dtype, optim_info, pre=False)

    @optims(VECTORS, dtypes=FLOAT32)
    def test_step_pre_hook(self, device, dtype, optim_info):
        optimchecks.step_hook(self, device, dtype, optim_info, pre=True)

    @optims(VECTORS, dtypes=FLOAT32)
    def test_step_all_hooks(self, device, dtype, optim_info):
        optimchecks.step_all_hooks(self, device, dtype, optim_info)

    @optims(OPTIMIZERS, dtypes=FLOAT32)
    def test_deepcopy_copies_all_public_attrs(self, device, dtype, optim_info):
        optimchecks.deepcopy_public_attrs(self, device, dtype, optim_info)

    @optims([info for info in OPTIMIZERS if info.step_requires_closure], dtypes=FLOAT32)
    def test_second_order_optims_return_consistent_types(self, device, dtype, optim_info):
        optimchecks.second_order_consistent_types(self, device, dtype, optim_info)

    @optims(VECTORS, dtypes=FLOAT32)
    def test_non_empty_state(self, device, dtype, optim_info):
        optimchecks.non_empty_state(self, device, dtype, optim_info)


instantiate_cpu_tests(TestOptimRenewed, globals(), OPTIMIZERS)

if __name__ == "__main__":
    run_tests()

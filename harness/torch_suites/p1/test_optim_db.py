"""PyTorch's generic optimizer checks on `optim_db` (CPU).

The checks are the ones PyTorch's `test/test_optim.py` makes under the same names, written here in
our own code against the OptimizerInfo API (shared bodies in `harness/torch_suites/optim/optimchecks.py`),
so the class is `TestOptimRenewed` and each
OptimizerInfo's skips and expected failures for these names apply:

- test_errors: every error input raises (or warns) as declared, at construction or at `step()`.
- test_forloop_goes_right_direction (float32; contiguous or not, with or without the optimizer's
  LR schedulers): 20 steps of the for-loop implementation on `(W x + b)^2` lower the loss (raise it
  with `maximize=True`), for every optimizer input.
- test_param_group_with_lrscheduler_goes_right_direction (float32): two parameter groups, one with
  its own LR, under each scheduler combination, lower the loss in 20 steps.
- test_tensor_lr (float32): an optimizer given `lr` as a tensor steps exactly like one given the
  float, for every input including the foreach/fused flags (or refuses a tensor LR with the
  documented error).
- test_foreach_matches_forloop (float64): the foreach implementation gives the same parameters and
  optimizer state as the for-loop one over 7 steps of a small MLP, with a layer frozen for two
  steps and one step without gradients.
The checks on `W x + b` need a 1-D bias; optimizers that accept only matrices (Muon) run
test_errors and test_foreach_matches_forloop where they support it, not those checks: PyTorch's own
current test_optim.py adapts its parameters for Muon in code we do not have.
"""

import functools

import torch
from torch.nn import Parameter
from torch.testing._internal.common_optimizers import (
    OptimizerErrorEnum,
    _get_optim_inputs_including_global_cliquey_kwargs,
    optim_db,
    optims,
)
from torch.testing._internal.common_utils import TestCase, parametrize, run_tests

from harness.torch_suites.optim import optimchecks
from harness.torch_suites.shared.entries import Entries, instantiate_cpu_tests
from harness.torch_suites.optim.optimizers import takes_vectors

ENTRIES = Entries(tuple(optim_db), full_name=lambda info: info.name)
OPTIMIZERS = ENTRIES.chosen()
VECTOR_OPTIMIZERS = [info for info in OPTIMIZERS if takes_vectors(info)]  # the W x + b checks
STEPS = 20  # steps of the direction checks, as in PyTorch


class TestOptimRenewed(TestCase):
    @optims([info for info in OPTIMIZERS if info.optim_error_inputs_func is not None])
    def test_errors(self, device, dtype, optim_info):
        for error_input in optim_info.optim_error_inputs_func(device=device, dtype=dtype):
            given = error_input.optimizer_error_input
            expect = (self.assertWarnsRegex if issubclass(error_input.error_type, Warning)
                      else self.assertRaisesRegex)
            if error_input.error_on == OptimizerErrorEnum.CONSTRUCTION_ERROR:
                with expect(error_input.error_type, error_input.error_regex):
                    optim_info.optim_cls(given.params, **given.kwargs)
            else:
                optimizer = optim_info.optim_cls(given.params, **given.kwargs)
                with expect(error_input.error_type, error_input.error_regex):
                    optimizer.step()

    @parametrize("contiguous", [True, False])
    @parametrize("with_lrsched", [True, False])
    @optims(VECTOR_OPTIMIZERS, dtypes=[torch.float32])
    def test_forloop_goes_right_direction(self, device, dtype, optim_info, contiguous, with_lrsched):
        for scheduler_makers in (optim_info.scheduler_inputs if with_lrsched else [[]]):
            for optim_input in optim_info.optim_inputs_func(device=device):  # fresh: a tensor LR mutates
                if "foreach" in optim_info.supported_impls:
                    optim_input.kwargs["foreach"] = False
                if contiguous:
                    weight = Parameter(torch.randn((10, 5), device=device, dtype=dtype))
                    bias = Parameter(torch.randn((10,), device=device, dtype=dtype))
                else:
                    weight = Parameter(torch.randn((10, 5, 2), device=device, dtype=dtype)[..., 0])
                    bias = Parameter(torch.randn((10, 2), device=device, dtype=dtype)[..., 0])
                x = torch.randn(5, device=device, dtype=dtype)
                optimizer = optim_info.optim_cls([weight, bias], **optim_input.kwargs)
                schedulers = [make(optimizer) for make in scheduler_makers]
                closure = functools.partial(optimchecks.quadratic_loss, optimizer, optim_info, weight, bias, x)
                self._assert_direction(optimizer, optim_info, closure, schedulers,
                                       maximize=optim_input.kwargs.get("maximize", False))

    def _assert_direction(self, optimizer, optim_info, closure, schedulers, *, maximize: bool) -> None:
        initial = closure().item()
        for _ in range(STEPS):
            optimchecks.advance(schedulers, optimchecks.step(optimizer, optim_info, closure))
        if maximize:
            self.assertGreater(closure().item(), initial)
        else:
            self.assertLess(closure().item(), initial)

    @optims(VECTOR_OPTIMIZERS, dtypes=[torch.float32])
    def test_param_group_with_lrscheduler_goes_right_direction(self, device, dtype, optim_info):
        for scheduler_makers in optim_info.scheduler_inputs:
            weight = Parameter(torch.randn((10, 5), device=device, dtype=dtype))
            bias = Parameter(torch.randn((10,), device=device, dtype=dtype))
            x = torch.randn(5, device=device, dtype=dtype)
            optimizer = optim_info.optim_cls([{"params": [weight]}, {"params": [bias], "lr": 0.01}])
            schedulers = [make(optimizer) for make in scheduler_makers]
            closure = functools.partial(optimchecks.quadratic_loss, optimizer, optim_info, weight, bias, x)
            initial = closure().item()
            for _ in range(STEPS):
                optimchecks.advance(schedulers, optimizer.step(closure))
            self.assertLess(closure().item(), initial)

    @optims(VECTOR_OPTIMIZERS, dtypes=[torch.float32])
    def test_tensor_lr(self, device, dtype, optim_info):
        for optim_input in _get_optim_inputs_including_global_cliquey_kwargs(
                device, dtype, optim_info, skip=("differentiable",)):
            weight = Parameter(torch.randn((10, 5), device=device, dtype=dtype))
            bias = Parameter(torch.randn((10,), device=device, dtype=dtype))
            weight_t = weight.detach().clone().requires_grad_(True)
            bias_t = bias.detach().clone().requires_grad_(True)
            x = torch.randn(5, device=device, dtype=dtype)
            kwargs = {**optim_input.kwargs, "lr": 1.0 if optim_info.step_requires_closure else 1e-3}
            with_float = optim_info.optim_cls([weight, bias], **kwargs)
            try:
                with_tensor = optim_info.optim_cls([weight_t, bias_t], **{**kwargs, "lr": torch.tensor(kwargs["lr"])})
            except ValueError as error:
                self.assertRegex(str(error), ".*lr as a Tensor is not supported.*")
                continue
            for _ in range(5):
                for optimizer, w, b in ((with_float, weight, bias), (with_tensor, weight_t, bias_t)):
                    optimchecks.step(optimizer, optim_info,
                                     functools.partial(optimchecks.quadratic_loss, optimizer, optim_info, w, b, x))
                self.assertEqual(weight, weight_t)
                self.assertEqual(bias, bias_t)

    @optims([info for info in OPTIMIZERS if "foreach" in info.supported_impls], dtypes=[torch.float64])
    def test_foreach_matches_forloop(self, device, dtype, optim_info):
        optimchecks.derived_matches_forloop(self, device, dtype, optim_info, "foreach")


instantiate_cpu_tests(TestOptimRenewed, globals(), OPTIMIZERS)

if __name__ == "__main__":
    run_tests()

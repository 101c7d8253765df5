"""Tier breadth's differentiable optimizer steps (harness/torch_suites/optim/differentiable.py): a real
optimizer's step passes gradcheck against the parameter, its gradient and its state; a step whose
derivative is wrong, or one that cuts the gradient's history, fails, naming the input."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.integration


def entry(optimizer, inputs=({},)):
    from torch.testing._internal.common_optimizers import OptimizerInput

    return SimpleNamespace(optim_cls=optimizer, optim_inputs_func=lambda device, dtype: [
        OptimizerInput(params=None, kwargs=dict(kwargs), desc=f"input {i}") for i, kwargs in enumerate(inputs)])


def stepping(transform):
    """An SGD whose differentiable step moves each parameter by -lr * transform(grad)."""
    import torch

    class Stepping(torch.optim.SGD):
        def step(self, closure=None):
            with torch.set_grad_enabled(self.defaults["differentiable"]):  # as torch.optim's steps
                for group in self.param_groups:
                    for param in group["params"]:
                        param.add_(transform(param.grad), alpha=-group["lr"])

    return Stepping


def test_real_optimizers_steps_pass_gradcheck_with_their_state():
    import torch

    from harness.torch_suites.optim.differentiable import check_differentiable_step

    check_differentiable_step("cpu", torch.float64, entry(torch.optim.Adam, ({"lr": 0.1}, {"lr": 0.1, "amsgrad": True})))
    check_differentiable_step("cpu", torch.float64, entry(torch.optim.RMSprop, ({"centered": True, "momentum": 0.9},)))


def test_a_step_with_a_wrong_derivative_fails_naming_its_input():
    import torch

    from harness.torch_suites.optim.differentiable import check_differentiable_step

    class Doubled(torch.autograd.Function):  # forward is the identity, backward claims twice the gradient
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, gradient):
            return 2 * gradient

    with pytest.raises(AssertionError, match=r"Stepping \(input 1\): Jacobian mismatch"):
        check_differentiable_step("cpu", torch.float64, entry(stepping(Doubled.apply), ({"lr": 0.0}, {"lr": 0.1})))


def test_a_step_that_cuts_the_gradients_history_fails():
    import torch

    from harness.torch_suites.optim.differentiable import check_differentiable_step

    with pytest.raises(AssertionError, match="Jacobian mismatch"):
        check_differentiable_step("cpu", torch.float64, entry(stepping(lambda grad: grad.detach()), ({"lr": 0.1},)))

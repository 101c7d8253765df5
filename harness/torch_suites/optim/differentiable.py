"""Differentiable optimizer steps (`differentiable=True`): one step is a function of the parameter,
its gradient and the optimizer's state, and autograd through it must agree with finite differences.

PyTorch checks this in test_optim.py's `TestDifferentiableOptimizer`, one hand-written test per
optimizer with its state written out; ours derives the state from the optimizer itself, over every
`optim_db` entry that takes `differentiable` and every input its OptimizerInfo gives for CPU. A JIT
meets here the optimizers' Python arithmetic on tensors that carry autograd history, the path
meta-learning and hyperparameter search take.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError, gradcheck

SIZE = 6  # elements of the parameter: gradcheck perturbs each input element twice
# A mean of gradients kept below the root of its mean of squares: RMSprop (centered) takes the
# square root of their difference, a variance, which is never negative.
BOUNDED_BY = {"grad_avg": "square_avg"}


def differentiable(optim_info: Any) -> bool:
    """Whether the entry's optimizer takes `differentiable` (the others have no such mode)."""
    return "differentiable" in inspect.signature(optim_info.optim_cls.__init__).parameters


def settings(optim_info: Any, device: str, dtype: torch.dtype) -> list[tuple[str, dict[str, Any]]]:
    """The OptimizerInfo's inputs that can run differentiably: the for-loop implementation (foreach
    and fused kernels refuse `differentiable`), on any device but as capturable graphs."""
    return [(one.desc, dict(one.kwargs)) for one in optim_info.optim_inputs_func(device=device, dtype=dtype)
            if not any(one.kwargs.get(flag) for flag in ("foreach", "fused", "capturable"))]


def state_after_one_step(optimizer: type, kwargs: dict[str, Any], param: torch.Tensor, grad: torch.Tensor
                         ) -> dict[str, Any]:
    """The state a plain step leaves: which entries the optimizer keeps, with their types."""
    leaf = param.detach().clone().requires_grad_()
    plain = optimizer([leaf], **kwargs)
    leaf.grad = grad.detach().clone()
    plain.step()
    return {key: value.detach().clone() if isinstance(value, torch.Tensor) else value
            for key, value in plain.state[leaf].items()}


def random_state(state: dict[str, Any], shape: torch.Size, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Values for the state's tensors shaped like the parameter, drawn in [0, 1) as PyTorch's test
    draws them (a state that one step leaves sits at ties, `max` of equal moments, where a step is
    not differentiable)."""
    keys = [key for key, value in state.items()
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.shape == shape]
    drawn = {key: torch.rand(shape, dtype=state[key].dtype, generator=generator) for key in keys}
    for key, bound in BOUNDED_BY.items():
        if key in drawn and bound in drawn:
            drawn[key] = drawn[key] * drawn[bound].sqrt() * 0.9
    return drawn


def one_step(optimizer: type, kwargs: dict[str, Any], state: dict[str, Any], keys: list[str]
             ) -> Callable[..., tuple[torch.Tensor, ...]]:
    """Parameter, gradient and state tensors in; the stepped parameter and state tensors out."""
    def step(param: torch.Tensor, grad: torch.Tensor, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        stepped = param.clone()
        instance = optimizer([stepped], differentiable=True, **kwargs)
        instance.state[stepped].update({key: value.clone() if isinstance(value, torch.Tensor) else value
                                        for key, value in state.items()})
        instance.state[stepped].update({key: tensor.clone() for key, tensor in zip(keys, tensors)})
        stepped.grad = grad
        instance.step()
        return (stepped, *(instance.state[stepped][key] for key in keys))
    return step


def check_differentiable_step(device: str, dtype: torch.dtype, optim_info: Any) -> None:
    """For every input of the entry: gradcheck of one differentiable step with respect to the
    parameter, its gradient and every state tensor the optimizer keeps; the first input whose
    derivatives disagree fails, named."""
    for desc, kwargs in settings(optim_info, device, dtype):
        generator = torch.Generator().manual_seed(0)
        param = torch.randn(SIZE, dtype=dtype, generator=generator).to(device).requires_grad_()
        grad = torch.randn(SIZE, dtype=dtype, generator=generator).to(device).requires_grad_()
        state = state_after_one_step(optim_info.optim_cls, kwargs, param, grad)
        drawn = random_state(state, param.shape, generator)
        tensors = [tensor.to(device).requires_grad_() for tensor in drawn.values()]
        try:
            gradcheck(one_step(optim_info.optim_cls, kwargs, state, list(drawn)), (param, grad, *tensors))
        except GradcheckError as error:
            raise AssertionError(f"{optim_info.optim_cls.__name__} ({desc}): {error}") from error

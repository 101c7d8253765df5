"""The bodies of PyTorch's generic OptimizerInfo checks, shared by tier P1 (p1/test_optim_db.py) and
tier breadth (breadth/test_optim.py: the rest of `TestOptimRenewed` in `test/test_optim.py`).

Each function makes the check PyTorch's test of the same name makes, written in our own code against
the OptimizerInfo API (`optim_inputs_func`, `supported_impls`, `supports_fused_on`,
`metadata_for_sparse`, `not_og_supported_flags`, ...) and the helpers `common_optimizers` ships
(`_get_optim_inputs_including_global_cliquey_kwargs`, `TensorTracker`); the modules keep PyTorch's
class and test names so each OptimizerInfo's decorations apply.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable
from copy import deepcopy

import torch
from torch.nn import Parameter
from torch.optim import SGD
from torch.optim.lr_scheduler import ReduceLROnPlateau
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.testing._internal.common_optimizers import (
    TensorTracker,
    _get_optim_inputs_including_global_cliquey_kwargs,
)
from torch.testing._internal.common_utils import TestCase

COMPARED_STEPS = 7  # foreach/fused against for-loop: RAdam's rectification starts to matter at step 6
ROSENBROCK_STEPS = 1800
GLOBAL_FLAGS = ("foreach", "fused", "differentiable")


def all_inputs(device, dtype, optim_info, skip: tuple[str, ...] = ()) -> list:
    """Every optimizer input, also with each global flag (foreach, fused, differentiable) it supports."""
    return _get_optim_inputs_including_global_cliquey_kwargs(device, dtype, optim_info, skip=skip)


def quadratic_loss(optimizer, optim_info, weight, bias, x):
    """(W x + b)^2 summed, its gradients made sparse for optimizers that take only sparse ones."""
    optimizer.zero_grad()
    loss = (weight.mv(x) + bias).pow(2).sum()
    loss.backward()
    if optim_info.only_supports_sparse_grads:
        weight.grad = weight.grad.to_sparse()
        bias.grad = bias.grad.to_sparse()
    return loss


def advance(schedulers, loss) -> None:
    for scheduler in schedulers:
        if isinstance(scheduler, ReduceLROnPlateau):
            scheduler.step(loss)
        else:
            scheduler.step()


def step(optimizer, optim_info, closure: Callable):
    """One step: through the closure where the optimizer needs one, else after calling it."""
    if optim_info.step_requires_closure:
        return optimizer.step(closure)
    loss = closure()
    optimizer.step()
    return loss


def _linear(device, dtype) -> tuple[Parameter, Parameter, torch.Tensor]:
    return (Parameter(torch.randn((10, 5), device=device, dtype=dtype)),
            Parameter(torch.randn((10,), device=device, dtype=dtype)), torch.randn(5, device=device, dtype=dtype))


def _assert_direction(case: TestCase, before: float, after: float, maximize: bool) -> None:
    if maximize:
        case.assertGreater(after, before)
    else:
        case.assertLess(after, before)


def derived_matches_forloop(case: TestCase, device, dtype, optim_info, flag: str) -> None:
    """test_foreach_matches_forloop / test_fused_matches_forloop: the `flag` implementation and the
    for-loop one, stepped side by side over 7 steps of a small MLP (a layer frozen for two steps,
    one step without gradients), give the same parameters and optimizer state after every step;
    each step starts again from the for-loop's values, so rounding does not accumulate."""
    for optim_input in optim_info.optim_inputs_func(device=device, dtype=dtype):
        if optim_input.kwargs.get("capturable", False):
            continue  # capturable is not supported on CPU
        pair = [_small_mlp(device, dtype, optim_info, {**deepcopy(optim_input.kwargs), flag: value})
                for value in (False, True)]
        x = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], dtype=dtype, device=device).reshape(3, 2)
        for index in range(COMPARED_STEPS):
            for model, optimizer in pair:
                optimizer.zero_grad()
                if index in (3, 5):
                    model[2].requires_grad_(index == 5)  # a layer frozen for two steps
                if index != 2:  # one step without gradients must be a no-op
                    model(x).sum().backward()
                optimizer.step()
            (forloop, forloop_optimizer), (derived, derived_optimizer) = pair
            for p, q in zip(forloop.parameters(), derived.parameters()):
                _align(case, p, q, f"step {index}: {flag} and for-loop parameters differ")
                for key, value in forloop_optimizer.state[p].items():
                    _align(case, value, derived_optimizer.state[q][key], f"step {index}: {flag} and for-loop {key} differ")


def _small_mlp(device, dtype, optim_info, kwargs) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """A small MLP and its optimizer (over its parameters and an empty one, which foreach and fused
    kernels must handle)."""
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Sigmoid(), torch.nn.Linear(3, 1),
                                torch.nn.Sigmoid()).to(dtype=dtype, device=device)
    empty = torch.empty((), device=device, dtype=dtype, requires_grad=True)
    empty.grad = torch.rand_like(empty)
    return model, optim_info.optim_cls([*model.parameters(), empty], **kwargs)


def _align(case: TestCase, expected, actual, message: str) -> None:
    """Asserts `actual` equals `expected`, then gives a tensor `expected`'s exact values."""
    case.assertEqual(actual, expected, msg=message)
    if isinstance(actual, torch.Tensor):
        with torch.no_grad():
            actual.copy_(expected)


def no_global_flags_in_inputs(case: TestCase, device, dtype, optim_info) -> None:
    """test_optim_infos_do_not_specify_global_cliquey_kwargs: the entry's inputs leave foreach,
    fused and differentiable to the tests."""
    for optim_input in optim_info.optim_inputs_func(device=device):
        case.assertFalse(set(GLOBAL_FLAGS) & set(optim_input.kwargs), optim_input.desc)


def _rosenbrock(t: torch.Tensor) -> torch.Tensor:
    x, y = t
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def _rosenbrock_grad(t: torch.Tensor) -> torch.Tensor:
    x, y = t
    return torch.stack((-400 * x * (y - x ** 2) - 2 * (1 - x), 200 * (y - x ** 2)))


def _coordinate_grad(param: torch.Tensor, sparse: bool, first: bool) -> torch.Tensor:
    """The gradient of one coordinate only: dense, or sparse and uncoalesced (two entries that sum
    to it), the torture PyTorch's check gives sparse-aware optimizers."""
    grad = _rosenbrock_grad(param.detach())
    index, value = (0, grad[0]) if first else (1, grad[1])
    if not sparse:
        dense = torch.zeros(2, dtype=param.dtype)
        dense[index] = value
        return dense
    parts = torch.stack((value / 4, value - value / 4)) if first else torch.stack((value - value / 4, value / 4))
    return torch.sparse_coo_tensor(torch.tensor([[index, index]]), parts, (2,))


def _sparse_inputs(inputs: list, updates: dict) -> list:
    """The inputs without the keyword arguments the entry's sparse metadata overrides, each distinct
    one once (with the metadata's lr)."""
    if not updates:
        return inputs
    kept, seen = [], set()
    for optim_input in inputs:
        for key in updates:
            optim_input.kwargs.pop(key, None)
        key = tuple(sorted(optim_input.kwargs.items()))
        if optim_input.kwargs and key not in seen:
            seen.add(key)
            kept.append(optim_input)
            if "lr" in updates:
                optim_input.kwargs["lr"] = updates["lr"]
    return kept


def rosenbrock_sparse(case: TestCase, device, dtype, optim_info, with_lrsched: bool) -> None:
    """test_rosenbrock_sparse: 1800 steps of cyclic coordinate descent on Rosenbrock's function
    with sparse, uncoalesced gradients move toward (1, 1) (away with maximize) and, for optimizers
    that also take dense gradients, step exactly as with the same gradients dense."""
    updates, scheduler_makers = optim_info.metadata_for_sparse
    if with_lrsched and not scheduler_makers:
        return
    inputs = all_inputs(device, dtype, optim_info, skip=("differentiable", "fused"))
    for optim_input in _sparse_inputs(inputs, updates):
        kwargs = optim_input.kwargs
        starts = [torch.tensor([1.5, 1.5])] + ([torch.tensor([1.5, 1.5], dtype=dtype)] if kwargs.get("foreach") else [])
        runs = [_RosenbrockRun(optim_info, starts, kwargs, scheduler_makers if with_lrsched else [], sparse)
                for sparse in ((True,) if optim_info.only_supports_sparse_grads else (True, False))]
        for index in range(ROSENBROCK_STEPS):
            for run in runs:
                run.step(first=index % 2 == 1)
            if len(runs) == 2:
                case.assertEqual(runs[0].params, runs[1].params, atol=5e-6, rtol=5e-6)
        params = runs[0].params
        if kwargs.get("maximize", False):
            case.assertGreaterEqual(sum(_rosenbrock(p) for p in params), sum(_rosenbrock(s) for s in starts))
        else:
            solution = torch.tensor([1.0, 1.0])
            case.assertLessEqual(sum(p.dist(solution) for p in params), sum(s.dist(solution) for s in starts))


class _RosenbrockRun:
    """One optimizer on Rosenbrock's function, fed one coordinate's gradient per step."""

    def __init__(self, optim_info, starts, kwargs, scheduler_makers, sparse: bool):
        self.params = [Parameter(start.clone()) for start in starts]
        self.optimizer = optim_info.optim_cls(self.params, **kwargs)
        self.schedulers = [make(self.optimizer) for make in scheduler_makers]
        self.sparse = sparse

    def _closure(self, first: bool):
        self.optimizer.zero_grad()
        loss = sum(_rosenbrock(p) for p in self.params)
        loss.backward()
        with torch.no_grad():
            for p in self.params:
                p.grad = _coordinate_grad(p, self.sparse, first).to(dtype=p.dtype)
        return loss

    def step(self, first: bool) -> None:
        self.optimizer.step(functools.partial(self._closure, first))
        with torch.no_grad():
            advance(self.schedulers, _rosenbrock(self.params[0]))


def complex_params(case: TestCase, device, dtype, optim_info) -> None:
    """test_complex: complex parameters (and a real one beside them) step exactly like their
    `view_as_real` views given the same gradients and losses, at every step."""
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable", "fused")):
        complex_ = [torch.randn(10, 5, device=device, dtype=dtype, requires_grad=True),
                    torch.randn(10, device=device, dtype=dtype, requires_grad=True),
                    torch.randn(10, 5, device=device, dtype=torch.float32, requires_grad=True)]
        real = [(torch.view_as_real(p) if p.is_complex() else p).detach().clone().requires_grad_() for p in complex_]
        complex_optimizer = optim_info.optim_cls(complex_, **optim_input.kwargs)
        real_optimizer = optim_info.optim_cls(real, **optim_input.kwargs)
        fed: list[torch.Tensor] = []
        seen_real: list[torch.Tensor] = []
        seen_complex: list[torch.Tensor] = []

        def real_closure():
            for p in real:
                p.grad = torch.randn_like(p)
                seen_real.append(p.detach().clone())
                fed.append(p.grad.clone())
            fed.append(torch.randn(1))
            return fed[-1].clone()

        def complex_closure():
            for p in complex_:
                grad = fed.pop(0)
                p.grad = torch.view_as_complex(grad) if p.is_complex() else grad
                seen_complex.append(torch.view_as_real_copy(p.detach()) if p.is_complex() else p.detach().clone())
            return fed.pop(0)

        for _ in range(3):
            step(real_optimizer, optim_info, real_closure)
            step(complex_optimizer, optim_info, complex_closure)
        case.assertEqual(real, [torch.view_as_real(p) if p.is_complex() else p for p in complex_])
        case.assertEqual(seen_complex, seen_real)


def complex_2d(case: TestCase, device, dtype, optim_info) -> None:
    """test_complex_2d: a complex 2-vector on |Rosenbrock| steps like its real and imaginary parts
    as two real parameters; values, gradients and losses are compared (and aligned) at every call."""
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable", "fused")):
        if optim_info.step_requires_closure:
            torch.manual_seed(2024)  # LBFGS reduces over all parameters: the order of the sums matters
        a = torch.randn(2, device=device, dtype=dtype, requires_grad=True)
        re, im = (part.detach().clone().requires_grad_() for part in (a.real, a.imag))
        whole = optim_info.optim_cls([a], **optim_input.kwargs)
        parts = optim_info.optim_cls([re, im], **optim_input.kwargs)
        trackers = [TensorTracker() for _ in range(5)]  # real, imag, grad real, grad imag, loss

        def whole_closure():
            whole.zero_grad()
            loss = _rosenbrock(a).abs()
            loss.backward()
            for tracker, value in zip(trackers, (a.real, a.imag, a.grad.real, a.grad.imag, loss)):
                tracker.add(value)
            return loss

        def parts_closure():
            parts.zero_grad()
            trackers[0].pop_check_set(re, case)
            trackers[1].pop_check_set(im, case)
            loss = _rosenbrock(torch.complex(re, im)).abs()
            trackers[4].pop_check_set(loss, case)
            loss.backward()
            trackers[2].pop_check_set(re.grad, case)
            trackers[3].pop_check_set(im.grad, case)
            return loss

        for _ in range(3):
            if optim_info.step_requires_closure:
                whole.step(whole_closure)
                parts.step(parts_closure)
            else:
                whole_closure()
                parts_closure()
                whole.step()
                parts.step()
            case.assertEqual(a.real, re)
            case.assertEqual(a.imag, im)
        case.assertTrue(all(tracker.all_popped() for tracker in trackers))


def fused_error_on_meta(case: TestCase, device, dtype, optim_info) -> None:
    """test_fused_error_on_params_on_meta: a fused optimizer over meta parameters refuses to step;
    after `to_empty` onto the device it steps."""
    if torch.device(device).type not in optim_info.supports_fused_on:
        case.skipTest(f"{device} is not supported for fused on {optim_info.name}")
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Sigmoid(), torch.nn.Linear(3, 1),
                                    torch.nn.Sigmoid()).to(dtype)
    optimizer = optim_info.optim_cls(model.parameters(), fused=True)
    with torch.device("meta"):
        for p in model.parameters():
            p.grad = torch.rand_like(p)
    with case.assertRaisesRegex(RuntimeError, "`fused=True` requires all the params to be floating point Tensors"):
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    model.to_empty(device=device)
    for p in model.parameters():
        p.grad = torch.rand_like(p)
    optimizer.step()


def _sparse_if_needed(optim_info, params) -> None:
    if optim_info.only_supports_sparse_grads:
        for p in params:
            if p.grad is not None:
                p.grad = p.grad.to_sparse()


def param_groups_weight_decay(case: TestCase, device, dtype, optim_info) -> None:
    """test_param_groups_weight_decay: with the input's weight decay on the weight's group and none
    on the bias's, 20 steps move the loss the right way."""
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable",)):
        weight, bias, x = _linear(device, dtype)
        optimizer = optim_info.optim_cls([{"params": [weight], **optim_input.kwargs},
                                          {"params": [bias], **{**deepcopy(optim_input.kwargs), "weight_decay": 0.0}}])
        before = (weight.mv(x) + bias).pow(2).sum().item()
        for _ in range(20):
            loss = quadratic_loss(optimizer, optim_info, weight, bias, x)
            optimizer.step()
        _assert_direction(case, before, loss.item(), optim_input.kwargs.get("maximize", False))


def param_groups_lr(case: TestCase, device, dtype, optim_info) -> None:
    """test_param_groups_lr: a group's own lr wins over the optimizer's (1e-28): its parameters move
    the loss the right way in 20 steps while a second group's parameter stays put."""
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable",)):
        if not optim_input.kwargs.get("lr"):
            optim_input.kwargs["lr"] = 1e-3
        outer = {"lr": 1e-28, **({"step_sizes": (0, 50)} if optim_info.name == "Rprop" else {})}
        weight, bias, x = _linear(device, dtype)
        untouched = Parameter(torch.randn(2, device=device, dtype=dtype))
        original = untouched.detach().clone()
        optimizer = optim_info.optim_cls([{"params": [weight, bias], **optim_input.kwargs},
                                          {"params": [untouched]}], **outer)
        before = (weight.mv(x) + bias).pow(2).sum().item()
        for _ in range(20):
            optimizer.zero_grad()
            loss = (weight.mv(x) + bias).pow(2).sum()
            loss.backward()
            untouched.grad = torch.rand_like(untouched)
            _sparse_if_needed(optim_info, (weight, bias, untouched))
            optimizer.step()
        _assert_direction(case, before, loss.item(), optim_input.kwargs.get("maximize", False))
        case.assertEqual(untouched, original)


def step_without_grads(case: TestCase, device, dtype, optim_info) -> None:
    """test_step_is_noop_when_params_have_no_grad: a step over parameters that need no gradient works."""
    params = [torch.randn(2, 3, device=device, dtype=dtype) for _ in range(2)]
    for optim_input in all_inputs(device, dtype, optim_info):
        optim_info.optim_cls(params, **optim_input.kwargs).step(lambda: torch.tensor([1], device=device, dtype=dtype))


def step_with_zero_grads(case: TestCase, device, dtype, optim_info) -> None:
    """test_step_is_noop_for_zero_grads: without weight decay, a step on zero gradients (an empty
    sparse one for sparse optimizers) leaves the parameter as it was."""
    param = torch.randn((5, 1), device=device, dtype=dtype, requires_grad=True)
    original = param.detach().clone()
    for optim_input in all_inputs(device, dtype, optim_info):
        kwargs = optim_input.kwargs
        if kwargs.get("weight_decay", 0) != 0:
            continue
        if optim_info.name == "AdamW":  # its decoupled decay moves parameters whatever the gradient
            kwargs["lr"] = torch.tensor(1e-5) if isinstance(kwargs.get("lr"), torch.Tensor) else 1e-5
        params = [param.clone()] if kwargs.get("differentiable", False) else [param]
        optimizer = optim_info.optim_cls(params, **kwargs)
        if optim_info.only_supports_sparse_grads:
            params[0].grad = torch.sparse_coo_tensor(torch.empty((1, 0), device=device, dtype=dtype),
                                                     torch.empty((0, 1), device=device, dtype=dtype), (5, 1))
        else:
            params[0].grad = torch.zeros_like(params[0])
        optimizer.step(lambda: torch.tensor([1], device=device, dtype=dtype))
        case.assertEqual(original, params[0])


def printable(case: TestCase, device, dtype, optim_info) -> None:
    """test_optimizer_can_be_printed: `repr()` of every configuration works."""
    params = [Parameter(torch.randn(2, 3, device=device, dtype=dtype)) for _ in range(2)]
    for optim_input in all_inputs(device, dtype, optim_info):
        repr(optim_info.optim_cls(params, **optim_input.kwargs))


def _named(params: list, named: bool) -> list:
    return [(f"name{index}", p) for index, p in enumerate(params)] if named else params


def _without_names(state_dict: dict) -> dict:
    copy = deepcopy(state_dict)
    for group in copy["param_groups"]:
        group.pop("param_names", None)
    return copy


def state_dict_deterministic(case: TestCase, device, dtype, optim_info, named: tuple[bool, bool]) -> None:
    """test_state_dict_deterministic: an optimizer loaded with a primed one's state dict (with or
    without parameter names on either side) steps its copies of the parameters identically, and the
    two state dicts stay equal, repeated parameter groups included."""
    weight = Parameter(torch.randn(2, 3, device=device, dtype=dtype))
    bias = Parameter(torch.randn(2, device=device, dtype=dtype))
    x = torch.randn(3, device=device, dtype=dtype, requires_grad=True)
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable",)):
        optimizer = optim_info.optim_cls(_named([weight, bias], named[0]), **optim_input.kwargs)
        closure = functools.partial(quadratic_loss, optimizer, optim_info, weight, bias, x)
        for _ in range(10):
            step(optimizer, optim_info, closure)
        with torch.no_grad():
            weight_c, bias_c = Parameter(weight.clone()), Parameter(bias.clone())
        copy = optim_info.optim_cls(_named([weight_c, bias_c], named[1]), **optim_input.kwargs)
        copy_closure = functools.partial(quadratic_loss, copy, optim_info, weight_c, bias_c, x)
        copy.load_state_dict(deepcopy(optimizer.state_dict()))
        for _ in range(10):
            step(optimizer, optim_info, closure)
            step(copy, optim_info, copy_closure)
            case.assertEqual(weight, weight_c)
            case.assertEqual(bias, bias_c)
        case.assertEqual(_without_names(optimizer.state_dict()), _without_names(copy.state_dict()))
        copy.param_groups.extend(copy.param_groups)
        case.assertEqual(_without_names(optimizer.state_dict())["param_groups"][-1],
                         _without_names(copy.state_dict())["param_groups"][-1])


def _conv_bn(device, dtype) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(4, 2, 1, stride=2), torch.nn.BatchNorm2d(2, eps=1e-05, momentum=0.1))
    return model.to(dtype=dtype, device=device), torch.rand(1, 4, 16, 16, device=device, dtype=dtype)


def _model_step(optimizer, optim_info, model, x) -> None:
    def closure():
        optimizer.zero_grad()
        loss = model(x).sum()
        loss.backward()
        return loss
    step(optimizer, optim_info, closure)


def load_older_state_dict(case: TestCase, device, dtype, optim_info) -> None:
    """test_can_load_older_state_dict: a state dict without the flags older versions lacked
    (`not_og_supported_flags`) loads, and the optimizer steps after it."""
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable",)):
        model, x = _conv_bn(device, dtype)
        optimizer = optim_info.optim_cls(model.parameters(), **optim_input.kwargs)
        for _ in range(3):
            _model_step(optimizer, optim_info, model, x)
        older = deepcopy(optimizer.state_dict())
        for group in older["param_groups"]:
            for flag in optim_info.not_og_supported_flags:
                group.pop(flag, None)
        optimizer.load_state_dict(older)
        _model_step(optimizer, optim_info, model, x)


def load_named_state_dict(case: TestCase, device, dtype, optim_info, named: tuple[bool, bool]) -> None:
    """test_can_load_from_to_named_state_dict: a state dict of an optimizer given parameters or
    named parameters loads into one given either; it steps after, and the names given survive."""
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable",)):
        model, x = _conv_bn(device, dtype)
        first = optim_info.optim_cls(model.named_parameters() if named[0] else model.parameters(), **optim_input.kwargs)
        for _ in range(3):
            _model_step(first, optim_info, model, x)
        second = optim_info.optim_cls(model.named_parameters() if named[1] else model.parameters(),
                                      **optim_input.kwargs)
        second.load_state_dict(deepcopy(first.state_dict()))
        _model_step(second, optim_info, model, x)
        if any(named):
            case.assertEqual(second.state_dict()["param_groups"][0]["param_names"],
                             ["0.weight", "0.bias", "1.weight", "1.bias"])


def save_load_weights_only(case: TestCase, device, dtype, optim_info, named: bool) -> None:
    """test_save_load_equality_with_weights_only: a primed optimizer's state dict saved with
    `torch.save` loads back equal, with `weights_only` too."""
    weight = Parameter(torch.randn(2, 3, device=device, dtype=dtype))
    bias = Parameter(torch.randn(2, device=device, dtype=dtype))
    x = torch.randn(3, device=device, dtype=dtype, requires_grad=True)
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable",)):
        optimizer = optim_info.optim_cls(_named([weight, bias], named), **optim_input.kwargs)
        closure = functools.partial(quadratic_loss, optimizer, optim_info, weight, bias, x)
        for _ in range(3):
            optimizer.step(closure)
        state_dict = optimizer.state_dict()
        buffer = io.BytesIO()
        torch.save(state_dict, buffer)
        for weights_only in (None, True):  # torch's default, then explicitly
            buffer.seek(0)
            case.assertEqual(torch.load(buffer, weights_only=weights_only), state_dict)


def _primed_params(device, dtype, optim_info) -> list[Parameter]:
    params = [Parameter(torch.randn(2, 3, device=device, dtype=dtype)) for _ in range(2)]
    for p in params:
        p.grad = torch.rand_like(p)
    _sparse_if_needed(optim_info, params)
    return params


def load_nontensor_step(case: TestCase, device, dtype, optim_info) -> None:
    """test_load_nontensor_step: a state dict whose `step` entries are Python numbers (older
    versions) loads, and the optimizer steps after it."""
    params = _primed_params(device, dtype, optim_info)
    loss = torch.rand(1, device=device, dtype=dtype)
    closure = (lambda: loss) if optim_info.step_requires_closure else None
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable",)):
        optimizer = optim_info.optim_cls(params, **optim_input.kwargs)
        for _ in range(3):
            optimizer.step(closure)
        state_dict = deepcopy(optimizer.state_dict())
        for state in state_dict["state"].values():
            if torch.is_tensor(state.get("step")):
                state["step"] = state["step"].item()
        optimizer.load_state_dict(state_dict)
        optimizer.step(closure)


def _marking_pre_hook(optimizer) -> None:
    optimizer.state["test"] = 1


def _unmarking_post_hook(optimizer, state_dict: dict) -> dict:
    state_dict["ran_state_dict_pre_hook"] = state_dict["state"].pop("test", None) is not None
    return state_dict


def _optimizers_of_one_param(device, dtype, optim_info):
    for optim_input in all_inputs(device, dtype, optim_info):
        param = torch.rand(2, 3, device=device, dtype=dtype, requires_grad=True)
        yield optim_info.optim_cls([param], **optim_input.kwargs)


def state_dict_hooks(case: TestCase, device, dtype, optim_info, pre: bool, post: bool) -> None:
    """test_state_dict_pre_hook / _post_hook / _pre_post_hook: a pre hook's change to the state is
    in the state dict; a post hook sees (and may rewrite) the state dict the pre hook made."""
    for optimizer in _optimizers_of_one_param(device, dtype, optim_info):
        if pre:
            optimizer.register_state_dict_pre_hook(_marking_pre_hook)
        if post:
            optimizer.register_state_dict_post_hook(_unmarking_post_hook)
        state_dict = optimizer.state_dict()
        if pre and not post:
            case.assertEqual(state_dict["state"]["test"], 1)
        else:
            case.assertNotIn("test", state_dict["state"])
            case.assertEqual(state_dict["ran_state_dict_pre_hook"], pre)


def _lr_hook(value: float, returns: bool):
    """A load_state_dict pre hook setting the first group's lr, in place or on a copy it returns."""
    def hook(optimizer, state_dict):
        target = deepcopy(state_dict) if returns else state_dict
        target["param_groups"][0]["lr"] = value
        return target if returns else None
    return hook


def _recording_post_hook(optimizer) -> None:
    optimizer.state["ran_load_state_dict_pre_hook2"] = optimizer.param_groups[0]["lr"] == 0.003
    optimizer.state["ran_load_state_dict_post_hook"] = True


def load_state_dict_pre_hook_and_prepend(case: TestCase, device, dtype, optim_info) -> None:
    """test_load_state_dict_pre_hook_and_prepend: a pre hook rewrites the state dict loaded; one
    prepended runs first, so the later hook's value wins."""
    for optimizer in _optimizers_of_one_param(device, dtype, optim_info):
        state_dict = optimizer.state_dict()
        optimizer.register_load_state_dict_pre_hook(_lr_hook(0.002, returns=False))
        optimizer.load_state_dict(state_dict)
        case.assertEqual(optimizer.param_groups[0]["lr"], 0.002)
        optimizer.register_load_state_dict_pre_hook(_lr_hook(0.003, returns=True), prepend=True)
        optimizer.load_state_dict(state_dict)
        case.assertEqual(optimizer.param_groups[0]["lr"], 0.002)


def load_state_dict_post_hook(case: TestCase, device, dtype, optim_info, with_pre: bool) -> None:
    """test_load_state_dict_post_hook / _pre_post_hook: a post hook runs after loading, and sees the
    state dict a pre hook returned in place of the one given."""
    for optimizer in _optimizers_of_one_param(device, dtype, optim_info):
        if with_pre:
            optimizer.register_load_state_dict_pre_hook(_lr_hook(0.003, returns=True))
        optimizer.register_load_state_dict_post_hook(_recording_post_hook)
        optimizer.load_state_dict(optimizer.state_dict())
        case.assertEqual(optimizer.state["ran_load_state_dict_pre_hook2"], with_pre)
        case.assertTrue(optimizer.state["ran_load_state_dict_post_hook"])


def _dummy_closure(optim_info):
    return (lambda: 1) if optim_info.step_requires_closure else None


def step_hook(case: TestCase, device, dtype, optim_info, pre: bool) -> None:
    """test_step_pre_hook / test_step_post_hook: a hook registered on the optimizer runs at each
    step until its handle is removed."""
    params = [torch.tensor([1, 1], device=device, dtype=dtype)]
    closure = _dummy_closure(optim_info)
    for optim_input in all_inputs(device, dtype, optim_info):
        optimizer = optim_info.optim_cls(params, **optim_input.kwargs)
        calls = []
        register = optimizer.register_step_pre_hook if pre else optimizer.register_step_post_hook
        handle = register(lambda *_: calls.append(1))
        optimizer.step(closure)
        optimizer.step(closure)
        case.assertEqual(len(calls), 2)
        handle.remove()
        optimizer.step(closure)
        case.assertEqual(len(calls), 2)


def step_all_hooks(case: TestCase, device, dtype, optim_info) -> None:
    """test_step_all_hooks: global hooks wrap every optimizer's own hooks (global pre, own pre, own
    post, global post), for this optimizer and an SGD beside it; none runs once removed."""
    params = [torch.tensor([1, 1], device=device, dtype=dtype)]
    closure = _dummy_closure(optim_info)
    for optim_input in all_inputs(device, dtype, optim_info):
        optimizer, other = optim_info.optim_cls(params, **optim_input.kwargs), SGD(params)
        calls: list[int] = []
        handles = [register_optimizer_step_pre_hook(lambda *_: calls.append(0)),
                   register_optimizer_step_post_hook(lambda *_: calls.append(5))]
        for each in (optimizer, other):
            handles += [each.register_step_pre_hook(lambda *_: calls.append(1)),
                        each.register_step_post_hook(lambda *_: calls.append(2))]
        try:
            for index, each in enumerate((optimizer, other, optimizer)):
                each.step(closure)
                case.assertEqual(calls, [0, 1, 2, 5] * (index + 1))
        finally:
            for handle in handles:
                handle.remove()
        optimizer.step(closure)
        other.step(closure)
        case.assertEqual(calls, [0, 1, 2, 5] * 3)


def deepcopy_public_attrs(case: TestCase, device, dtype, optim_info) -> None:
    """test_deepcopy_copies_all_public_attrs: a deep copy of a primed optimizer has the same public
    attributes."""
    params = _primed_params(device, dtype, optim_info)
    for optim_input in all_inputs(device, dtype, optim_info, skip=("differentiable",)):
        optimizer = optim_info.optim_cls(params, **optim_input.kwargs)
        for _ in range(3):
            step(optimizer, optim_info, lambda: 1 if optim_info.step_requires_closure else None)
        public = {name for name in vars(optimizer) if not name.startswith("_")}
        case.assertEqual(public, {name for name in vars(deepcopy(optimizer)) if not name.startswith("_")})


def second_order_consistent_types(case: TestCase, device, dtype, optim_info) -> None:
    """test_second_order_optims_return_consistent_types: a closure-driven optimizer returns the same
    type from `step` whether it stops at once (tolerance_grad inf) or not (-inf)."""
    params = [torch.randn(10, 5, device=device, dtype=dtype), torch.randn(10, device=device, dtype=dtype)]
    for optim_input in optim_info.optim_inputs_func(device=device):
        results = [optim_info.optim_cls(params, **{**optim_input.kwargs, "tolerance_grad": tolerance})
                   .step(lambda: torch.tensor([10], device=device, dtype=dtype)) for tolerance in (math.inf, -math.inf)]
        case.assertEqual(type(results[0]), type(results[1]))


def non_empty_state(case: TestCase, device, dtype, optim_info) -> None:
    """test_non_empty_state: after one step on a Linear layer, every parameter has optimizer state."""
    model = torch.nn.Linear(5, 5).to(dtype=dtype, device=device)
    x = torch.rand(2, 5, dtype=dtype, device=device)
    for optim_input in optim_info.optim_inputs_func(device=device):
        optimizer = optim_info.optim_cls(model.parameters(), **optim_input.kwargs)
        optimizer.zero_grad()
        model(x).sum().backward()
        _sparse_if_needed(optim_info, model.parameters())
        optimizer.step((lambda: 1.0) if optim_info.step_requires_closure else None)
        for state in optimizer.state.values():
            case.assertGreater(len(state), 0)

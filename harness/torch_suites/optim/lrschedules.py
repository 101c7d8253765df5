"""Checks of torch.optim's learning-rate schedulers and SWA helpers (`torch.optim.lr_scheduler`,
`torch.optim.swa_utils`: pure Python, where a Python JIT runs PyTorch's own arithmetic), for tier
breadth's test_lr_schedulers.py. PyTorch's own tests of them (test/optim/test_lrscheduler.py,
test_swa_utils.py) are hand-written per scheduler and ship in no wheel: these are ours, under names
of our own, written against the public API.

Every scheduler is built the same way (`SCHEDULES`): SGD over two parameter groups (lr 0.1 and 0.05,
momentum 0.9 where a schedule cycles momentum), stepped `EPOCHS` times after an optimizer step.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.optim import SGD, lr_scheduler
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.testing._internal.common_utils import TestCase

EPOCHS = 12
METRICS = (1.0, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.7, 0.7)  # ReduceLROnPlateau's losses


@dataclass(frozen=True)
class Schedule:
    """One scheduler as the checks build it: `make(optimizer)`; `metric` for ReduceLROnPlateau."""

    name: str
    make: Callable[[torch.optim.Optimizer], object]
    metric: bool = False
    momentum: bool = False  # it cycles the optimizer's momentum too (needs SGD with momentum)

    def step(self, scheduler: object, epoch: int) -> None:
        if self.metric:
            scheduler.step(METRICS[epoch])  # type: ignore[attr-defined]
        else:
            scheduler.step()  # type: ignore[attr-defined]


def _halve(epoch: int) -> float:
    return 0.5 ** (epoch // 3)


def _shrink(epoch: int) -> float:
    return 0.9


SCHEDULES = tuple(Schedule(*row) for row in (
    ("StepLR", lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
    ("MultiStepLR", lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 5, 9], gamma=0.3)),
    ("ConstantLR", lambda o: lr_scheduler.ConstantLR(o, factor=0.25, total_iters=4)),
    ("LinearLR", lambda o: lr_scheduler.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=7)),
    ("ExponentialLR", lambda o: lr_scheduler.ExponentialLR(o, gamma=0.8)),
    ("PolynomialLR", lambda o: lr_scheduler.PolynomialLR(o, total_iters=8, power=2.0)),
    ("CosineAnnealingLR", lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=6, eta_min=0.001)),
    ("LambdaLR", lambda o: lr_scheduler.LambdaLR(o, lr_lambda=_halve)),
    ("MultiplicativeLR", lambda o: lr_scheduler.MultiplicativeLR(o, lr_lambda=_shrink)),
    ("CosineAnnealingWarmRestarts", lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01)),
    ("CyclicLR", lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.2, step_size_up=3, mode="triangular2"),
     False, True),
    ("OneCycleLR", lambda o: lr_scheduler.OneCycleLR(o, max_lr=0.3, total_steps=EPOCHS + 1), False, True),
    ("SequentialLR", lambda o: lr_scheduler.SequentialLR(
        o, [lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3), lr_scheduler.ExponentialLR(o, gamma=0.9)],
        milestones=[4])),
    ("ChainedScheduler", lambda o: lr_scheduler.ChainedScheduler(
        [lr_scheduler.StepLR(o, step_size=4, gamma=0.5), lr_scheduler.ExponentialLR(o, gamma=0.95)])),
    ("ReduceLROnPlateau", lambda o: lr_scheduler.ReduceLROnPlateau(o, factor=0.5, patience=2), True),
))


def optimizer_of(momentum: float = 0.9) -> SGD:
    """SGD over two parameter groups with gradients, so every optimizer step moves them."""
    generator = torch.Generator().manual_seed(0)
    first, second = (torch.randn(3, generator=generator, requires_grad=True) for _ in range(2))
    for parameter in (first, second):
        parameter.grad = torch.randn(3, generator=generator)
    return SGD([{"params": [first], "lr": 0.1}, {"params": [second], "lr": 0.05}], lr=0.1, momentum=momentum)


def learning_rates(schedule: Schedule, epochs: int, optimizer: SGD | None = None,
                   scheduler: object | None = None) -> list[list[float]]:
    """The rates of every group after each of `epochs` steps (an optimizer step, then the scheduler's)."""
    optimizer = optimizer or optimizer_of()
    scheduler = scheduler or schedule.make(optimizer)
    rates = []
    start = getattr(scheduler, "last_epoch", 0)
    for epoch in range(start, start + epochs):
        optimizer.step()
        schedule.step(scheduler, max(epoch, 0) % len(METRICS))
        rates.append([group["lr"] for group in optimizer.param_groups])
    return rates


def resumes_from_state_dict(case: TestCase, schedule: Schedule) -> None:
    """Stopped halfway, saved and loaded into a new optimizer and scheduler, a schedule goes on as
    if never stopped: the same rates, and the same parameters."""
    whole = optimizer_of()
    expected = learning_rates(schedule, EPOCHS, whole)
    first = optimizer_of()
    scheduler = schedule.make(first)
    half = learning_rates(schedule, EPOCHS // 2, first, scheduler)
    saved_optimizer, saved_scheduler = copy.deepcopy(first.state_dict()), copy.deepcopy(scheduler.state_dict())
    second = optimizer_of()
    with torch.no_grad():  # the model's weights, saved beside the optimizer's and scheduler's state
        for mine, saved in zip(parameters(second), parameters(first)):
            mine.copy_(saved)
    resumed = schedule.make(second)  # built first, as a training script resumes: building it sets rates
    second.load_state_dict(saved_optimizer)
    resumed.load_state_dict(saved_scheduler)
    case.assertEqual(half + learning_rates(schedule, EPOCHS - EPOCHS // 2, second, resumed), expected)
    case.assertEqual(parameters(second), parameters(whole))


def parameters(optimizer: SGD) -> list[torch.Tensor]:
    return [parameter for group in optimizer.param_groups for parameter in group["params"]]


def applies_its_rates(case: TestCase, schedule: Schedule) -> None:
    """The rate a scheduler reports (`get_last_lr`) is the one the optimizer steps with: with plain
    SGD, every step moves each parameter by exactly that rate times its gradient."""
    optimizer = optimizer_of(momentum=0.9 if schedule.momentum else 0.0)
    scheduler = schedule.make(optimizer)
    for epoch in range(EPOCHS):
        before = [p.detach().clone() for p in parameters(optimizer)]
        reported = scheduler.get_last_lr() if hasattr(scheduler, "get_last_lr") else None
        rates = [group["lr"] for group in optimizer.param_groups]
        if reported is not None:
            case.assertEqual(reported, rates)
        optimizer.step()
        if not schedule.momentum:  # with momentum the move is not lr * grad
            after = [p.detach() for p in parameters(optimizer)]
            grads = [p.grad for p in parameters(optimizer)]
            case.assertEqual([b - a for b, a in zip(before, after)], [rate * g for rate, g in zip(rates, grads)])
        schedule.step(scheduler, epoch)


def matches_closed_form(case: TestCase, schedule: Schedule) -> None:
    """Stepped one epoch at a time (the chainable form), a scheduler gives the rates of its closed
    form at every epoch: two ways PyTorch computes the same schedule."""
    optimizer = optimizer_of()
    stepped = schedule.make(optimizer)
    closed = schedule.make(optimizer_of())
    for epoch in range(1, EPOCHS + 1):
        optimizer.step()
        stepped.step()
        closed.last_epoch = epoch
        case.assertEqual(stepped.get_last_lr(), closed._get_closed_form_lr(), msg=f"epoch {epoch}")


CLOSED_FORM = tuple(s for s in SCHEDULES if hasattr(getattr(lr_scheduler, s.name), "_get_closed_form_lr"))


# --- SWA (torch.optim.swa_utils) --------------------------------------------------------------------

def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))


def averaged_model_is_the_running_mean(case: TestCase) -> None:
    """AveragedModel's parameters after k updates are the mean of the k snapshots (SWA), or their
    exponential moving average with the given decay (EMA), computed here by hand."""
    model = _model()
    swa, ema = AveragedModel(model), AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.75))
    snapshots = []
    for step in range(5):
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.full_like(parameter, 0.1 * (step + 1)))
        snapshots.append([p.detach().clone() for p in model.parameters()])
        swa.update_parameters(model)
        ema.update_parameters(model)
    mean = [sum(values) / len(values) for values in zip(*snapshots)]
    moving = snapshots[0]
    for snapshot in snapshots[1:]:
        moving = [0.75 * m + 0.25 * s for m, s in zip(moving, snapshot)]
    case.assertEqual(list(swa.module.parameters()), mean)
    case.assertEqual(list(ema.module.parameters()), moving)
    case.assertEqual(int(swa.n_averaged), 5)


def swalr_anneals_to_its_rate(case: TestCase, strategy: str) -> None:
    """SWALR moves every group's rate from where it was to `swa_lr` over `anneal_epochs` along the
    strategy's curve a(t) (cos: (1 - cos(pi t)) / 2; linear: t), then holds it: after k steps the
    rate is swa_lr * a(t) + start * (1 - a(t)), t = min(1, k / anneal_epochs)."""
    optimizer = optimizer_of()
    scheduler = SWALR(optimizer, swa_lr=0.02, anneal_epochs=4, anneal_strategy=strategy)
    curve = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    for epoch in range(1, 8):
        optimizer.step()
        scheduler.step()
        share = curve(min(1.0, epoch / 4))
        case.assertEqual([group["lr"] for group in optimizer.param_groups],
                         [0.02 * share + start * (1 - share) for start in (0.1, 0.05)], msg=f"epoch {epoch}")


def update_bn_recomputes_the_statistics(case: TestCase) -> None:
    """update_bn gives every BatchNorm the mean and variance of the data it is shown (a cumulative
    average over the batches), as computed here from the activations that reach it."""
    model = _model()
    generator = torch.Generator().manual_seed(1)
    batches = [torch.randn(8, 3, generator=generator) for _ in range(4)]
    update_bn(batches, model)
    reaching = torch.cat([model[0](batch) for batch in batches]).detach()
    norm = model[1]
    case.assertEqual(norm.running_mean, reaching.mean(0), atol=1e-5, rtol=1e-5)
    per_batch = torch.stack([model[0](batch).detach().var(0, unbiased=True) for batch in batches])
    case.assertEqual(norm.running_var, per_batch.mean(0), atol=1e-5, rtol=1e-5)

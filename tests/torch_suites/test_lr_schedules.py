"""The LR-scheduler and SWA checks of tier breadth (harness/torch_suites/optim/lrschedules.py) pass on
torch's schedulers and fail on ones that lose their place, misreport their rate or average wrongly.
In-process, with this interpreter's torch."""

from __future__ import annotations

import pytest
import torch
from torch.optim import lr_scheduler, swa_utils

from harness.torch_suites.optim import lrschedules
from harness.torch_suites.optim.lrschedules import Schedule
from tests.torch_suites.test_transform_checks import Case

pytestmark = pytest.mark.integration


class Forgetful(lr_scheduler.StepLR):
    """Saves everything but where it is in its schedule."""

    def state_dict(self) -> dict:
        return {key: value for key, value in super().state_dict().items() if key not in ("last_epoch", "_step_count")}


class Boastful(lr_scheduler.ExponentialLR):
    """Reports a rate other than the one the optimizer steps with."""

    def get_last_lr(self) -> list[float]:
        return [rate * 2 for rate in super().get_last_lr()]


@pytest.mark.parametrize("schedule", lrschedules.SCHEDULES, ids=lambda schedule: schedule.name)
def test_every_scheduler_of_torch_passes(schedule):
    lrschedules.resumes_from_state_dict(Case(), schedule)
    lrschedules.applies_its_rates(Case(), schedule)


def test_a_scheduler_that_loses_its_place_or_misreports_its_rate_fails():
    with pytest.raises(AssertionError, match="not close|not equal"):
        lrschedules.resumes_from_state_dict(Case(), Schedule("Forgetful", lambda o: Forgetful(o, step_size=4, gamma=0.5)))
    with pytest.raises(AssertionError, match="not close|not equal"):
        lrschedules.applies_its_rates(Case(), Schedule("Boastful", lambda o: Boastful(o, gamma=0.8)))


def test_the_swa_checks_fail_on_a_wrong_average(monkeypatch):
    lrschedules.averaged_model_is_the_running_mean(Case())
    default = swa_utils.get_swa_multi_avg_fn()

    def halfway(averaged, current, num_averaged):  # every update moves halfway: not a mean
        return default(averaged, current, torch.tensor(1))

    monkeypatch.setattr(lrschedules, "AveragedModel",
                        lambda model, **kw: swa_utils.AveragedModel(model, multi_avg_fn=kw.get("multi_avg_fn", halfway)))
    with pytest.raises(AssertionError, match="not close"):
        lrschedules.averaged_model_is_the_running_mean(Case())

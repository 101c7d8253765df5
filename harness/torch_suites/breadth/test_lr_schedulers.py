"""torch.optim's learning-rate schedulers and SWA helpers, pure Python that a JIT runs (bodies in
harness/torch_suites/optim/lrschedules.py; ours, as PyTorch's own tests of them ship in no wheel):

- TestLRSchedules.test_resumes_from_state_dict (every scheduler): stopped halfway, saved, loaded into
  a new optimizer and scheduler, it gives the uninterrupted run's rates and parameters;
- test_applies_its_rates (every scheduler): the reported rate is the one SGD steps with;
- test_matches_closed_form (schedulers with a closed form): stepped and closed form agree each epoch;
- TestSWAHelpers (ours): AveragedModel's SWA and EMA
  averages, SWALR's annealing curves, update_bn's batch-norm statistics, each against arithmetic here.

`--select StepLR` runs one scheduler's checks (or `SWA` for the SWA helpers).
"""

from torch.testing._internal.common_utils import TestCase, instantiate_parametrized_tests, parametrize, run_tests

from harness.torch_suites.optim import lrschedules
from harness.torch_suites.shared.entries import Entries, drop_tests_without_entries

ENTRIES = Entries((*lrschedules.SCHEDULES, "SWA"), full_name=lambda entry: getattr(entry, "name", entry))
CHOSEN = ENTRIES.chosen()
SCHEDULES = [entry for entry in CHOSEN if entry != "SWA"]
CLOSED_FORM = [schedule for schedule in SCHEDULES if schedule in lrschedules.CLOSED_FORM]


class TestLRSchedules(TestCase):
    @parametrize("schedule", SCHEDULES, name_fn=lambda schedule: schedule.name)
    def test_resumes_from_state_dict(self, schedule):
        lrschedules.resumes_from_state_dict(self, schedule)

    @parametrize("schedule", SCHEDULES, name_fn=lambda schedule: schedule.name)
    def test_applies_its_rates(self, schedule):
        lrschedules.applies_its_rates(self, schedule)

    @parametrize("schedule", CLOSED_FORM, name_fn=lambda schedule: schedule.name)
    def test_matches_closed_form(self, schedule):
        lrschedules.matches_closed_form(self, schedule)


class TestSWAHelpers(TestCase):
    def test_averaged_model_is_the_running_mean(self):
        lrschedules.averaged_model_is_the_running_mean(self)

    @parametrize("strategy", ["cos", "linear"])
    def test_swalr_anneals_to_its_rate(self, strategy):
        lrschedules.swalr_anneals_to_its_rate(self, strategy)

    def test_update_bn_recomputes_the_statistics(self):
        lrschedules.update_bn_recomputes_the_statistics(self)


drop_tests_without_entries(TestLRSchedules, {"test_resumes_from_state_dict": SCHEDULES,
                                             "test_applies_its_rates": SCHEDULES, "test_matches_closed_form": CLOSED_FORM})
instantiate_parametrized_tests(TestLRSchedules)
instantiate_parametrized_tests(TestSWAHelpers)
if "SWA" not in CHOSEN:
    del TestSWAHelpers

if __name__ == "__main__":
    run_tests()

"""Differentiable optimizer steps over `optim_db` (CPU, float64): for every optimizer that takes
`differentiable=True` and every input its OptimizerInfo gives, one step checked by gradcheck
against the parameter, its gradient and the optimizer's state. PyTorch's class name
(`TestDifferentiableOptimizer` of test_optim.py, whose tests are hand-written per optimizer), our
test name: `test_step_gradcheck_{optimizer}`. Bodies in harness/torch_suites/optim/differentiable.py.
"""

import torch
from torch.testing._internal.common_optimizers import optim_db, optims
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.optim.differentiable import check_differentiable_step, differentiable
from harness.torch_suites.shared.entries import Entries, instantiate_cpu_tests

ENTRIES = Entries(tuple(info for info in optim_db if differentiable(info)), full_name=lambda info: info.optim_cls.__name__)
CHOSEN = ENTRIES.chosen()


class TestDifferentiableOptimizer(TestCase):
    @optims(CHOSEN, dtypes=[torch.float64])
    def test_step_gradcheck(self, device, dtype, optim_info):
        check_differentiable_step(device, dtype, optim_info)


instantiate_cpu_tests(TestDifferentiableOptimizer, globals(), CHOSEN)

if __name__ == "__main__":
    run_tests()

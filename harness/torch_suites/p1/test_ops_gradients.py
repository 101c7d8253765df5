"""PyTorch's gradient check on `op_db` and `hop_db`: `TestBwdGradients.test_fn_grad` (CPU, float64).

This is the check of PyTorch's `test/test_ops_gradients.py` under the same class and test name,
made through PyTorch's own `TestGradients._grad_test_helper` (shipped in the wheel): gradcheck of
every sample input of every op that supports backward, with the op's gradcheck settings (fast
mode, batched gradients, nondeterminism tolerance), so each OpInfo's decorations for
`TestBwdGradients.test_fn_grad` apply. The affordable subset of PyTorch's gradient tests:
float64 only (PyTorch adds complex128), the function variant only (PyTorch adds in-place
gradients, gradgrad and forward-mode checks); the whole database in about two CPU minutes.
`custom_op_db`'s gradients run in test_function_db.py.
"""

import torch
from torch.testing._internal.common_device_type import OpDTypes, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestGradients, run_tests
from torch.testing._internal.hop_db import hop_db

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries([*op_db, *hop_db])
OPS = ENTRIES.chosen()


class TestBwdGradients(TestGradients):
    @ops(OPS, dtypes=OpDTypes.supported, allowed_dtypes=(torch.float64,))
    def test_fn_grad(self, device, dtype, op):
        opchecks.fn_grad(self, device, dtype, op)


instantiate_cpu_tests(TestBwdGradients, globals(), OPS)

if __name__ == "__main__":
    run_tests()

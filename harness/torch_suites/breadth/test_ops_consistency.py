"""PyTorch's generic op checks of tier P1's test_ops_consistency.py at PyTorch's breadth: in every
dtype PyTorch's `test/test_ops.py` runs them in (CPU, each one the op supports).

- TestCommon.test_noncontiguous_samples: float32, int64 and complex64 (P1: float32);
- TestCommon.test_variant_consistency_eager: float32 and complex64 (P1: float32).
Bodies in `harness/torch_suites/eager/opchecks.py`, under PyTorch's class and test names, so each
OpInfo's decorations for them apply (see p1/test_ops_consistency.py for what each checks).
"""

from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries(op_db)
OPS = ENTRIES.chosen()
TestCommon = opchecks.common_tests(OPS, __name__, opchecks.PYTORCH_COMMON)
instantiate_cpu_tests(TestCommon, globals(), OPS)

if __name__ == "__main__":
    run_tests()

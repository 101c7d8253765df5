"""PyTorch's generic op checks on `op_db`: contiguous against non-contiguous samples, and the
method, in-place and operator variants against the function (CPU, float32).

Both checks are the ones PyTorch's `test/test_ops.py` makes under the same names (class and bodies
in `harness/torch_suites/eager/opchecks.py`), so the test class is named `TestCommon` and the tests
`test_noncontiguous_samples` / `test_variant_consistency_eager`: the skips, expected failures and
tolerance overrides that each OpInfo carries for those names (`DecorateInfo`) apply as they do in
PyTorch's own run.

- test_noncontiguous_samples: every sample input is run as given and as a non-contiguous copy
  (`SampleInput.noncontiguous()`); outputs must be equal, and where the op supports backward in
  the dtype, so must the gradients of the inputs for a random output gradient (given
  non-contiguous on the strided side). PyTorch also runs int64 and complex64; we run float32.
- test_variant_consistency_eager: the method, in-place, operator and in-place operator variants
  and every alias give the function's output and input gradient for every sample; an in-place
  variant must refuse a sample that would broadcast its input, and must return its input's
  storage. PyTorch also runs complex64; we run float32.
"""

from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.eager import opchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries(op_db)
OPS = ENTRIES.chosen()
TestCommon = opchecks.common_tests(OPS, __name__)
instantiate_cpu_tests(TestCommon, globals(), OPS)

if __name__ == "__main__":
    run_tests()

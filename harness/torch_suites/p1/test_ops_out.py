"""PyTorch's `out=` checks on `op_db` (CPU, one dtype per op: float32 where the op supports it).

The checks are the ones PyTorch's `test/test_ops.py` makes under the same names, written here in
our own code against the OpInfo API, so the class is `TestCommon` and the tests `test_out` and
`test_out_warning`: each OpInfo's skips and expected failures for those names apply. Like
PyTorch, `test_out` runs one supported dtype per op (`OpDTypes.any_one`: float32 first) and
`test_out_warning` float32 or the op's first supported dtype. PyTorch also runs both on
`python_ref_db`: tier breadth does (breadth/test_ops_refs.py). Bodies in `harness/torch_suites/eager/outchecks.py`.

For every sample input of an op that claims `supports_out`:
- test_out: `out=` filled with NaN (or the integer maximum) gives the function's result and keeps
  its strides and storage; a non-contiguous `out=` likewise; an empty `out=` is resized without the
  "An output with one or more elements" warning; an int64 `out=` for a floating-point result is
  refused (unless the op is a factory function called without a dtype). The wrong-device case is
  PyTorch's too, but PyTorch makes it only off CPU.
- test_out_warning: a non-empty `out=` of the wrong shape gives the right values, with the warning.
An op that claims no `out=` support must refuse `out=`.
"""

from torch.testing._internal.common_device_type import OpDTypes, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.eager import outchecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries(op_db)
OPS = ENTRIES.chosen()


class TestCommon(TestCase):
    exact_dtype = True

    @ops(OPS, dtypes=OpDTypes.any_one)
    def test_out(self, device, dtype, op):
        outchecks.out(self, device, dtype, op)

    @ops(OPS, dtypes=OpDTypes.none)
    def test_out_warning(self, device, op):
        outchecks.out_warning(self, device, op)


instantiate_cpu_tests(TestCommon, globals(), OPS)

if __name__ == "__main__":
    run_tests()

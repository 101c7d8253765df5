"""PyTorch's tag check: `TestTags.test_tags` of `test/test_ops.py` (CPU, one dtype per entry,
float32 first) on `op_db` and `python_ref_db`, body in `harness/torch_suites/eager/fakechecks.py`, under
PyTorch's class and test name so each OpInfo's decorations apply. Compilers read an operator's
tags (`torch.Tag`, from native_functions.yaml): the op, and each ATen operator it reaches, that
changes its input's size or strides in place must be tagged `inplace_view`.
"""

from torch.testing._internal.common_device_type import OpDTypes, ops
from torch.testing._internal.common_methods_invocations import op_db, python_ref_db
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.eager import fakechecks
from harness.torch_suites.shared.entries import instantiate_cpu_tests, op_entries

ENTRIES = op_entries([*op_db, *python_ref_db])
OPS = ENTRIES.chosen()


class TestTags(TestCase):
    @ops(OPS, dtypes=OpDTypes.any_one)
    def test_tags(self, device, dtype, op):
        fakechecks.tags(self, device, dtype, op)


instantiate_cpu_tests(TestTags, globals(), OPS)

if __name__ == "__main__":
    run_tests()

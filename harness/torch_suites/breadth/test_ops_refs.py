"""PyTorch's checks of its Python references: the `python_ref_db` tests of `TestCommon` in
`test/test_ops.py` (CPU, every dtype each reference supports, as PyTorch), bodies in
`harness/torch_suites/eager/refchecks.py`, under PyTorch's class and test names so each entry's
decorations apply:
- test_python_ref: the reference, with `torch.foo` calls inside it run as `torch._refs.foo`
  (`TorchRefsMode(strict=True)`), against its torch operator on every reference input: metadata,
  being a view, values (where a low-precision result differs, the reference must be the closer to
  the operator run in float64 / complex128);
- test_python_ref_torch_fallback: the same with `torch.foo` calls left to torch;
- test_python_ref_meta: the reference on fake tensors gives the real results' metadata;
- test_python_ref_executor (`aten`): the same as test_python_ref_torch_fallback, the reference
  traced by `torch._prims.executor`; PyTorch runs it on CUDA only, so on CPU it is skipped as
  PyTorch's is;
- test_python_ref_errors (no dtype): every error input, on fake tensors, raises its error;
- test_out (one dtype, float32 first) and test_out_warning (no dtype): tier P1's `out=` checks
  (p1/test_ops_out.py, bodies in `outchecks.py`) on the references, as PyTorch runs them.
"""

import contextlib

from torch.testing._internal.common_device_type import OpDTypes, onlyCUDA, ops
from torch.testing._internal.common_methods_invocations import python_ref_db
from torch.testing._internal.common_utils import TestCase, parametrize, run_tests

from harness.torch_suites.eager import outchecks, refchecks
from harness.torch_suites.shared.entries import drop_tests_without_entries, instantiate_cpu_tests, op_entries

ENTRIES = op_entries(python_ref_db)
OPS = ENTRIES.chosen()
WITH_ERRORS = [op for op in OPS if op.error_inputs_func is not None]


class TestCommon(TestCase):
    exact_dtype = True

    @ops(OPS)
    def test_python_ref(self, device, dtype, op):
        refchecks.python_ref(self, device, dtype, op, refchecks.strict_refs)

    @ops(OPS)
    def test_python_ref_torch_fallback(self, device, dtype, op):
        refchecks.python_ref(self, device, dtype, op, contextlib.nullcontext)

    @ops(OPS)
    def test_python_ref_meta(self, device, dtype, op):
        refchecks.python_ref_meta(self, device, dtype, op)

    @onlyCUDA
    @ops(OPS)
    @parametrize("executor", ["aten"])
    def test_python_ref_executor(self, device, dtype, op, executor):
        refchecks.python_ref(self, device, dtype, refchecks.traced(op))

    @ops(WITH_ERRORS, dtypes=OpDTypes.none)
    def test_python_ref_errors(self, device, op):
        refchecks.errors(self, device, op, fake=True)

    @ops(OPS, dtypes=OpDTypes.any_one)
    def test_out(self, device, dtype, op):
        outchecks.out(self, device, dtype, op)

    @ops(OPS, dtypes=OpDTypes.none)
    def test_out_warning(self, device, op):
        outchecks.out_warning(self, device, op)


drop_tests_without_entries(TestCommon, {"test_python_ref_errors": WITH_ERRORS})
instantiate_cpu_tests(TestCommon, globals(), OPS)

if __name__ == "__main__":
    run_tests()

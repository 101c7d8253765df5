"""The rest of PyTorch's `TestCommon` checks of `test/test_ops.py` (CPU), bodies in
`harness/torch_suites/eager/commonchecks.py` (and `refchecks.errors`), under PyTorch's class and test
names so each OpInfo's decorations apply; with PyTorch's databases and dtypes:
- test_dtypes (`op_db` and `python_ref_db`, no dtype): every dtype is tried on every sample,
  forward and backward; the dtypes that work are the ones claimed (a reference may work in more);
- test_errors (`op_db` entries with error inputs, no dtype): each error input raises its error
  with its message; test_errors_sparse: the same for sparse error inputs, in five sparse layouts;
- test_complex_half_reference_testing (complex32): agrees with the op in complex64, cast back;
- test_non_standard_bool_values (bool): booleans stored as bytes other than 0 and 1 change nothing;
- test_promotes_int_to_float (integer and bool dtypes, ops claiming it): a floating-point result;
- test_out_requires_grad_error (float32, complex64; ops with `out=` and autograd or factories):
  an `out=` that requires grad is refused;
- test_meta_consistency_out_dtype_mismatch (float32, ops with `out=`): an `out=` of another
  dtype is refused on the meta device exactly when it is on CPU;
- test_reduction_ops_reduce (`op_db` entries whose ATen operator is tagged `reduction`, no dtype):
  given `dim`, the result has the input's elements over the reduced sizes;
- test_out_integral_dtype (int16; references of reductions with `out=` and `dtype=`): `out=` int32
  refuses another `dtype=` argument, with the reduction's own message;
- test_multiple_devices (float32, int64) and test_compare_cpu (one dtype; entries without a NumPy
  reference): PyTorch runs them on CUDA only, so on CPU they are skipped as PyTorch's are.
test_out and test_out_warning over `op_db` are tier P1's (p1/test_ops_out.py).
"""

import torch
from torch.testing._internal.common_device_type import OpDTypes, deviceCountAtLeast, onlyCPU, onlyCUDA, ops
from torch.testing._internal.common_dtype import integral_types_and
from torch.testing._internal.common_methods_invocations import op_db, python_ref_db
from torch.testing._internal.common_utils import TestCase, parametrize, run_tests, suppress_warnings

from harness.torch_suites.eager import commonchecks, refchecks
from harness.torch_suites.shared.entries import drop_tests_without_entries, instantiate_cpu_tests, op_entries

ENTRIES = op_entries([*op_db, *python_ref_db])
OPS = ENTRIES.chosen()
OP_DB = [op for op in OPS if op not in python_ref_db]
WITH_ERRORS = [op for op in OP_DB if op.error_inputs_func is not None]
WITH_SPARSE_ERRORS = [op for op in OP_DB if op.error_inputs_sparse_func is not None]
PROMOTING = [op for op in OP_DB if op.promotes_int_to_float]
WITH_OUT = [op for op in OP_DB if op.supports_out]
OUT_WITH_GRAD = [op for op in OP_DB if op.supports_out and (op.supports_autograd or op.is_factory_function)]
REDUCTIONS = [op for op in OP_DB if commonchecks.has_reduction_tag(op)]
INTEGRAL_OUT = [op for op in OPS if commonchecks.takes_integral_out(op)]
WITHOUT_NUMPY_REF = [op for op in OPS if op.ref is None]
SPARSE_LAYOUTS = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc, torch.sparse_coo)


class TestCommon(TestCase):
    exact_dtype = True

    @ops(OPS, dtypes=OpDTypes.none)
    def test_dtypes(self, device, op):
        commonchecks.dtypes(self, device, op, is_reference=op in python_ref_db)

    @ops(WITH_ERRORS, dtypes=OpDTypes.none)
    def test_errors(self, device, op):
        refchecks.errors(self, device, op)

    @ops(WITH_SPARSE_ERRORS, dtypes=OpDTypes.none)
    @parametrize("layout", SPARSE_LAYOUTS)
    def test_errors_sparse(self, device, op, layout):
        commonchecks.errors_sparse(self, device, op, layout)

    @ops(OP_DB, allowed_dtypes=(torch.complex32,))
    def test_complex_half_reference_testing(self, device, dtype, op):
        commonchecks.complex_half_reference(self, device, dtype, op)

    @ops(OP_DB, allowed_dtypes=(torch.bool,))
    def test_non_standard_bool_values(self, device, dtype, op):
        commonchecks.non_standard_bool_values(self, device, dtype, op)

    @ops(PROMOTING, allowed_dtypes=integral_types_and(torch.bool))
    def test_promotes_int_to_float(self, device, dtype, op):
        commonchecks.promotes_int_to_float(self, device, dtype, op)

    @ops(OUT_WITH_GRAD, allowed_dtypes=(torch.float32, torch.complex64))
    def test_out_requires_grad_error(self, device, dtype, op):
        commonchecks.out_requires_grad_error(self, device, dtype, op)

    @onlyCPU
    @ops(WITH_OUT, allowed_dtypes=(torch.float32,))
    def test_meta_consistency_out_dtype_mismatch(self, device, dtype, op):
        commonchecks.meta_consistency_out_dtype_mismatch(self, device, dtype, op)

    @ops(REDUCTIONS, dtypes=OpDTypes.none)
    def test_reduction_ops_reduce(self, device, op):
        commonchecks.reduction_ops_reduce(self, device, op)

    @ops(INTEGRAL_OUT, dtypes=(torch.int16,))
    def test_out_integral_dtype(self, device, dtype, op):
        commonchecks.out_integral_dtype(self, device, dtype, op)

    @onlyCUDA
    @deviceCountAtLeast(2)
    @ops(OP_DB, allowed_dtypes=(torch.float32, torch.long))
    def test_multiple_devices(self, devices, dtype, op):
        commonchecks.multiple_devices(self, devices, dtype, op)

    @onlyCUDA
    @suppress_warnings
    @ops(WITHOUT_NUMPY_REF, dtypes=OpDTypes.any_common_cpu_cuda_one)
    def test_compare_cpu(self, device, dtype, op):
        commonchecks.compare_cpu(self, device, dtype, op)


drop_tests_without_entries(TestCommon, {
    "test_errors": WITH_ERRORS, "test_errors_sparse": WITH_SPARSE_ERRORS, "test_complex_half_reference_testing": OP_DB,
    "test_non_standard_bool_values": OP_DB, "test_promotes_int_to_float": PROMOTING,
    "test_out_requires_grad_error": OUT_WITH_GRAD, "test_meta_consistency_out_dtype_mismatch": WITH_OUT,
    "test_reduction_ops_reduce": REDUCTIONS, "test_out_integral_dtype": INTEGRAL_OUT, "test_multiple_devices": OP_DB, "test_compare_cpu": WITHOUT_NUMPY_REF})
instantiate_cpu_tests(TestCommon, globals(), OPS)

if __name__ == "__main__":
    run_tests()

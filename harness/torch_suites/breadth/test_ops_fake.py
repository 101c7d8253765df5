"""PyTorch's fake-tensor checks: `TestFakeTensor` of `test/test_ops.py` (CPU) on `op_db`, bodies
in `harness/torch_suites/eager/fakechecks.py`, under PyTorch's class and test names so each OpInfo's
decorations apply. Fake tensors carry metadata only; compilers trace through them, so an
operator's fake (meta) implementation must give the real results' metadata:
- test_fake (one dtype per op, float32 first): each sample on fake tensors gives fake results
  with the real results' shapes, strides, dtypes and aliasing of inputs;
- test_fake_autocast: the same under CPU autocast;
- test_pointwise_ops: every ATen operator tagged pointwise that the op reaches on fake tensors
  returns its inputs' broadcast shape;
- test_fake_crossref_backward_no_amp / _amp (float32, ops with autograd): forward and backward
  under CrossRefFakeMode; PyTorch runs them on CUDA only, so on CPU they are skipped as PyTorch's;
- test_strided_layout (factory functions of `op_db` and `python_ref_db`, every supported dtype):
  `layout=torch.strided` is honoured.
As PyTorch, the fake tensor cache and its cross-check are on for these tests.
"""

import contextlib
import unittest.mock

import torch
from torch.testing._internal.common_device_type import OpDTypes, onlyCUDA, ops
from torch.testing._internal.common_methods_invocations import op_db, python_ref_db
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.eager import fakechecks
from harness.torch_suites.shared.entries import drop_tests_without_entries, instantiate_cpu_tests, op_entries

ENTRIES = op_entries([*op_db, *python_ref_db])
OPS = ENTRIES.chosen()
OP_DB = [op for op in OPS if op not in python_ref_db]
WITH_AUTOGRAD = [op for op in OP_DB if op.supports_autograd]
FACTORIES = [op for op in OPS if op.is_factory_function]
FAKE_CACHE = ("torch._dynamo.config.fake_tensor_cache_enabled", "torch._dynamo.config.fake_tensor_cache_crosscheck_enabled")


class TestFakeTensor(TestCase):
    def setUp(self):
        super().setUp()
        for setting in FAKE_CACHE:
            patch = unittest.mock.patch(setting, True)
            patch.start()
            self.addCleanup(patch.stop)

    @ops(OP_DB, dtypes=OpDTypes.any_one)
    def test_pointwise_ops(self, device, dtype, op):
        fakechecks.pointwise_ops(self, device, dtype, op)

    @ops(OP_DB, dtypes=OpDTypes.any_one)
    def test_fake(self, device, dtype, op):
        fakechecks.fake(self, device, dtype, op)

    @ops(OP_DB, dtypes=OpDTypes.any_one)
    def test_fake_autocast(self, device, dtype, op):
        fakechecks.fake(self, device, dtype, op, lambda: torch.amp.autocast(torch.device(device).type))

    @onlyCUDA
    @ops(WITH_AUTOGRAD, allowed_dtypes=(torch.float32,))
    def test_fake_crossref_backward_no_amp(self, device, dtype, op):
        fakechecks.fake_crossref_backward(device, dtype, op, contextlib.nullcontext)

    @onlyCUDA
    @ops(WITH_AUTOGRAD, allowed_dtypes=(torch.float32,))
    def test_fake_crossref_backward_amp(self, device, dtype, op):
        fakechecks.fake_crossref_backward(device, dtype, op, lambda: torch.amp.autocast("cuda"))

    @ops(FACTORIES)
    def test_strided_layout(self, device, dtype, op):
        fakechecks.strided_layout(self, device, dtype, op)


drop_tests_without_entries(TestFakeTensor, {
    "test_pointwise_ops": OP_DB, "test_fake": OP_DB, "test_fake_autocast": OP_DB,
    "test_fake_crossref_backward_no_amp": WITH_AUTOGRAD, "test_fake_crossref_backward_amp": WITH_AUTOGRAD,
    "test_strided_layout": FACTORIES})
instantiate_cpu_tests(TestFakeTensor, globals(), OPS)

if __name__ == "__main__":
    run_tests()

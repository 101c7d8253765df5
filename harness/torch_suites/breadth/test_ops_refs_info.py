"""PyTorch's bookkeeping of its Python references: `TestRefsOpsInfo` of `test/test_ops.py` (CPU),
one test per public name of `torch._refs` and its submodules (`special`, `nn.functional`, `fft`,
`_conversions`), under PyTorch's class and test names:
- test_refs_are_in_python_ref_db: every out-of-place reference has a `python_ref_db` entry (so
  tier breadth's test_ops_refs.py checks it) and no in-place one has;
- test_refs_are_in_decomp_table: every reference is a decomposition in
  `torch._decomp.decomposition_table`, the table compilers lower operators with.
PyTorch's test file also lists the references known to break either rule (its skip and
expected-failure lists are not in the wheel); those fail here, in every configuration alike.
"""

import importlib

import torch._decomp
from torch.testing._internal.common_methods_invocations import python_ref_db
from torch.testing._internal.common_utils import TestCase, parametrize, run_tests

from harness.torch_suites.shared.entries import Entries, instantiate_cpu_tests

MODULES = ("_refs", "_refs.special", "_refs.nn.functional", "_refs.fft", "_refs._conversions")
ENTRIES = Entries(tuple(f"{module}.{name}" for module in MODULES
                        for name in importlib.import_module(f"torch.{module}").__all__), full_name=str)
NAMES = ENTRIES.chosen()
IN_DB = frozenset(entry.name for entry in python_ref_db)


def _implementation(name: str):
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(f"torch.{module}"), attribute)


class TestRefsOpsInfo(TestCase):
    @parametrize("op", NAMES)
    def test_refs_are_in_python_ref_db(self, op):
        if op.endswith("_"):
            self.assertNotIn(op, IN_DB, f"{op} is in place and should have no entry")
        else:
            self.assertTrue(op in IN_DB, f"{op} has no python_ref_db entry")

    @parametrize("op", NAMES)
    def test_refs_are_in_decomp_table(self, op):
        self.assertIn(_implementation(op), torch._decomp.decomposition_table.values(),
                      f"{op} is not in torch._decomp.decomposition_table")


instantiate_cpu_tests(TestRefsOpsInfo, globals(), NAMES)

if __name__ == "__main__":
    run_tests()

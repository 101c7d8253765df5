"""torch.export over `op_db` (CPU, float32): each OpInfo's first samples exported non-strict and strict,
and the user's module around the op exported strict after its forward was made hot; names are ours.

Tests, names and what each proves: docs/torch_suites.md#torchexport-over-op_db-and-module_db.
"""

from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.p3.compilesuites import export_op_test, instantiate_export_suite, python_entries
from harness.torch_suites.shared.entries import op_entries

ENTRIES = op_entries(op_db)
CHOSEN = ENTRIES.chosen()
instantiate_export_suite(globals(), CHOSEN, "OpInfo", export_op_test, python_entries(CHOSEN))

if __name__ == "__main__":
    run_tests()

"""torch.export over `module_db` (CPU, float32): each ModuleInfo's first module input exported non-strict
and strict, train and eval where they differ, and strict again after the module's forward was made
hot; names are ours.

Tests, names and what each proves: docs/torch_suites.md#torchexport-over-op_db-and-module_db.
"""

from torch.testing._internal.common_modules import module_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.p3.compilesuites import export_module_test, instantiate_export_suite
from harness.torch_suites.shared.entries import Entries

ENTRIES = Entries(tuple(module_db), full_name=lambda info: info.name)
CHOSEN = ENTRIES.chosen()
instantiate_export_suite(globals(), CHOSEN, "ModuleInfo", export_module_test, CHOSEN)

if __name__ == "__main__":
    run_tests()

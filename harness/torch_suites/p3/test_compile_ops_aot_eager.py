"""`op_db` through torch.compile with the `aot_eager` backend: AOTAutograd's forward and backward graphs, run by eager kernels (CPU, float32).

Tests, names and what each proves: docs/torch_suites.md#p3-torchcompile-over-the-databases.
"""

from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.compiled.compilechecks import Backend
from harness.torch_suites.p3.compilesuites import instantiate_op_suite
from harness.torch_suites.shared.entries import op_entries

ENTRIES = op_entries(op_db)
instantiate_op_suite(globals(), ENTRIES.chosen(), Backend.AOT_EAGER)

if __name__ == "__main__":
    run_tests()

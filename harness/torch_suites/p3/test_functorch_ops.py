"""functorch's transforms (`torch.func`: vmap, vjp, jvp, grad) over `op_db` and `autograd_function_db`,
eager and through torch.compile (CPU, float32).

Tests, names and what each proves: docs/torch_suites.md#functorchs-transforms-over-op_db.
"""

from torch.testing._internal.autograd_function_db import autograd_function_db
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.p3.compilesuites import instantiate_transform_suite
from harness.torch_suites.shared.entries import op_entries

ENTRIES = op_entries(op_db + autograd_function_db)
instantiate_transform_suite(globals(), ENTRIES.chosen())

if __name__ == "__main__":
    run_tests()

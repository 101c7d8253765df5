"""`hop_db` (higher-order ops: cond, map, scan, while_loop, flex_attention, ...) through
torch.compile with the `eager`, `aot_eager` and `inductor` backends (CPU, float32); names are ours.

Tests, names and what each proves: docs/torch_suites.md#p3-torchcompile-over-the-databases.
"""

from torch.testing._internal.common_utils import run_tests
from torch.testing._internal.hop_db import hop_db

from harness.torch_suites.compiled.compilechecks import Backend
from harness.torch_suites.p3.compilesuites import hot_op_test, instantiate_suite, op_test
from harness.torch_suites.shared.entries import op_entries

ENTRIES = op_entries(hop_db)
NAMES = {backend: f"test_compile_{backend}" for backend in Backend}
instantiate_suite(globals(), "TestCompiledHopInfo", op_test, hot_op_test, ENTRIES.chosen(), NAMES, "TestCompileHotHopInfo")

if __name__ == "__main__":
    run_tests()

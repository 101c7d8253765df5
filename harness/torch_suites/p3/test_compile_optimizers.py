"""`optim_db` through torch.compile: optimizer steps with the `eager`, `aot_eager` and `inductor`
backends (CPU, float32). Inductor's check keeps PyTorch's name
(`CompiledOptimizerParityTests.test_correctness`), so the OptimizerInfos' skips for it apply; the
others are ours.

Tests, names and what each proves: docs/torch_suites.md#p3-torchcompile-over-the-databases.
"""

from torch.testing._internal.common_optimizers import optim_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.compiled.compilechecks import Backend
from harness.torch_suites.p3.compilesuites import hot_optimizer_test, instantiate_suite, optimizer_test
from harness.torch_suites.shared.entries import Entries

ENTRIES = Entries(tuple(optim_db), full_name=lambda info: info.name)
NAMES = {Backend.EAGER: "test_compile_eager", Backend.AOT_EAGER: "test_compile_aot_eager",
         Backend.INDUCTOR: "test_correctness"}
instantiate_suite(globals(), "CompiledOptimizerParityTests", optimizer_test, hot_optimizer_test, ENTRIES.chosen(),
                  NAMES, "TestCompileHotOptimizerInfo")

if __name__ == "__main__":
    run_tests()

"""`module_db` through torch.compile, forward and backward, with the `eager`, `aot_eager` and
`inductor` backends (CPU, float32). AOTAutograd's check keeps PyTorch's name
(`TestEagerFusionModuleInfo.test_aot_autograd_module_exhaustive`), so the ModuleInfos' skips and
expected failures for it apply; the others are ours.

Tests, names and what each proves: docs/torch_suites.md#p3-torchcompile-over-the-databases.
"""

from torch.testing._internal.common_modules import module_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.compiled.compilechecks import Backend
from harness.torch_suites.p3.compilesuites import hot_module_test, instantiate_suite, module_test
from harness.torch_suites.shared.entries import Entries

ENTRIES = Entries(tuple(module_db), full_name=lambda info: info.name)
NAMES = {Backend.EAGER: "test_compile_eager", Backend.AOT_EAGER: "test_aot_autograd_module_exhaustive",
         Backend.INDUCTOR: "test_compile_inductor"}
instantiate_suite(globals(), "TestEagerFusionModuleInfo", module_test, hot_module_test, ENTRIES.chosen(), NAMES,
                  "TestCompileHotModuleInfo")

if __name__ == "__main__":
    run_tests()

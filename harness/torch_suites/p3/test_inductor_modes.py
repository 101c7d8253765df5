"""Inductor's CPU modes over `module_db` (CPU, float32, eval mode, inference): every module through
the C++ wrapper, freezing, max-autotune with the C++ GEMM templates, AOTInductor (export, package,
load, run), the debug trace, and a second compile from the caches. Names are ours:
`TestInductorModes.test_inductor_{mode}`, one per module.

What each proves: harness/torch_suites/inductor/inductormodes.py; docs/torch_suites.md#inductors-cpu-modes.
"""

from torch.testing._internal.common_modules import module_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.p3 import compilesuites
from harness.torch_suites.shared.entries import Entries
from harness.torch_suites.inductor.inductormodes import Mode, check_mode

ENTRIES = Entries(tuple(module_db), full_name=lambda info: info.name)
CHOSEN = ENTRIES.chosen()
TESTS = {f"test_inductor_{mode}": compilesuites.eval_module_test(
    CHOSEN, lambda case, module_info, device, dtype, mode=mode: check_mode(case, mode, module_info, device, dtype))
    for mode in Mode}
compilesuites.instantiate(globals(), compilesuites.test_class("TestInductorModes", __name__, TESTS), CHOSEN)

if __name__ == "__main__":
    run_tests()

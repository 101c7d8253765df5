"""torch.fx's passes over `module_db` (CPU, float32, eval mode): every module fx can trace, through
each pass on its own graph (interpreter, transformer, shape propagation, splitting, constant
folding, normalization, fusion, serialization, meta tracing, partitioning) and on its ATen graph
(symbolic shapes, fake-tensor propagation, CSE, reinplacing, partitioners, splitter, pass manager,
subgraph rewriter, graph pickler). Names are ours: `TestFxPasses.test_fx_{pass}`, one per module.

What each proves: harness/torch_suites/fxchecks.py; docs/torch_suites.md#fx-torchfxs-passes-over-module_db.
"""

from typing import Any

import torch
from torch.testing._internal.common_modules import TrainEvalMode, module_db, modules
from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites import compilesuites
from harness.torch_suites.entries import Entries
from harness.torch_suites.fxchecks import PASSES, FxPass, check_pass, traceable

ENTRIES = Entries(tuple(info for info in module_db if traceable(info)), full_name=lambda info: info.name)
CHOSEN = ENTRIES.chosen()


def pass_test(fx_pass: FxPass):
    @modules(CHOSEN, allowed_dtypes=(torch.float32,), train_eval_mode=TrainEvalMode.eval_only)
    def test(self: TestCase, device: str, dtype: torch.dtype, module_info: Any, training: bool) -> None:
        check_pass(self, fx_pass, module_info, device, dtype)
    return test


compilesuites.instantiate(globals(), compilesuites.test_class("TestFxPasses", __name__, {f"test_fx_{p.name}": pass_test(p) for p in PASSES}),
                          CHOSEN)

if __name__ == "__main__":
    run_tests()

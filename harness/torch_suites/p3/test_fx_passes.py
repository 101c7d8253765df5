"""torch.fx's passes over `module_db` (CPU, float32, eval mode): every module fx can trace, through
each pass on its own graph (interpreter, transformer, shape propagation, splitting, constant
folding, normalization, fusion, serialization, meta tracing; for embedding tables the sparse_nn
partitioner, for the layers fx has rules for the gradual type checker with refinement and its
constraint generation) and on its ATen graph (symbolic shapes, shape guards with ShapeEnv event
replay, fake-tensor propagation, CSE, reinplacing, the accelerator partitioner's size_based,
cost_aware and kl_based modes on devices smaller than the graph, the capability partitioner,
splitter, both pass managers, the net minimizer against a planted discrepancy, subgraph rewriter,
graph pickler). Names are ours: `TestFxPasses.test_fx_{pass}`, one per module the pass applies to.

What each proves: harness/torch_suites/fx/fxchecks.py; docs/torch_suites.md#fx-torchfxs-passes-over-module_db.
"""

from torch.testing._internal.common_modules import module_db
from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.p3 import compilesuites
from harness.torch_suites.shared.entries import Entries
from harness.torch_suites.fx.fxchecks import PASSES, check_pass, traceable

ENTRIES = Entries(tuple(info for info in module_db if traceable(info)), full_name=lambda info: info.name)
CHOSEN = ENTRIES.chosen()
TESTS = {f"test_fx_{p.name}": compilesuites.eval_module_test(
    subjects, lambda case, module_info, device, dtype, p=p: check_pass(case, p, module_info, device, dtype))
    for p in PASSES if (subjects := [info for info in CHOSEN if p.applies(info)])}
compilesuites.instantiate(globals(), compilesuites.test_class("TestFxPasses", __name__, TESTS), CHOSEN)

if __name__ == "__main__":
    run_tests()

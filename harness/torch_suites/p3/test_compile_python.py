"""User-style Python through torch.compile (harness/torch_suites/pythonpaths.py): containers,
closures, generators, classes, exceptions, context managers and the standard library; and torch's
own Python APIs as a model calls them (harness/torch_suites/modelpaths.py: grad modes, control
flow and torch.func as higher-order ops, checkpointing, custom Functions, subclasses, hooks, lazy
modules, parametrizations, distributions, NumPy, attention, torch.compiler's switches); each traced
by dynamo (`eager`), then through AOTAutograd with its backward (`aot_eager`), and with dynamic
shapes, where shape arithmetic becomes torch.fx's symbolic expressions (`aot_eager_dynamic`).

Names of our own: `TestCompilePython.test_compile_python_{backend}_{case}`; `--select CASE` runs
one case. Each proves a graph was captured and ran (compilechecks.prove_compiled) and compares
with the function run eagerly. Docs: docs/torch_suites.md#p3-torchcompile-over-the-databases.
"""

from collections.abc import Callable

from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites import modelpaths, pythonpaths
from harness.torch_suites.compilechecks import Backend, check_function
from harness.torch_suites.entries import Entries
from harness.torch_suites.pythonpaths import Case

ENTRIES = Entries(pythonpaths.CASES + modelpaths.CASES, full_name=lambda case: case.name)
VARIANTS = {"eager": (Backend.EAGER, None), "aot_eager": (Backend.AOT_EAGER, None),
            "aot_eager_dynamic": (Backend.AOT_EAGER, True)}


def python_test(subject: Case, backend: Backend, dynamic: bool | None) -> Callable[[TestCase], None]:
    def test(self: TestCase) -> None:
        check_function(self, subject.function, subject.inputs, backend, dynamic)
    return test


TestCompilePython = type("TestCompilePython", (TestCase,), {
    f"test_compile_python_{variant}_{subject.name}": python_test(subject, backend, dynamic)
    for subject in ENTRIES.chosen() for variant, (backend, dynamic) in VARIANTS.items()})

if __name__ == "__main__":
    run_tests()

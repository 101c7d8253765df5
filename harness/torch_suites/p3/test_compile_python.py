"""User-style Python through torch.compile (harness/torch_suites/dynamo/pythonpaths.py): containers,
closures, generators, classes, exceptions, context managers and the standard library; and torch's
own Python APIs as a model calls them (harness/torch_suites/dynamo/modelpaths.py: grad modes, control
flow and torch.func as higher-order ops, checkpointing, custom Functions, subclasses, hooks, lazy
modules, parametrizations, distributions, NumPy, attention, torch.compiler's switches); each traced
by dynamo (`eager`), then through AOTAutograd with its backward (`aot_eager`), and with dynamic
shapes, where shape arithmetic becomes torch.fx's symbolic expressions (`aot_eager_dynamic`);
dynamo's own switches and hand-modelled protocols (harness/torch_suites/dynamo/dynamopaths.py); and
recompilation: one compiled function called again in changed states (`recompile_{backend}_{name}`:
a shape, a dtype, `requires_grad`, a global, an attribute, a module's mode), where the guards must
fail and every call must give eager's outputs; and torch.compile's tools around the region
(harness/torch_suites/dynamo/dynamotools.py, `tool_{backend}_{name}`: compiled autograd, ahead-of-time
compile saved and loaded, graph deduplication, compile logging, objects returned from the region),
each proving its own promise too; and graph breaks of every kind (harness/torch_suites/dynamo/graphbreaks.py,
`break_{backend}_{name}`), where the code after the break must resume into a graph of its own.

Names of our own: `TestCompilePython.test_compile_python_{backend}_{case}`; `--select CASE` runs
one case. Each proves a graph was captured and ran (compilechecks.prove_compiled) and compares
with the function run eagerly. Docs: docs/torch_suites.md#p3-torchcompile-over-the-databases.
"""

from collections.abc import Callable

from torch.testing._internal.common_utils import TestCase, run_tests

from harness.torch_suites.dynamo import dynamodebug, dynamopaths, dynamotools, graphbreaks, modelpaths, pythonpaths
from harness.torch_suites.compiled.compilechecks import Backend, check_function, check_recompiles
from harness.torch_suites.dynamo.dynamopaths import Recompile
from harness.torch_suites.dynamo.dynamotools import Tool
from harness.torch_suites.shared.entries import Entries
from harness.torch_suites.dynamo.graphbreaks import Break, check_break
from harness.torch_suites.dynamo.pythonpaths import Case

ENTRIES = Entries(pythonpaths.CASES + modelpaths.CASES + dynamopaths.CASES + dynamopaths.RECOMPILES
                  + dynamotools.TOOLS + dynamodebug.TOOLS + graphbreaks.BREAKS, full_name=lambda case: case.name)
VARIANTS = {"eager": (Backend.EAGER, None), "aot_eager": (Backend.AOT_EAGER, None),
            "aot_eager_dynamic": (Backend.AOT_EAGER, True)}
RECOMPILING = {"eager": Backend.EAGER, "aot_eager": Backend.AOT_EAGER}  # dynamic=None: shapes go dynamic on their own
BREAKING = RECOMPILING


def python_test(subject: Case, backend: Backend, dynamic: bool | None) -> Callable[[TestCase], None]:
    def test(self: TestCase) -> None:
        check_function(self, subject.function, subject.inputs, backend, dynamic)
    return test


def recompile_test(subject: Recompile, backend: Backend) -> Callable[[TestCase], None]:
    def test(self: TestCase) -> None:
        try:
            check_recompiles(self, subject.function, subject.steps, subject.graphs, backend)
        finally:
            subject.reset()
    return test


def tool_test(subject: Tool, backend: Backend) -> Callable[[TestCase], None]:
    def test(self: TestCase) -> None:
        subject.check(self, backend)
    return test


def break_test(subject: Break, backend: Backend) -> Callable[[TestCase], None]:
    def test(self: TestCase) -> None:
        check_break(self, subject, backend)
    return test


def _tests(subject: Case | Recompile | Tool | Break) -> dict[str, Callable[[TestCase], None]]:
    if isinstance(subject, Tool):
        return {f"test_compile_python_tool_{variant}_{subject.name}": tool_test(subject, backend)
                for variant, backend in RECOMPILING.items() if backend in subject.backends}
    if isinstance(subject, Break):
        return {f"test_compile_python_break_{variant}_{subject.name}": break_test(subject, backend)
                for variant, backend in BREAKING.items()}
    if isinstance(subject, Recompile):
        return {f"test_compile_python_recompile_{variant}_{subject.name}": recompile_test(subject, backend)
                for variant, backend in RECOMPILING.items()}
    return {f"test_compile_python_{variant}_{subject.name}": python_test(subject, backend, dynamic)
            for variant, (backend, dynamic) in VARIANTS.items()}


TestCompilePython = type("TestCompilePython", (TestCase,), {
    name: test for subject in ENTRIES.chosen() for name, test in _tests(subject).items()})

if __name__ == "__main__":
    run_tests()

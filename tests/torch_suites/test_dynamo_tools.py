"""The `python` stage's checks of torch.compile's tools (harness/torch_suites/dynamo/dynamotools.py) pass on
what they drive, and fail where the tool silently did not do its job: a fallback to eager, a
backward that compiled autograd never captured, a loaded precompiled function that does not run its
graph or whose guards pass everything, repeats left undeduplicated, artifacts never logged. And the
cases added to dynamopaths.py trace as one graph each (a graph break would send them, at threshold 1,
through CinderX's known bypass).

Run with this interpreter's torch, in-process.
"""

from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.integration

BACKENDS = ["eager", "aot_eager"]
NEWER_DYNAMO = {  # what torch 2.13's dynamo (the tests session's torch) cannot do and 2.14's (the P3 tiers') does
    "user_operators": "torch 2.13's dynamo breaks the graph on `@=` of a user object (2.14 traces it)",
    "more_user_containers": "torch 2.13's dynamo cannot call a deque subclass (2.14 traces it)",
    "returned_objects": "torch 2.13's dynamo cannot rebuild a returned itertools.chain or zip_longest (2.14 can)",
    "generator_across": "torch 2.13's dynamo cannot keep a generator alive across a graph break (2.14 can)",
    "debug_backends": "torch 2.13's TorchScript backends (ts, aot_ts) cannot script a lazy GraphModule (2.14's can)",
    "dynamo_profiler": "torch 2.13's dynamo profiler writes no pstats file (2.14's does)",
}


def skip_where_unsupported(name: str) -> None:
    """Skip what this interpreter's torch or Python cannot run (the P3 tiers run torch 2.14, Python 3.14)."""
    import sys

    import torch
    from torch.torch_version import TorchVersion

    if name in NEWER_DYNAMO and TorchVersion(torch.__version__) < "2.14":
        pytest.skip(NEWER_DYNAMO[name])
    if name == "builtin_protocols" and sys.version_info < (3, 12):
        pytest.skip("the case hashes a slice: slices are hashable from Python 3.12")


def _case():
    from tests.torch_suites.test_transform_checks import Case

    return Case()


def _tool(name: str):
    from harness.torch_suites.dynamo.dynamotools import TOOLS

    return next(tool for tool in TOOLS if tool.name == name)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["compiled_autograd", "precompile", "graph_deduplication", "compile_logs",
                                  "returned_objects", "optimized_module", "managers_across_break"])
def test_each_tool_check_passes_and_a_silent_fallback_to_eager_fails_it(name, backend):
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager

    skip_where_unsupported(name)
    tool = _tool(name)
    tool.check(_case(), Backend(backend))
    if name == "precompile":  # compiled ahead of time: the stance of later calls does not apply
        return
    with torch.compiler.set_stance("force_eager"), pytest.raises(FallbackToEager, match="captured no graph"):
        tool.check(_case(), Backend(backend))


def test_a_backward_that_compiled_autograd_never_captured_fails(monkeypatch):
    """Compiled autograd switched off under the check (its context manager does nothing): the
    forward graph still runs and the gradients are eager's, so only the count catches it."""
    import contextlib

    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager

    monkeypatch.setattr(torch._dynamo.compiled_autograd, "_enable", lambda compiler: contextlib.nullcontext())
    with pytest.raises(FallbackToEager, match="compiled autograd: dynamo captured no graph"):
        _tool("compiled_autograd").check(_case(), Backend.AOT_EAGER)


def test_a_loaded_precompiled_function_must_run_its_graph_and_keep_its_guards(monkeypatch):
    import torch
    from torch._dynamo.aot_compile import AOTCompiledFunction

    from harness.torch_suites.dynamo import dynamotools
    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager

    with monkeypatch.context() as patched:  # the loaded function answers eagerly: eager's numbers
        patched.setattr(AOTCompiledFunction, "__call__", lambda self, *args: dynamotools._precompiled(*args))
        with pytest.raises(FallbackToEager, match="ran its graph 0 times"):
            _tool("precompile").check(_case(), Backend.EAGER)
    with monkeypatch.context() as patched:  # guards that pass everything
        patched.setattr(AOTCompiledFunction, "guard_check", lambda self, *args, **kwargs: True)
        with pytest.raises(AssertionError, match="RuntimeError not raised"):
            _tool("precompile").check(_case(), Backend.EAGER)
    torch._dynamo.reset()


def test_blocks_that_are_not_repeats_fail_the_deduplication_check(monkeypatch):
    import torch

    from harness.torch_suites.dynamo import dynamotools
    from harness.torch_suites.compiled.compilechecks import Backend

    def different_blocks(x, weight):
        return torch.tanh(x @ weight).sin() + (x @ weight.T).relu() + x.cos()

    monkeypatch.setattr(dynamotools, "_repeated_blocks", different_blocks)
    with pytest.raises(AssertionError, match="not deduplicated"):
        _tool("graph_deduplication").check(_case(), Backend.EAGER)


def test_an_artifact_never_logged_fails_the_logging_check_and_logs_are_set_back(monkeypatch):
    """`graph_breaks` is on but the function never breaks its graph: no such record, so the check
    fails; either way torch's loggers hold none of the check's handlers afterwards and dynamo's debug
    log is off again."""
    from harness.torch_suites.dynamo import dynamotools
    from harness.torch_suites.compiled.compilechecks import Backend

    _tool("compile_logs").check(_case(), Backend.EAGER)
    monkeypatch.setattr(dynamotools, "ARTIFACTS", (*dynamotools.ARTIFACTS, "graph_breaks"))
    with pytest.raises(AssertionError, match="artifacts turned on but never logged"):
        _tool("compile_logs").check(_case(), Backend.EAGER)
    assert not any(isinstance(handler, dynamotools.Records) for logger in dynamotools.torch_loggers()
                   for handler in logger.handlers)
    assert logging.getLogger("torch._dynamo").getEffectiveLevel() > logging.DEBUG


def test_a_returned_object_that_differs_from_eagers_fails_the_check(monkeypatch):
    """Under compilation the function returns another range: the tensors agree, so only the
    comparison of what the user sees of each returned object catches it."""
    import torch

    from harness.torch_suites.dynamo import dynamotools
    from harness.torch_suites.compiled.compilechecks import Backend

    def other_range(x):
        return x * 2, {"range": range(2, 6, 2) if torch.compiler.is_compiling() else range(1, 5, 2)}

    skip_where_unsupported("returned_objects")
    monkeypatch.setattr(dynamotools, "_returned_objects", other_range)
    with pytest.raises(AssertionError, match="the returned range"):
        _tool("returned_objects").check(_case(), Backend.EAGER)


def test_stances_that_do_not_apply_fail_the_stance_check(monkeypatch):
    """`set_stance` made a no-op: the recompiles it should have run eagerly or refused compile
    graphs, and the call under `fail_on_recompile` raises nothing."""
    import contextlib

    import torch

    from harness.torch_suites.compiled.compilechecks import Backend

    _tool("stances_and_marks").check(_case(), Backend.AOT_EAGER)
    monkeypatch.setattr(torch.compiler, "set_stance", lambda *args, **kwargs: contextlib.nullcontext())
    with pytest.raises(AssertionError, match="RuntimeError not raised"):
        _tool("stances_and_marks").check(_case(), Backend.EAGER)


def test_a_function_with_a_graph_break_fails_the_export_check(monkeypatch):
    """export promises one whole graph: a function that breaks it cannot be exported."""
    import torch

    from harness.torch_suites.dynamo import dynamotools
    from harness.torch_suites.compiled.compilechecks import Backend

    def broken(x, y):
        torch._dynamo.graph_break()
        return x + y, x.shape[0]

    monkeypatch.setattr(dynamotools, "_exported", broken)
    with pytest.raises(torch._dynamo.exc.Unsupported, match="graph_break"):
        _tool("export_and_explain").check(_case(), Backend.EAGER)


def test_managers_dynamo_cannot_resume_fail_the_break_check(monkeypatch):
    """A break inside `fx.traceback.annotate`, which dynamo cannot rebuild around a break: the
    whole frame runs eagerly, with eager's numbers, so only the count of graphs catches it."""
    import torch

    from harness.torch_suites.dynamo import dynamotools
    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager

    def unresumable(x):
        with torch.fx.traceback.annotate({"kept": 1}):
            y = x.sin()
            torch._dynamo.graph_break()
            return y.cos()

    monkeypatch.setattr(dynamotools, "_across_managers", unresumable)
    with pytest.raises(FallbackToEager, match="captured no graph"):
        _tool("managers_across_break").check(_case(), Backend.EAGER)


@pytest.mark.parametrize("name", ["dynamo_context_managers", "torch_special_functions", "runtime_objects",
                                  "user_operators", "descriptors", "more_user_containers", "builtin_protocols",
                                  "comptime_printers", "size_arithmetic", "builtins_and_constants",
                                  "containers_in_place", "tensor_queries", "torch_modes_in_region",
                                  "torch_runtime_queries", "python_runtime_more", "higher_order_loops"])
def test_the_new_dynamo_cases_trace_as_one_graph_without_a_break(name):
    import torch

    from harness.torch_suites.dynamo.dynamopaths import CASES

    skip_where_unsupported(name)

    case = next(case for case in CASES if case.name == name)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(case.function)(*case.inputs())
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons

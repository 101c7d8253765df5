"""P3's torch.compile checks prove that the compiled code ran: a silent fallback to eager, which
gives eager's numbers, must fail the test (harness/torch_suites/compiled/compilechecks.py).

Run with this interpreter's torch: in-process for the proof itself, and one real P3 module with
dynamo switched off (TORCHDYNAMO_DISABLE=1 makes torch.compile hand back the function unchanged:
the quietest fallback there is).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.protocol import Env

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
MODULE = "harness/torch_suites/p3/test_compile_ops_eager.py"


def test_a_captured_graph_that_ran_is_proof_and_a_graph_break_is_not():
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager, compiled, counting, prove_compiled

    def traced(x):
        return torch.sin(x) + 1

    counter = counting(Backend.EAGER)
    compiled(traced, Backend.EAGER, counter)(torch.ones(3))
    prove_compiled(counter, calls=1)

    @torch._dynamo.disable
    def hidden(x):
        return torch.sin(x) + 1

    counter = counting(Backend.EAGER)
    result = compiled(lambda x: hidden(x), Backend.EAGER, counter)(torch.ones(3))
    assert torch.equal(result, torch.sin(torch.ones(3)) + 1), "eager's numbers: equal numbers prove nothing"
    with pytest.raises(FallbackToEager, match="captured no graph"):
        prove_compiled(counter, calls=1)



def test_a_graph_of_tensor_methods_is_work_and_a_graph_of_nothing_is_refused():
    """`x.contiguous()` and `x.sum()` reach the graph as methods (`call_method`): the backend takes
    them for work (they once failed as "empty graphs"); a graph that calls nothing (dynamo hands one
    over between graph breaks under dynamic shapes) is refused, and a function that only returns
    its input gives no graph at all."""
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager, compiled, counting, prove_compiled

    counter = counting(Backend.EAGER)
    compiled(lambda x: x.contiguous().sum(), Backend.EAGER, counter)(torch.ones(3))
    prove_compiled(counter, calls=1)
    assert [node.op for node in counter.graphs[0].graph.nodes if node.op.startswith("call")] == ["call_method"] * 2

    nothing = torch.fx.symbolic_trace(lambda x: x)
    with pytest.raises(AssertionError, match="dynamo captured an empty graph"):
        counting(Backend.EAGER)(nothing, [torch.ones(3)])

    counter = counting(Backend.EAGER)
    compiled(lambda x: (x, x.shape[0]), Backend.EAGER, counter)(torch.ones(3))
    with pytest.raises(FallbackToEager, match="captured no graph"):
        prove_compiled(counter, calls=1)

def test_a_p3_module_fails_when_torch_compile_silently_runs_eagerly():
    def run(extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
        env = {**{k: v for k, v in os.environ.items() if k != "CI"}, Env.ENTRIES: "nn.functional.layer_norm", **extra}
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", MODULE], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=600)

    fallen = run({"TORCHDYNAMO_DISABLE": "1"})
    assert fallen.returncode == 1, fallen.stdout[-2000:]
    assert "FallbackToEager: dynamo captured no graph" in fallen.stdout
    assert "4 failed" in fallen.stdout, fallen.stdout[-1000:]  # the compile test and the three hot states
    compiled = run({})
    assert compiled.returncode == 0 and "4 passed" in compiled.stdout, compiled.stdout[-2000:]


FAILING_COMPILER = """#!/bin/sh
# answers --version as a working g++ does, then fails every build
if [ "$1" = "--version" ]; then exec g++ --version; fi
echo "kernel.cpp:7:5: error: the machine's compiler refused this" >&2
exit 1
"""


def test_inductor_without_a_compiler_skips_with_the_reason_announced_once():
    import unittest

    from torch._inductor import config

    from harness.torch_suites.compiled.compilechecks import Backend, NoCompiler, backend_settings, missing_compiler

    missing_compiler.cache_clear()
    try:
        with config.patch({"cpp.cxx": (None, "/nonexistent/g++")}), pytest.warns(NoCompiler) as announced:
            for _ in range(3):  # three inductor tests in one process
                with pytest.raises(unittest.SkipTest, match=r"Inductor has no C\+\+ compiler: .*/nonexistent/g\+\+"):
                    with backend_settings(Backend.INDUCTOR):
                        pass
    finally:
        missing_compiler.cache_clear()
    assert len(announced) == 1


def test_a_failed_inductor_build_fails_the_test_naming_the_compilers_message(tmp_path):
    import torch
    from torch._inductor import config

    from harness.compare.classify import classify
    from harness.torch_suites.compiled.compilechecks import Backend, InductorBuildFailed, backend_settings, missing_compiler

    compiler = tmp_path / "g++"
    compiler.write_text(FAILING_COMPILER)
    compiler.chmod(0o755)
    # Inductor probes the vector ISAs once per process by building with the compiler and caches the
    # answer: the machine's compiler answers first, or the refusing one would leave "no vector ISA"
    # for every later test in this process (their C++ then misses at::vec)
    from torch._inductor import cpu_vec_isa

    cpu_vec_isa.valid_vec_isa_list()
    missing_compiler.cache_clear()
    try:
        with config.patch({"cpp.cxx": (None, str(compiler)), "force_disable_caches": True}):
            with pytest.raises(InductorBuildFailed) as failed:
                with backend_settings(Backend.INDUCTOR):
                    torch._dynamo.reset()
                    torch.compile(lambda x: torch.sin(x) * 3 + 1, backend="inductor")(torch.ones(5))
    finally:
        missing_compiler.cache_clear()
        torch._dynamo.reset()
    message = f"InductorBuildFailed: {failed.value}"
    assert "kernel.cpp:7:5: error: the machine's compiler refused this" in message
    assert classify("failed", message) == "Inductor's C++ build failed"


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_user_python_through_torch_compile_must_be_captured_and_give_eagers_numbers_and_gradients(backend):
    """The `python` stage's check (compilechecks.check_function) on one of its cases: it passes, a
    silent fallback to eager fails it, and so does compiled code that computes other numbers (in
    the forward, or only in what AOTAutograd's backward gives)."""
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager, check_function
    from harness.torch_suites.dynamo.pythonpaths import CASES
    from tests.torch_suites.test_transform_checks import Case

    chosen = Backend(backend)
    closures = next(case for case in CASES if case.name == "closures")
    check_function(Case(), closures.function, closures.inputs, chosen)
    with torch.compiler.set_stance("force_eager"), pytest.raises(FallbackToEager, match="captured no graph"):
        check_function(Case(), closures.function, closures.inputs, chosen)

    def differs(x):
        return closures.function(x) * (2 if torch.compiler.is_compiling() else 1)

    with pytest.raises(AssertionError, match="not close"):
        check_function(Case(), differs, closures.inputs, chosen)

    def gradient_differs(x):  # the same forward numbers; under compilation, the gradient doubles
        y = closures.function(x)
        return y + (y - y.detach()) if torch.compiler.is_compiling() else y

    if chosen is Backend.AOT_EAGER:
        with pytest.raises(AssertionError, match="not close"):
            check_function(Case(), gradient_differs, closures.inputs, chosen)


STALE = {"gain": 1.0}  # read by a function whose result dynamo is told to take as a constant


def test_a_recompile_check_fails_on_a_graph_reused_in_a_changed_state_and_on_guards_that_never_failed():
    """compilechecks.check_recompiles: one of the stage's scenarios passes; a graph reused after
    the state it baked in changed (no guard on it: `assume_constant_result`) gives other numbers
    than eager, and a scenario whose state never changed captures too few graphs: both fail."""
    import torch

    from harness.torch_suites.compiled.compilechecks import Backend, check_recompiles
    from harness.torch_suites.dynamo.dynamopaths import RECOMPILES
    from tests.torch_suites.test_transform_checks import Case

    scenario = next(scenario for scenario in RECOMPILES if scenario.name == "global_value_change")
    try:
        check_recompiles(Case(), scenario.function, scenario.steps, scenario.graphs, Backend.EAGER)
    finally:
        scenario.reset()

    @torch.compiler.assume_constant_result
    def gain() -> float:
        return STALE["gain"]

    def scaled(x):
        return x * gain()

    def with_gain(value: float):
        def step():
            STALE["gain"] = value
            return [torch.ones(2, 2)]
        return step

    with pytest.raises(AssertionError, match="call 2 of 2"):
        check_recompiles(Case(), scaled, (with_gain(1.0), with_gain(3.0)), 1, Backend.EAGER)
    with pytest.raises(AssertionError, match="the guards did not fail where the state changed"):
        check_recompiles(Case(), lambda x: x * 2, (with_gain(1.0), with_gain(1.0)), 2, Backend.EAGER)

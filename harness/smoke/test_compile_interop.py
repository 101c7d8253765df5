"""Seed 000's torch.compile interop falsifier, made impossible to pass vacuously.

Matching numbers alone prove nothing (eager fallback gives the same numbers), so a counting
backend proves dynamo captured a graph and that the compiled graph is what ran; then the JIT
must still be on and still compiling new functions afterwards.
"""

import torch

from harness.run import jit
from harness.smoke.jitcheck import jit_disengaged, jit_on, make_hot, require_compiled


class CountingBackend:
    """A torch.compile backend that records captures and every execution of the compiled graph."""

    def __init__(self) -> None:
        self.captured = 0
        self.executed = 0
        self.jit_enabled_while_capturing: list[bool] = []

    def __call__(self, graph_module: torch.fx.GraphModule, example_inputs):
        self.captured += 1
        self.jit_enabled_while_capturing.append(jit.snapshot().enabled)
        ops = [node.target for node in graph_module.graph.nodes if node.op == "call_function"]
        assert ops, "dynamo captured an empty graph"

        def run(*args):
            self.executed += 1
            return graph_module.forward(*args)

        return run


def test_compiled_graph_runs_and_matches_eager():
    torch._dynamo.reset()
    backend = CountingBackend()

    def f(x):
        return x * 2 + 1

    compiled = torch.compile(f, backend=backend, fullgraph=True)
    x = torch.randn(10)
    result = compiled(x)
    assert backend.captured == 1, "dynamo did not capture a graph: the call ran eagerly"
    assert backend.executed == 1, "the compiled graph did not run"
    torch.testing.assert_close(result, x * 2 + 1)
    compiled(torch.randn(10))
    assert (backend.captured, backend.executed) == (1, 2), "a second call recompiled or bypassed the graph"


def test_aot_eager_training_step_matches_eager_gradients():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    compiled = torch.compile(model, backend="aot_eager")
    x = torch.randn(16, 8)
    compiled(x).sum().backward()
    compiled_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for got, expected in zip(compiled_grads, (p.grad for p in model.parameters())):
        torch.testing.assert_close(got, expected)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 1


def test_jit_still_on_and_compiling_after_torch_compile():
    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = torch.compile(lambda x: torch.sin(x) + x, backend=backend)
    compiled(torch.randn(4))
    assert backend.executed == 1

    def after_compile(x):
        return x.cos() * 2

    make_hot(after_compile, torch.randn(4))
    if jit_on():
        # The backend runs during the first call's lazy tracing: the disengage window must cover it.
        assert backend.jit_enabled_while_capturing == [not jit_disengaged()]
        state = jit.snapshot()
        assert state.enabled, "the JIT was switched off by torch.compile"
        assert state.compiled > 0
    require_compiled(after_compile)

"""P0's interop matrix: every JIT state x every kind of callable x fullgraph, counting backend.

Both directions: torch.compile applied to callables in each state the JIT can leave them in
(`test_cell`), and code that torch.compile produced run often enough to be JIT-compiled
(`test_generated_*`). docs/interop.md says what each cell proves.
"""

import pytest
import torch

from harness.interop import cells
from harness.interop.backend import CountingBackend
from harness.interop.cells import State, claim_compiled
from harness.interop.subjects import Kind, copy_function
from harness.smoke.jitcheck import hot_calls


@pytest.mark.parametrize("fullgraph", [True, False], ids=["fullgraph", "partial"])
@pytest.mark.parametrize("kind", list(Kind), ids=str)
@pytest.mark.parametrize("state", list(State), ids=str)
def test_cell(state, kind, fullgraph):
    cells.run(state, kind, fullgraph)


def _graph_break(x):
    y = torch.sin(x) + 1
    torch._dynamo.graph_break()
    return torch.cos(y) * 2


def test_generated_graph_code_runs_hot_across_a_graph_break():
    """Two graphs and dynamo's resume function, every call; the graphs' generated forward code
    runs often enough to be JIT-compiled and keeps giving eager's numbers."""
    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = torch.compile(_graph_break, backend=backend)
    reference = copy_function(_graph_break, "graph_break_reference")  # calling the target itself would make it hot
    x = torch.linspace(-1.0, 1.0, 8)
    for call in range(1, hot_calls() + 1):
        torch.testing.assert_close(compiled(x), reference(x))
        assert (backend.captured, backend.executed) == (2, 2 * call), "a graph was recompiled or bypassed"
    for graph in backend.graphs:
        claim_compiled(type(graph).forward)


def _specialized(x, n):
    return x * n + torch.tanh(x)


def test_guards_pick_the_right_graph_when_hot():
    """Guards choose between two specialized graphs (an int argument) on every call; hot, the
    right graph still runs each time, nothing recompiles, and both graphs' code is JIT-compiled."""
    torch._dynamo.reset()
    backend = CountingBackend()
    compiled = torch.compile(_specialized, backend=backend, dynamic=False)
    reference = copy_function(_specialized, "specialized_reference")
    x = torch.linspace(-1.0, 1.0, 8)
    calls = 2 * hot_calls()  # each graph runs often enough to be JIT-compiled
    for call in range(calls):
        n = call % 2 + 1
        torch.testing.assert_close(compiled(x, n), reference(x, n))
    assert backend.captured == 2, f"{backend.captured} graphs for two specializations"
    assert backend.executed == calls, "a call ran no compiled graph"
    for graph in backend.graphs:
        claim_compiled(type(graph).forward)


def test_generated_training_step_runs_hot():
    """AOTAutograd's forward and backward graphs and its runtime wrappers, run as a training step
    often enough to be JIT-compiled: every step runs both graphs, gradients match eager's."""
    from torch._dynamo.backends.common import aot_autograd

    torch._dynamo.reset()
    torch.manual_seed(0)
    forward, backward = CountingBackend(), CountingBackend()
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    compiled = torch.compile(model, backend=aot_autograd(fw_compiler=forward, bw_compiler=backward))
    x = torch.randn(16, 8)
    for step in range(1, hot_calls() + 1):
        model.zero_grad()
        compiled(x).sum().backward()
        assert (forward.executed, backward.executed) == (step, step), "a step bypassed a compiled graph"
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for actual, expected in zip(got, (p.grad for p in model.parameters())):
        torch.testing.assert_close(actual, expected)
    assert (forward.captured, backward.captured) == (1, 1)
    for graph in forward.graphs + backward.graphs:
        claim_compiled(type(graph).forward)

"""The torch.compile interop falsifier (docs/background.md §1), made impossible to pass vacuously.

Matching numbers alone prove nothing (eager fallback gives the same numbers), so a counting
backend proves dynamo captured a graph and that the compiled graph is what ran; then the JIT
must still be on and still compiling new functions afterwards. The matrix of JIT states x kinds
of callable is harness/interop/test_matrix.py.
"""

import torch

from harness.interop.backend import CountingBackend
from harness.run import jit
from harness.smoke.jitcheck import jit_disengaged, jit_on, make_hot, require_compiled


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

"""A torch.compile backend that counts: the proof that a graph was captured and that it ran.

Equal numbers prove nothing (a fallback to eager gives the same numbers); counts do. The backend
wraps dynamo's graph (run as it is) or any real backend's compiled artifact, and counts every
capture and every execution of what the backend returned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from harness.run import jit

Backend = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]
CALLS = ("call_function", "call_method", "call_module")  # a graph that does work holds one of these: `x.sum()` is a method


class CountingBackend:
    """Records captures and every execution of the compiled graph; wraps `inner` when given."""

    def __init__(self, inner: Backend | str | None = None) -> None:
        self.inner = torch._dynamo.lookup_backend(inner) if isinstance(inner, str) else inner
        self.captured = 0
        self.executed = 0
        self.graphs: list[torch.fx.GraphModule] = []
        self.jit_enabled_while_capturing: list[bool] = []

    def __call__(self, graph_module: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.captured += 1
        self.graphs.append(graph_module)
        self.jit_enabled_while_capturing.append(jit.snapshot().enabled)
        calls = [node.target for node in graph_module.graph.nodes if node.op in CALLS]
        assert calls, "dynamo captured an empty graph"
        compiled = graph_module.forward if self.inner is None else self.inner(graph_module, example_inputs)

        def run(*args: Any) -> Any:
            self.executed += 1
            return compiled(*args)

        return run

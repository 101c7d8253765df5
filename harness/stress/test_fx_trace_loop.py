"""torch.fx tracing in a loop: CinderX 2026.11.2.0 crashes here with SIGSEGV, at threshold 1000.

Found by the perf suite (fx_trace) and reduced to this loop: in about 3 of 10 runs of 20 s the
process dies in CinderX's background compile thread (`bg_cx_compile`), in the HIR inliner
(`Preloader::preload` under `InlineFunctionCalls::run`), while the main thread is inside
`symbolic_trace`, which swaps wrapper functions into `torch.nn.Module` and module globals and back
on every trace. Not seen with `background_compile(False)` or the inliner off (4 runs each), nor in
stock CPython. Each round traces for HARNESS_STRESS_SECONDS (default 20); a crash is recorded for
its round and the file resumes with the next one.
"""

import os
import time

import pytest
import torch
import torch.fx

from harness.protocol import Setting

ROUNDS = 5
SECONDS = float(os.environ.get(Setting.STRESS_SECONDS, "20"))


class ResidualStack(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(6))
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x)) + x
        return self.norm(x)


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_symbolic_trace_loop_matches_eager(round_: int) -> None:
    torch.manual_seed(round_)
    net, x = ResidualStack(), torch.randn(3, 16)
    deadline, traces = time.monotonic() + SECONDS, 0
    while time.monotonic() < deadline:
        traced = torch.fx.symbolic_trace(net)
        traces += 1
    torch.testing.assert_close(traced(x), net(x))
    assert traces > 0

"""P3's torch.compile checks prove that the compiled code ran: a silent fallback to eager, which
gives eager's numbers, must fail the test (harness/torch_suites/compilechecks.py).

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

    from harness.torch_suites.compilechecks import Backend, FallbackToEager, compiled, counting, prove_compiled

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

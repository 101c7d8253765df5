"""P3's interop stage: the matrix's JIT states with real backends, and their generated code hot.

The counting backend wraps AOTAutograd (`aot_eager`) and Inductor, so a cell still proves that
the backend's compiled artifact is what ran; Inductor's generated Python (its `call` wrapper
around the C++ kernels) must run correctly once the JIT compiled it.
"""

from pathlib import Path

import pytest
import torch

from harness.interop import cells
from harness.interop.backend import CountingBackend
from harness.interop.cells import State, claim
from harness.interop.subjects import Kind, copy_function
from harness.run import jit
from harness.smoke.jitcheck import hot_calls

BACKENDS = ("aot_eager", "inductor")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", [Kind.FUNCTION, Kind.MODULE], ids=str)
@pytest.mark.parametrize("state", list(State), ids=str)
def test_cell(state, kind, backend):
    cells.run(state, kind, fullgraph=True, backend=lambda: CountingBackend(backend))


def _fused(x):
    return torch.relu(torch.sin(x) * 2.0 + x).sum(dim=-1)


def test_inductor_generated_code_runs_hot():
    """Inductor's generated module runs every call; hot, the JIT compiles its Python and the
    numbers stay eager's."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    torch._dynamo.reset()
    backend = CountingBackend("inductor")
    compiled = torch.compile(_fused, backend=backend, fullgraph=True)
    reference = copy_function(_fused, "fused_reference")
    x = torch.linspace(-1.0, 1.0, 32).reshape(4, 8)
    for call in range(1, hot_calls() + 1):
        torch.testing.assert_close(compiled(x), reference(x))
        assert (backend.captured, backend.executed) == (1, call), "a call bypassed Inductor's code"
    generated = Path(cache_dir()).resolve()
    compiled_generated = [f for f in jit.compiled_functions()
                          if generated in Path(getattr(getattr(f, "__code__", None), "co_filename", "/")).resolve().parents]
    claim(bool(compiled_generated), f"a function of Inductor's generated code (under {generated}) is JIT-compiled")

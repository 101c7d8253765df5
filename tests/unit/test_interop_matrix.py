"""The interop matrix's cells must be able to fail: a forced fallback to eager fails every cell.

Real torch.compile in this process (no JIT here: the cells' JIT claims check nothing, as in
`stock`); the cells under the real CinderX JIT run in tests/e2e/test_interop_end_to_end.py.
"""

import pytest
import torch

from harness.configure.tiers import HARNESS_ROOT, get_tier
from harness.errors import HarnessError
from harness.interop import cells
from harness.interop.backend import CountingBackend
from harness.interop.cells import State
from harness.interop.subjects import Kind

pytestmark = pytest.mark.integration
CELLS = [(state, kind, fullgraph) for state in State for kind in Kind for fullgraph in (True, False)]


def cell_id(cell):
    state, kind, fullgraph = cell
    return f"{state}-{kind}-{'fullgraph' if fullgraph else 'partial'}"


@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
def test_every_cell_fails_when_dynamo_runs_everything_eagerly(cell):
    """torch.compiler.set_stance("force_eager") is the silent fallback a JIT can cause: no frame
    reaches dynamo, the numbers are eager's and right, and the cell must still fail."""
    with torch.compiler.set_stance("force_eager"), pytest.raises(AssertionError, match="silent fallback"):
        cells.run(*cell)


class BrokenBackend(CountingBackend):
    """Captures, then fails to compile: with suppress_errors dynamo runs the frame eagerly."""

    def __init__(self) -> None:
        super().__init__(inner=self.fail)

    @staticmethod
    def fail(graph_module, example_inputs):
        raise RuntimeError("backend failed")


@pytest.mark.parametrize("state", list(State), ids=str)
def test_a_graph_that_never_runs_fails_the_cell(state):
    with torch._dynamo.config.patch(suppress_errors=True), \
            pytest.raises(AssertionError, match=r"ran in 0 of \d+ calls .* \(silent fallback\)"):
        cells.run(state, Kind.FUNCTION, False, backend=BrokenBackend)


@pytest.mark.parametrize("cell", [(state, Kind.FUNCTION, True) for state in State]
                         + [(State.HOT, kind, False) for kind in Kind], ids=cell_id)
def test_the_same_cells_pass_when_the_graph_runs(cell):
    ran = cells.run(*cell)
    assert ran.backend.captured == 1 and ran.backend.executed == ran.calls > 0


def test_p3_interop_stage_runs_the_bundled_files_alone_as_the_bundled_part():
    p3 = get_tier("p3")
    stage = p3.selecting(["interop"])
    assert (stage.name, stage.source, stage.entry) == ("p3", "torch", "pytest")
    assert (stage.timeout, stage.test_timeout) == (p3.bundled.timeout, p3.bundled.test_timeout) != (
        p3.timeout, p3.test_timeout)  # Inductor over a whole database needs the bundled part's limits
    located, tests_dir = stage.located(None)
    assert located.discover(tests_dir) == ["harness/interop/test_backends.py", "harness/interop/test_matrix.py"]
    assert tests_dir == HARNESS_ROOT
    assert p3.selecting(["capture"]) is p3 and p3.selecting(None) is p3
    with pytest.raises(HarnessError, match="--stage interop: its files come from the suites inside torch, not from "
                                           "a PyTorch checkout: select it alone or with other stages of the suites "
                                           "inside torch"):
        p3.selecting(["capture", "interop"])
    several = p3.selecting(["ops-eager", "modules", "interop"])  # stages of the bundled suites together: their files
    assert (several.source, several.entry) == ("torch", "pytest") and several.files == (
        "harness/torch_suites/p3/test_compile_ops_eager.py", "harness/torch_suites/p3/test_compile_modules.py",
        "harness/interop/test_*.py")

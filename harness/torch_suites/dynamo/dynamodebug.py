"""torch.compile's debugging tools, as a user chasing a compile bug drives them, for P3's `python`
stage beside dynamotools.py (p3/test_compile_python.py, `test_compile_python_tool_{backend}_{name}`):
dynamo's debug backends (the schema-checking, no-exception, pre-dispatch and TorchScript backends
derived from `eager`; the decomposing, partitioning and fake-crossref backends derived from
`aot_eager`) with PyTorch's own graph recorders (`torch._dynamo.testing`) beside our counter; the
accuracy minifier (`repro_after="dynamo"`, `repro_level=4`), which must pass a right backend and
catch a wrong one with a repro script; and graph routing (`debug_backend_override`,
`debug_dynamo_config_override`), which sends each graph to the backend, and each frame to the
dynamo settings, its id selects; and the dynamo profiler (`dynamo_profiler`), which times the tracing
of each user function.

These reach `backends.debugging`, `debug_utils`, `repro.after_dynamo`, `graph_id_filter`,
`dynamo_profiler` and `testing`, which no model's compile runs: docs/torch_suites.md#user-style-python-through-dynamo.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import pstats
import tempfile
from collections.abc import Iterator
from typing import Any

import torch
import torch._dynamo.testing
from torch._dynamo.debug_utils import AccuracyError
from torch.testing._internal.common_utils import TestCase

from harness.interop.backend import CountingBackend
from harness.interop.subjects import copy_function
from harness.torch_suites.compiled.compilechecks import (Backend, FallbackToEager, check_function, compiled, counting,
                                                prove_compiled)
from harness.torch_suites.dynamo.dynamopaths import seeded_randn
from harness.torch_suites.dynamo.dynamotools import Tool

# dynamo's debug backends that run on a CPU, by the backend each derives from
DEBUG_BACKENDS = {
    Backend.EAGER: ("eager_debug", "eager_noexcept", "pre_dispatch_eager", "ts"),
    Backend.AOT_EAGER: ("aot_eager_decomp_partition", "aot_eager_decomp_partition_crossref",
                        "aot_eager_default_partitioner", "aot_ts", "invoke_subgraph"),
}
# PyTorch's own recorder of the graphs a backend is handed, by the backend it runs them with
RECORDERS = {Backend.EAGER: torch._dynamo.testing.EagerAndRecordGraphs,
             Backend.AOT_EAGER: torch._dynamo.testing.AotEagerAndRecordGraphs}


def _debugged(x, weight):
    hidden = torch.relu(x @ weight) + x.sum(1, keepdim=True)
    return torch.nn.functional.softmax(hidden, -1) * weight.mean()


def _inputs(requires_grad: bool) -> list[torch.Tensor]:
    return [seeded_randn(4, 3, requires_grad=requires_grad), seeded_randn(3, 3, seed=1, requires_grad=requires_grad)]


def run_through(case: TestCase, counter: CountingBackend, backend: Backend, name: str) -> CountingBackend:
    """`_debugged`, from code of its own named `name`, through check_function with `counter`."""
    return check_function(case, copy_function(_debugged, name), _inputs, backend, counter=counter)


def check_debug_backends(case: TestCase, backend: Backend) -> None:
    """Each of dynamo's debug backends derived from `backend`, wrapped in our counter, must run a
    captured graph with eager's numbers; then PyTorch's own recorder for `backend` must record the
    same graph as our counter captured (two independent witnesses of one capture)."""
    for name in DEBUG_BACKENDS[backend]:
        with case.subTest(debug_backend=name):
            run_through(case, CountingBackend(name), backend, f"debugged_{name}")
    recorder = RECORDERS[backend]()
    counter = run_through(case, counting(backend), backend, "debugged_counted")
    run_through(case, CountingBackend(recorder), backend, "debugged_recorded")
    case.assertEqual([graph_text(graph) for graph in recorder.graphs], [graph_text(counter.graphs[0])])


def graph_text(graph: torch.fx.GraphModule) -> str:
    """A graph's code without what differs between two captures of one function (names, comments)."""
    return torch._dynamo.testing.normalize_gm(graph.print_readable(print_output=False))


# --- The accuracy minifier: compiled against eager in float64, a repro script on a mismatch ------

@contextlib.contextmanager
def accuracy_checked() -> Iterator[str]:
    """Dynamo's accuracy checking on (`repro_after="dynamo"`, `repro_level=4`), with its repro
    scripts written under a folder of their own (yielded), never into the working directory."""
    with tempfile.TemporaryDirectory() as folder, torch._dynamo.config.patch(
            repro_after="dynamo", repro_level=4, debug_dir_root=folder):
        yield folder


class GraphAsIs:
    """A right backend of the kind the accuracy checker can compare: it hands back dynamo's graph
    module itself (torch 2.14.1's checker skips backends that return a plain function, as eager,
    aot_eager and inductor do), counting its captures and its runs."""

    def __init__(self) -> None:
        self.captured = 0
        self.executed = 0

    def __call__(self, graph: torch.fx.GraphModule, inputs: list[Any]) -> torch.fx.GraphModule:
        self.captured += 1
        graph.register_forward_pre_hook(lambda module, args: setattr(self, "executed", self.executed + 1))
        return graph


def _accuracy_subject(x, weight):
    return torch.relu(x @ weight).sum(0) + 1  # `torch.relu`: what the deliberately wrong backend rewrites


def check_accuracy_minifier(case: TestCase, backend: Backend) -> None:
    """With accuracy checking on, a right backend's graph is compiled once more by the checker and
    compared with eager in float64 before the call, with no comparison skipped, and the call runs it; a wrong
    one (dynamo's `relu_accuracy_error_TESTING_ONLY`, which turns relu into add) fails the compile
    with AccuracyError, naming a minifier script written under the debug folder, valid Python."""
    x, weight = seeded_randn(4, 3), seeded_randn(3, 3, seed=1)
    right = GraphAsIs()
    with accuracy_checked(), case.assertNoLogs("torch._dynamo.debug_utils", logging.ERROR):
        actual = compiled(copy_function(_accuracy_subject, "accuracy_right"), backend, right)(x, weight)
    case.assertEqual(actual, _accuracy_subject(x, weight))
    if right.captured < 2 or right.executed < 1:
        raise FallbackToEager(f"{right.captured} graph(s) captured (the checker compiles a copy of its own) and "
                              f"{right.executed} run in 1 call: the accuracy check or the compiled call did not happen")
    wrong = copy_function(_accuracy_subject, "accuracy_wrong")
    with accuracy_checked() as folder:
        with case.assertRaises(torch._dynamo.exc.BackendCompilerFailed) as raised:
            torch.compile(wrong, backend="relu_accuracy_error_TESTING_ONLY")(x, weight)
        error = raised.exception.inner_exception
        case.assertIsInstance(error, AccuracyError)
        case.assertTrue(error.minifier_path.startswith(folder), f"the repro script {error.minifier_path} is "
                        f"outside the debug folder {folder}")
        with open(error.minifier_path, encoding="utf-8") as file:
            compile(file.read(), error.minifier_path, "exec")


# --- Graph routing: each graph to the backend its id selects -------------------------------------

ROUTES: dict[str, CountingBackend] = {}  # the counter each routed backend name hands its graphs to
ROUTING = "0:{first};>=1:{rest}"  # the first frame's graph to one backend, the resumed frames' to the other
CONFIG_ROUTING = ">=1:capture_scalar_outputs=True"  # the frames resumed after a break trace `.item()`


def routed_backend(name: str) -> str:
    """`name` registered once as a backend that hands each graph to the counter ROUTES holds for it."""
    if name not in torch._dynamo.list_backends(exclude_tags=()):
        def route(graph: torch.fx.GraphModule, inputs: list[Any]) -> Any:
            return ROUTES[name](graph, inputs)
        torch._dynamo.register_backend(route, name)
    return name


def _three_graphs(x):
    y = x.sin()
    torch._dynamo.graph_break()
    z = y.cos() * 2
    torch._dynamo.graph_break()
    return z.exp()


def check_graph_routing(case: TestCase, backend: Backend) -> None:
    """`debug_backend_override` (ROUTING) with two registered backends over a function
    that breaks into three graphs: the first graph must go to `first`, the two resumed ones to
    `rest`, none to the backend torch.compile was given, every graph must run and the outputs must
    be eager's."""
    first, rest, given = (routed_backend(f"harness_route_first_{backend.value}"),
                          routed_backend(f"harness_route_rest_{backend.value}"), counting(backend))
    ROUTES.update({first: counting(backend), rest: counting(backend)})
    x = seeded_randn(4, 3)
    with torch._dynamo.config.patch(debug_backend_override=ROUTING.format(first=first, rest=rest)):
        actual = compiled(copy_function(_three_graphs, "routed"), backend, given)(x)
    case.assertEqual(actual, _three_graphs(x))
    counts = {name: (ROUTES[name].captured, ROUTES[name].executed) for name in (first, rest)}
    case.assertEqual((counts, given.captured), ({first: (1, 1), rest: (2, 2)}, 0),
                     "graphs were not routed by their ids")


def _scalar_after_break(x):
    y = x.sin()
    torch._dynamo.graph_break()
    scale = y.sum().item()  # a graph break of its own, unless scalars are captured
    return y * scale


def check_config_routing(case: TestCase, backend: Backend) -> None:
    """`debug_dynamo_config_override` (CONFIG_ROUTING): the frame resumed after a break (id 1) must
    trace `.item()` into its graph, so one call captures and runs two graphs where dynamo's default
    gives three, and the outputs are eager's."""
    graphs = {}
    for setting in ("", CONFIG_ROUTING):
        counter, x = counting(backend), seeded_randn(4, 3)
        with torch._dynamo.config.patch(debug_dynamo_config_override=setting):
            actual = compiled(copy_function(_scalar_after_break, "configured"), backend, counter)(x)
        case.assertEqual(actual, _scalar_after_break(x))
        graphs[setting] = (counter.captured, counter.executed)
    case.assertEqual(graphs, {"": (3, 3), CONFIG_ROUTING: (2, 2)},
                     "the config override did not reach the frame its id selects")


# --- The dynamo profiler: tracing time per user function ------------------------------------------

def _profiled_inner(t):
    return t.cos() * 2


def _profiled(x):
    return _profiled_inner(x.sin()).sum(0)


def check_dynamo_profiler(case: TestCase, backend: Backend) -> None:
    """`dynamo_profiler` set to a file: tracing a function that calls another (inlined) must run a
    captured graph with eager's numbers, print the profiler's tables, and write a pstats file that
    names both functions. (A graph break under the profiler fails dynamo itself in torch 2.14.1:
    docs/torch_suites.md#debugging-tools.)"""
    counter, x = counting(backend), seeded_randn(4, 3)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "dynamo.prof")
        printed = io.StringIO()
        with torch._dynamo.config.patch(dynamo_profiler=path), contextlib.redirect_stdout(printed):
            actual = compiled(copy_function(_profiled, "profiled"), backend, counter)(x)
        prove_compiled(counter, calls=1)
        case.assertTrue(os.path.exists(path), "the profiler wrote no pstats file")
        traced = {function for _, _, function in pstats.Stats(path).stats}
    case.assertEqual(actual, _profiled(x))
    case.assertIn("Dynamo Profiler", printed.getvalue())
    case.assertEqual(traced, {"profiled", "_profiled_inner"})


TOOLS = (Tool("debug_backends", check_debug_backends),
         Tool("accuracy_minifier", check_accuracy_minifier, (Backend.EAGER,)),
         Tool("graph_routing", check_graph_routing), Tool("config_routing", check_config_routing),
         Tool("dynamo_profiler", check_dynamo_profiler))

"""torch.compile's tools around a compiled region, as a user of torch.compile drives them, for P3's
`python` stage (p3/test_compile_python.py, `test_compile_python_tool_{backend}_{name}`): compiled
autograd (the backward of a training step captured as a graph of its own), ahead-of-time compile
with save and load (`aot_compile`: graph, guards and bytecode serialized, then loaded back; of a
function, and of a module for two calling contexts), graph
deduplication (repeated blocks turned into one subgraph), compile logging (the guards, graph,
bytecode, source and recompile artifacts of `torch._logging.set_logs`), objects made inside the
region and returned (which dynamo rebuilds as Python objects after the graph ran), a compiled
module (`OptimizedModule`), marks on inputs and `torch.compiler.set_stance`, `torch._dynamo.export`
and `explain`, and context managers live across a graph break.

These checks are not Case-shaped (one function through torch.compile): each drives its own tool,
then proves what compilechecks.check_function proves (dynamo captured a graph, the compiled code
ran, eager's numbers) and what the tool itself promises. The dynamo code they reach
(`compiled_autograd`, `aot_compile`, `package`, `graph_region_tracker`, guard printing, the
variable trackers' `reconstruct`) is run by none of the Case-shaped checks:
docs/torch_suites.md#user-style-python-through-dynamo.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import itertools
import logging
import operator
import os
import random
import tempfile
from collections.abc import Callable, Iterator, ValuesView
from dataclasses import dataclass
from typing import Any

import torch
from torch.testing._internal.common_utils import TestCase

from harness.interop.subjects import copy_function
from harness.torch_suites.compiled.compilechecks import (Backend, FallbackToEager, check_function, check_recompiles,
                                                compiled_user_function, counting, prove_compiled)
from harness.torch_suites.dynamo.dynamopaths import seeded_randn
from harness.torch_suites.dynamo.pythonpaths import Case


@dataclass(frozen=True)
class Tool:
    """One of torch.compile's tools and the check that drives it under one backend, for each of
    `backends`."""

    name: str
    check: Callable[[TestCase, Backend], None]
    backends: tuple[Backend, ...] = (Backend.EAGER, Backend.AOT_EAGER)


# --- Compiled autograd: the backward pass as a graph of its own -------------------------------------

TRAINING_STEPS = 2  # gradients accumulate over both, and each backward must run a compiled autograd graph


def _model(accumulated: list[str]) -> torch.nn.Module:
    """A small network with the hooks compiled autograd must run inside its graph: a module's
    backward pre-hook and backward hook, a parameter's gradient hook, and a post-accumulate-grad hook
    that records each accumulation in `accumulated`."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model[0].register_full_backward_pre_hook(lambda module, grads: (grads[0] * 0.5,))
    model[2].register_full_backward_hook(lambda module, grads_in, grads_out: None)
    model[0].weight.register_hook(lambda grad: grad * 2)
    model[2].bias.register_post_accumulate_grad_hook(lambda parameter: accumulated.append("bias"))
    return model


def _training_loss(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    y = model(x)
    return ((y * y).sin() - x.sum(1, keepdim=True)).pow(2).mean()


def _step(run: Callable[[torch.nn.Module, torch.Tensor], torch.Tensor], model: torch.nn.Module,
          x: torch.Tensor) -> torch.Tensor:
    """One training step's forward, under saved-tensor hooks (packed and unpacked in the backward)."""
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 1.0, lambda t: t):
        return run(model, x)


def check_compiled_autograd(case: TestCase, backend: Backend) -> None:
    """Training steps whose forward runs through torch.compile and whose backward runs under
    compiled autograd (`torch._dynamo.compiled_autograd._enable`), which records the autograd graph,
    with its module, tensor, post-accumulate and saved-tensor hooks, and hands it to its own
    torch.compile: both counting backends must capture a graph and run it on every step, and the
    losses, the accumulated parameter gradients and the hook calls must be eager's."""
    ours, theirs = [], []
    model, twin = _model(ours), _model(theirs)
    forward, backward = counting(backend), counting(backend)
    run = compiled_user_function(_training_loss, backend, forward)
    torch._dynamo.compiled_autograd.reset()
    try:
        for number in range(TRAINING_STEPS):
            x = seeded_randn(3, 4, seed=number, requires_grad=True)  # else the full backward hook warns, in the graph
            with torch._dynamo.compiled_autograd._enable(
                    lambda graph: torch.compile(graph, backend=backward, fullgraph=True)):
                loss = _step(run, model, x)
                loss.backward()
            expected = _step(_training_loss, twin, x)
            expected.backward()
            case.assertEqual(loss, expected, msg=f"loss of step {number + 1}")
    finally:
        torch._dynamo.compiled_autograd.reset()
    prove_compiled(forward, calls=TRAINING_STEPS)
    try:
        prove_compiled(backward, calls=TRAINING_STEPS)
    except FallbackToEager as error:
        raise FallbackToEager(f"compiled autograd: {error}") from error
    case.assertEqual([p.grad for p in model.parameters()], [p.grad for p in twin.parameters()])
    case.assertEqual((ours, len(ours)), (theirs, TRAINING_STEPS))


# --- Ahead-of-time compile: save, load, call -------------------------------------------------------

def _precompiled(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    hidden = torch.nn.functional.gelu(x @ scale.T) + x.mean()
    return hidden.softmax(-1) * scale.sum()


@dataclass
class GraphRuns:
    """How many times the loaded function's graph ran (counted by a wrapper in its globals)."""

    count: int = 0


def count_graph_runs(loaded: Any) -> GraphRuns:
    """Wrap the graph a loaded ahead-of-time compiled function calls: its bytecode looks the graph
    up by its backend id in the function's globals, so every call that runs the graph counts."""
    namespace, name = loaded.fn.__globals__, loaded._artifacts.backend_id
    graph, runs = namespace[name], GraphRuns()

    def run(*args: Any) -> Any:
        runs.count += 1
        return graph(*args)

    namespace[name] = run
    return runs


def check_precompile(case: TestCase, backend: Backend) -> None:
    """`torch.compile(fn, fullgraph=True).aot_compile(...)`: compiled before the first call, saved
    to a file (graph, guards, bytecode) and loaded back; the loaded function must run its graph and
    give eager's numbers, and its guards (loaded from the file) must refuse inputs of another dtype."""
    x, scale = seeded_randn(4, 3), seeded_randn(5, 3, seed=1)
    torch._dynamo.reset()
    compiled = torch.compile(_precompiled, fullgraph=True, backend=backend.value).aot_compile(((x, scale), {}))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "precompiled.bin")
        compiled.save_compiled_function(path)
        with open(path, "rb") as file:
            loaded = type(compiled).deserialize(file.read())
    runs = count_graph_runs(loaded)
    case.assertEqual(loaded(x, scale), _precompiled(x, scale))
    if runs.count != 1:
        raise FallbackToEager(f"the loaded ahead-of-time compiled function ran its graph {runs.count} times in 1 call")
    with case.assertRaisesRegex(RuntimeError, "GuardManager check failed"):
        loaded(x.double(), scale.double())


def check_precompile_module(case: TestCase, backend: Backend) -> None:
    """A module compiled ahead of time (`OptimizedModule._aot_compile`, one full graph per calling
    context: autograd on, and under `no_grad`), serialized and loaded into a fresh module of the same
    weights: in each context the loaded module must run the graph compiled for it (dispatched by
    the loaded guards) and give the plain module's numbers."""
    from torch._dynamo.aot_compile import ModelInput

    x, plain = seeded_randn(4, 3), _Scaled()
    with torch._dynamo.config.patch(enable_aot_compile=True):
        torch._dynamo.reset()
        compiled = torch.compile(_Scaled(), fullgraph=True, backend=backend.value)
        compiled._aot_compile([ModelInput((x,), {}, []), ModelInput((x,), {}, [torch.no_grad()])])
        loaded = torch.compile(_Scaled(), fullgraph=True, backend=backend.value)
        loaded._load_aot_compiled_module(compiled._save_aot_compiled_module())
    results = getattr(loaded.forward, "compiled_results", None)
    if not results:
        raise FallbackToEager("the loaded module holds no precompiled graph: it runs its forward eagerly")
    runs = [count_graph_runs(result) for result in results]
    case.assertEqual(loaded(x), plain(x))
    with torch.no_grad():
        case.assertEqual(loaded(x), plain(x))
    if [graph.count for graph in runs] != [1, 1]:
        raise FallbackToEager(f"the loaded module's graphs ran {[graph.count for graph in runs]} times in one call "
                              "per context: each context must run the graph compiled for it")


# --- Graph deduplication: repeated blocks become one subgraph -------------------------------------

REPEATS = 3


def _block(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ weight).sin() + x


def _repeated_blocks(x, weight):
    for _ in range(REPEATS):
        x = _block(x, weight)
    return x


def check_graph_deduplication(case: TestCase, backend: Backend) -> None:
    """A model that repeats one block, compiled with `use_graph_deduplication`: dynamo's region
    tracker must find the repeats and the captured graph call one subgraph for each of them
    (`invoke_subgraph`), with eager's outputs and input gradients."""
    shapes = Case("repeated_blocks", _repeated_blocks, ((3, 3), (3, 3)))
    with torch._dynamo.config.patch(use_graph_deduplication=True):
        counter = check_function(case, _repeated_blocks, shapes.inputs, backend)
    subgraphs = [node for graph in counter.graphs for node in graph.graph.nodes
                 if node.target is torch.ops.higher_order.invoke_subgraph]
    case.assertTrue(len(subgraphs) == REPEATS, f"{REPEATS} repeated blocks, {len(subgraphs)} subgraph calls: "
                    "the repeats were not deduplicated")


# --- Objects made in the region and returned: dynamo rebuilds them as Python objects -------------

PROBE = [1.0, 2.0]  # what a returned callable is called with


def _returned_objects(x):
    y = x * 2
    table = {"a": 1, "b": 2}
    return y, {"range": range(1, 5, 2), "set": {1, 2}, "frozenset": frozenset({3}),
               "ordered": collections.OrderedDict(a=1), "deque": collections.deque([1, 2], maxlen=3),
               "keys": table.keys(), "values": table.values(), "items": table.items(), "dict": dict(table),
               "defaultdict": collections.defaultdict(int, a=1), "counter": collections.Counter("aab"),
               "size": x.shape, "made_size": torch.Size([2, 3]), "list": [y, 1], "exception": ValueError("kept", 2),
               "partial": functools.partial(operator.mul, 2), "itemgetter": operator.itemgetter(1),
               "methodcaller": operator.methodcaller("count", 1.0), "closure": lambda seq: len(seq) + y.shape[0],
               "bound_format": "{}".format, "random": random.Random(3), "list_iterator": iter([1, 2]),
               "range_iterator": iter(range(3)), "tuple_iterator": iter((1, 2)), "reversed": reversed([1, 2]),
               "count": itertools.count(2), "repeat": itertools.repeat(1, 3), "zip": zip([1, 2], "ab"),
               "map": map(abs, [-1, 2]), "filter": filter(None, [0, 1]), "chain": itertools.chain([1], [2]),
               "zip_longest": itertools.zip_longest([1], [2, 3])}  # not enumerate, islice: dynamo cannot rebuild them


def observed(value: Any) -> Any:
    """What a user sees of a returned object: an iterator's next items, a callable's answer, a random
    generator's next draw, an exception's type and arguments, a values view's items (views never
    compare equal); the value itself otherwise."""
    if isinstance(value, ValuesView):
        return list(value)
    if isinstance(value, Iterator):
        return list(itertools.islice(value, 4))
    if isinstance(value, random.Random):
        return value.random()
    if isinstance(value, BaseException):
        return type(value), value.args
    return value(PROBE) if callable(value) else value


def check_returned_objects(case: TestCase, backend: Backend) -> None:
    """A compiled function that makes Python objects of every kind dynamo models (containers, dict
    views, iterators, itertools objects, partials, closures, bound methods, exceptions, a random
    generator) and returns them: dynamo must rebuild each after the graph ran, and the user must see
    what eager returns (the same items, answers, draws)."""
    counter = counting(backend)
    actual, made = compiled_user_function(_returned_objects, backend, counter)(seeded_randn(4, 3))
    prove_compiled(counter, calls=1)
    expected, wanted = _returned_objects(seeded_randn(4, 3))
    case.assertEqual(actual, expected)
    for name, value in wanted.items():
        case.assertEqual(observed(made[name]), observed(value), msg=f"the returned {name}")


# --- Compile logging: the artifacts torch._logging turns on ---------------------------------------

ARTIFACTS = ("guards", "graph_code", "bytecode", "trace_source", "recompiles_verbose")


class Records(logging.Handler):
    """Keeps every record torch's loggers emit."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def artifacts(self) -> set[str]:
        """The artifacts among the records: an artifact's logger is named `module.__artifact`."""
        return {record.name.rpartition(".__")[2] for record in self.records if ".__" in record.name}


@contextlib.contextmanager
def captured_logs(**settings: Any) -> Iterator[Records]:
    """torch's logs set as `torch._logging.set_logs(**settings)`, kept in a handler instead of
    written to stderr, then set back to torch's defaults."""
    torch._logging.set_logs(**settings)
    records = Records()
    for logger in torch_loggers():  # set_logs gives each of torch's registered logs a handler of its own
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.addHandler(records)
    try:
        yield records
    finally:
        for logger in torch_loggers():
            logger.removeHandler(records)
        torch._logging.set_logs()


def torch_loggers() -> list[logging.Logger]:
    """torch's loggers that hold handlers (those torch._logging configured)."""
    return [logger for name, logger in list(logging.root.manager.loggerDict.items())
            if isinstance(logger, logging.Logger) and name.split(".")[0] == "torch" and logger.handlers]


def _logged(x):
    return torch.nn.functional.silu(x).cumsum(0) * x.shape[0]


def check_compile_logs(case: TestCase, backend: Backend) -> None:
    """One function compiled, then recompiled for another dtype, with dynamo's debug log and the
    guards, graph code, bytecode, traced source and (verbose) recompile artifacts on: the calls must give eager's
    numbers from captured graphs, and the records must hold every artifact turned on and dynamo's
    own debug messages; the logs are torch's defaults again afterwards."""
    steps = (lambda: [seeded_randn(4, 3)], lambda: [seeded_randn(4, 3).double()])
    with captured_logs(dynamo=logging.DEBUG, **dict.fromkeys(ARTIFACTS, True)) as logs:
        check_recompiles(case, _logged, steps, 2, backend)
    missing = sorted(set(ARTIFACTS) - logs.artifacts())
    case.assertFalse(missing, f"artifacts turned on but never logged: {missing}")
    case.assertTrue(any(record.name.startswith("torch._dynamo.") and record.levelno == logging.DEBUG
                        for record in logs.records), "no debug record of dynamo's")
    case.assertGreater(logging.getLogger("torch._dynamo").getEffectiveLevel(), logging.DEBUG,
                       "dynamo's debug log is still on after the check")


# --- torch.compile's switches: a compiled module, marks on inputs, stances, run-only -------------

class _Scaled(torch.nn.Module):
    """A module compiled whole (`torch.compile(module)`, `module.compile()`), by one method, and ahead
    of time (`check_precompile_module`)."""

    def __init__(self) -> None:
        super().__init__()
        with torch.random.fork_rng():
            torch.manual_seed(0)
            self.lin = torch.nn.Linear(3, 3)
        self.scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu() * self.scale

    def project(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).sin()


def fresh_scaled() -> _Scaled:
    """A `_Scaled` whose class has forward and method code of its own: the eager twin's calls (and
    the other backend's check, in the same process) must not make the compiled module's code hot,
    which at CinderX's threshold 1 would run it natively, past dynamo's frame hook."""
    methods = {name: copy_function(getattr(_Scaled, name), name) for name in ("forward", "project")}
    return type("Scaled", (_Scaled,), methods)()


def check_optimized_module(case: TestCase, backend: Backend) -> None:
    """`torch.compile(module)` gives an OptimizedModule that answers for the module it wraps (its
    attributes, `dir`, `state_dict` under `_orig_mod.`, train and eval switched through it);
    `module.compile()` compiles in place and `torch.compile(module.method)` one method: each call
    must run a captured graph and give the plain module's numbers, in train and in eval mode; a deep
    copy is a compiled module of its own, around a copy, with the same numbers."""
    net, twin, counter, x = fresh_scaled(), _Scaled(), counting(backend), seeded_randn(4, 3)
    torch._dynamo.reset()
    optimized = torch.compile(net, backend=counter)
    case.assertIs(optimized._orig_mod, net)
    case.assertIs(optimized.lin, net.lin)
    case.assertIn("lin", dir(optimized))
    case.assertEqual(set(optimized.state_dict()), {f"_orig_mod.{key}" for key in net.state_dict()})
    case.assertEqual(optimized(x), twin(x))
    optimized.eval()
    case.assertEqual((optimized.training, net.training), (False, False))
    case.assertEqual(optimized(x), twin.eval()(x))
    in_place = fresh_scaled()
    in_place.compile(backend=counter)
    case.assertEqual(in_place(x), twin(x))
    case.assertEqual(torch.compile(net.project, backend=counter)(x), twin.project(x))
    prove_compiled(counter, calls=4)
    copied = copy.deepcopy(optimized)  # through OptimizedModule.__reduce__: compiled again, around a copy
    case.assertIsInstance(copied, torch._dynamo.eval_frame.OptimizedModule)
    case.assertIsNot(copied._orig_mod, net)
    case.assertEqual(copied(x), twin(x))


def _stanced(x):
    return x.cos() * x.shape[0]


def check_stances_and_marks(case: TestCase, backend: Backend) -> None:
    """Inputs marked dynamic (`mark_dynamic`, `maybe_mark_dynamic`: one graph for both sizes) and
    static (`mark_static`: a graph of its own), `torch._dynamo.run`, which runs only what was
    compiled before, then `torch.compiler.set_stance`: a recompile under `fail_on_recompile` raises,
    under `eager_on_recompile` it runs eagerly. Every answer must be eager's and every
    call before the stances must run a captured graph."""
    counter = counting(backend)
    run = compiled_user_function(_stanced, backend, counter)
    marked, maybe, static = seeded_randn(5, 3), seeded_randn(6, 3), seeded_randn(7, 3)
    torch._dynamo.mark_dynamic(marked, 0)
    torch._dynamo.maybe_mark_dynamic(maybe, 0)
    torch._dynamo.mark_static(static, 0)
    for x in (marked, maybe, static):
        case.assertEqual(run(x), _stanced(x))
    graphs = counter.captured
    case.assertEqual(torch._dynamo.run(run)(maybe), _stanced(maybe))
    prove_compiled(counter, calls=4)
    with torch.compiler.set_stance("fail_on_recompile"), case.assertRaisesRegex(RuntimeError, "fail_on_recompile"):
        run(marked.half())
    with torch.compiler.set_stance("eager_on_recompile"):  # last: its eager run makes the code hot under CinderX
        case.assertEqual(run(marked.double()), _stanced(marked.double()))
    case.assertEqual(counter.captured, graphs, "a graph compiled under a stance that forbids it")


# --- torch._dynamo.export and explain: the graph handed to the user ------------------------------

def _exported(x, y):
    return (x.sin() + y).relu(), x.shape[0]


def check_export_and_explain(case: TestCase, backend: Backend) -> None:
    """`torch._dynamo.export` hands the user the captured graph (at the torch level under dynamo
    alone, as aten operators through AOTAutograd's tracer) with its signature rewritten to the
    function's; the graph must be one, hold calls, and give eager's outputs; `explain` must count
    one graph and no break for the same function. The function gets code of its own in each check:
    run eagerly before (by the other backend's check), CinderX at threshold 1 would run it natively,
    past dynamo's frame hook."""
    x, y = seeded_randn(4, 3), seeded_randn(4, 3, seed=1)
    subject = copy_function(_exported, "exported")
    torch._dynamo.reset()
    graph, _ = torch._dynamo.export(subject, aten_graph=backend is Backend.AOT_EAGER)(x, y)
    case.assertTrue(any(node.op == "call_function" for node in graph.graph.nodes), "export captured an empty graph")
    case.assertEqual(graph(x, y), _exported(x, y))
    explained = torch._dynamo.explain(subject)(x, y)
    case.assertEqual((explained.graph_count, explained.graph_break_count), (1, 0), str(explained))


# --- Context managers live across a graph break: dynamo rebuilds each around the resumed code -----

def _across_managers(x):
    y = x.sin()
    with contextlib.nullcontext(), torch.no_grad(), torch.autocast("cpu", enabled=False), \
            torch._C.DisableTorchFunctionSubclass(), torch._C.DisableTorchFunction(), \
            torch.autograd.graph.disable_saved_tensors_hooks("off"), torch.inference_mode(False), torch.enable_grad(), \
            torch.set_grad_enabled(False), torch._dynamo.error_on_graph_break(False):
        y = y * 2
        torch._dynamo.graph_break()
        z = y.cos() + torch.is_grad_enabled()
    return z


def check_managers_across_break(case: TestCase, backend: Backend) -> None:
    """A graph break inside ten context managers at once (grad modes, autocast, inference mode,
    torch-function and saved-tensor-hook switches, `error_on_graph_break`): dynamo must capture the
    graph before the break, rebuild every manager as Python around the break, and resume into a
    second graph; both must run, with eager's numbers. The function gets code of its own in each
    check, so at CinderX's threshold 1 it is never hot (run natively) when dynamo meets it."""
    counter = counting(backend)
    subject = copy_function(_across_managers, "across_managers")
    actual = compiled_user_function(subject, backend, counter)(seeded_randn(4, 3))
    prove_compiled(counter, calls=1)
    case.assertGreaterEqual(min(counter.captured, counter.executed), 2,
                            "the code after the break did not resume into a graph")
    case.assertEqual(actual, _across_managers(seeded_randn(4, 3)))


TOOLS = (Tool("compiled_autograd", check_compiled_autograd), Tool("precompile", check_precompile),
         Tool("precompile_module", check_precompile_module),
         Tool("graph_deduplication", check_graph_deduplication), Tool("compile_logs", check_compile_logs),
         Tool("returned_objects", check_returned_objects), Tool("optimized_module", check_optimized_module),
         Tool("stances_and_marks", check_stances_and_marks), Tool("export_and_explain", check_export_and_explain),
         Tool("managers_across_break", check_managers_across_break))

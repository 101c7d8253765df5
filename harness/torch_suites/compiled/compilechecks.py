"""torch.compile checks over PyTorch's databases (P3 without a checkout), shared by p3/'s modules.

Equal numbers prove nothing about torch.compile: a silent fallback to eager gives eager's numbers.
So every check runs through a counting backend (harness/interop/backend.py) around the real one
and fails with `FallbackToEager` unless dynamo captured a graph and every call through
torch.compile's callable ran what the backend built. Outputs are compared with eager through
PyTorch's `TestCase.assertEqual`, under the tolerances the entry's `DecorateInfo` overrides give.

The hot-state checks (`HotState`) measure the bypass found by the interop matrix
(docs/interop.md#findings): the callable torch.compile is given is made hot first, under a JIT
configuration JIT-compiled (CinderX confirms it), and must still be captured. Under a configuration
without the JIT the same calls run interpreted: the check is the baseline.
"""

from __future__ import annotations

import copy
import functools
import re
import types
import unittest
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from itertools import islice
from typing import Any

import torch
from torch.testing._internal.common_utils import TestCase
from torch.utils._pytree import tree_flatten

from harness.interop.backend import CountingBackend
from harness.interop.cells import claim
from harness.interop.subjects import copy_function
from harness.run import jit
from harness.smoke.jitcheck import hot_calls, jit_on
from harness.torch_suites.shared.determinism import assert_same, deterministic, seeded
from harness.torch_suites.optim.optimizers import takes_vectors


class Backend(StrEnum):
    """torch.compile's backends that P3 runs: dynamo alone, AOTAutograd, Inductor's C++ on CPU."""

    EAGER = "eager"
    AOT_EAGER = "aot_eager"
    INDUCTOR = "inductor"


class HotState(StrEnum):
    """What is hot (JIT-compiled under a JIT configuration) when torch.compile meets it."""

    ENTRY = "entry"  # the database's own Python callable (an OpInfo's function, a module, `step`)
    FUNCTION_WRAPPER = "function_wrapper"  # a function of ours, as a user writes, that calls the entry
    MODULE_WRAPPER = "module_wrapper"  # an nn.Module of ours whose forward calls the entry


# Samples compiled per database entry. Every sample recompiles (new shapes, new guards), and the CPU
# cost per sample was measured on this machine (2 cores): eager 0.15 s, aot_eager 0.2 s, Inductor
# 1 to 3 s (a C++ build each). The first samples of an OpInfo are its plain cases; the later ones
# vary broadcasting and keyword arguments, which dynamo traces through the same Python.
SAMPLES = {Backend.EAGER: 4, Backend.AOT_EAGER: 3, Backend.INDUCTOR: 1}


class FallbackToEager(AssertionError):
    """torch.compile returned eager's numbers without running a captured graph."""


def prove_compiled(backend: CountingBackend, calls: int) -> None:
    """Fail unless dynamo captured at least one graph and its compiled code ran on every call; the
    message carries dynamo's first graph-break reason, when it recorded one."""
    if backend.captured == 0:
        raise FallbackToEager(f"dynamo captured no graph: torch.compile ran the code eagerly{graph_break()}")
    if backend.executed < calls:
        raise FallbackToEager(f"{calls} calls through torch.compile ran the captured graph only "
                              f"{backend.executed} times: the others ran eagerly{graph_break()}")


def graph_break() -> str:
    from torch._dynamo.utils import counters

    reasons = list(counters["graph_break"])
    return f" (graph break: {reasons[0].splitlines()[0]})" if reasons else ""


def counting(backend: Backend) -> CountingBackend:
    return CountingBackend(backend.value)


def compiled(function: Callable[..., Any], backend: Backend, counter: CountingBackend,
             dynamic: bool | None = None) -> Callable[..., Any]:
    """`function` through torch.compile with the counting `backend`, from a clean dynamo state."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    return torch.compile(function, backend=counter, dynamic=dynamic)


@contextmanager
def backend_settings(backend: Backend) -> Iterator[None]:
    """Where `backend` compiles. For Inductor: its tests skip where it has no C++ compiler; its random
    numbers come from eager's generator; a C++ build that fails is `InductorBuildFailed`, naming the
    compiler's message (the same outcome under every configuration, and a test's, never the run's)."""
    if backend is not Backend.INDUCTOR:
        yield
        return
    from torch._inductor import config

    missing = missing_compiler()
    if missing:
        raise unittest.SkipTest(missing)
    with config.patch(fallback_random=True):
        try:
            yield
        except Exception as error:
            message = build_failure(error)
            if message is None:
                raise
            raise InductorBuildFailed(message) from error


_COMPILER_ERROR = re.compile(r"\berror\b", re.IGNORECASE)  # gcc's and clang's diagnostics: `file:line:col: error: ...`


class InductorBuildFailed(RuntimeError):
    """Inductor generated C++ that the machine's compiler did not build."""


class NoCompiler(UserWarning):
    """Inductor finds no working C++ compiler here: the inductor backend's tests skip."""


@functools.cache
def missing_compiler() -> str | None:
    """Why Inductor cannot build C++ here (its own compiler search, once per process, announced), or None."""
    from torch._inductor.cpp_builder import get_cpp_compiler
    from torch._inductor.exc import InvalidCxxCompiler

    try:
        get_cpp_compiler()
    except InvalidCxxCompiler as error:
        reason = f"Inductor has no C++ compiler: {error}"
        warnings.warn(f"{reason}; the inductor backend's tests skip", NoCompiler, stacklevel=2)
        return reason
    return None


def build_failure(error: BaseException) -> str | None:
    """The compiler's first error line, when a C++ build failure is behind `error` (dynamo wraps the
    backend's exceptions), else None."""
    from torch._inductor.exc import CppCompileError, InvalidCxxCompiler

    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, InvalidCxxCompiler):
            return f"Inductor's C++ build failed: {cause}"
        if isinstance(cause, CppCompileError):
            lines = [line.strip() for line in str(cause.output).splitlines() if line.strip()]
            first = next((line for line in lines if _COMPILER_ERROR.search(line)), lines[0] if lines else "no output")
            return f"Inductor's C++ build failed: {first}"
        cause = getattr(cause, "inner_exception", None) or cause.__cause__ or cause.__context__
    return None


def differentiable(value: Any) -> list[torch.Tensor]:
    """The floating-point tensors of `value` that carry a gradient."""
    return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor) and t.requires_grad
            and t.grad_fn is not None]


def input_gradients(outputs: Any, inputs: Iterable[torch.Tensor]) -> list[torch.Tensor | None]:
    """Gradients of the sum of every differentiable output with respect to `inputs`."""
    tensors, leaves = differentiable(outputs), [t for t in inputs if t.requires_grad]
    if not tensors or not leaves:
        return []
    total = sum(t.sum() if not t.is_complex() else t.abs().sum() for t in tensors)
    return list(torch.autograd.grad(total, leaves, allow_unused=True))


def leaves_of(*values: Any) -> list[torch.Tensor]:
    return [t for value in values for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


# --- The hot state: the callable torch.compile is given, JIT-compiled first -----------------------

def make_hot(function: Callable[..., Any], call: Callable[[], Any]) -> None:
    """Run `call` (which calls `function`) past the JIT's threshold; under a JIT configuration
    CinderX must then report `function` compiled, or the check would prove nothing (unless a JIT
    list restricts what CinderX compiles: a culprit search's probe decides that)."""
    with torch.no_grad():
        for _ in range(hot_calls()):
            call()
    if jit_on() and not jit.restricted_by_jit_list():
        claim(jit.is_compiled(function), f"{getattr(function, '__qualname__', function)} is JIT-compiled "
                                          f"after {hot_calls()} calls")


def fresh_function(target: Callable[..., Any], name: str) -> types.FunctionType:
    """A user's function that calls `target`, with a code object of its own: its JIT state (call
    count, compiled or not) is its own, never shared with another check's."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    return copy_function(call, name)


def _forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    return self.target(*args, **kwargs)


def module_wrapper(target: Callable[..., Any]) -> torch.nn.Module:
    """A user's module whose forward calls `target`: a class of its own with a forward code of its own."""
    module = type("UserModule", (torch.nn.Module,), {"forward": copy_function(_forward, "forward")})()
    module.target = target
    return module


def python_callable(target: Any) -> Callable[..., Any] | None:
    """The Python function the JIT can compile behind `target` (a function, or a module's
    forward); None for builtins and C++ operators, which the JIT never compiles."""
    if isinstance(target, types.FunctionType):
        return target
    if isinstance(target, torch.nn.Module):
        forward = getattr(type(target), "forward", None)
        return forward if isinstance(forward, types.FunctionType) else None
    if isinstance(target, types.MethodType) and isinstance(target.__func__, types.FunctionType):
        return target.__func__
    return None


def hot_subject(state: HotState, entry: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(what torch.compile is given, the Python function the JIT must have compiled) for `state`."""
    if state is HotState.ENTRY:
        function = python_callable(entry)
        assert function is not None, "only an entry with a Python callable has a hot entry state"
        return entry, function
    if state is HotState.FUNCTION_WRAPPER:
        wrapper = fresh_function(entry, "user_function")
        return wrapper, wrapper
    module = module_wrapper(entry)
    return module, type(module).forward


def check_hot(case: TestCase, state: HotState, entry: Callable[..., Any], backend: Backend,
              args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """`state`'s subject made hot on these inputs, then torch.compile'd: captured, and eager's numbers."""
    subject, function = hot_subject(state, entry)
    exact = deterministic(subject, *args, **kwargs)
    make_hot(function, lambda: subject(*args, **kwargs))
    counter = counting(backend)
    with backend_settings(backend):
        actual = seeded(compiled(subject, backend, counter), *args, **kwargs)
    prove_compiled(counter, calls=1)
    assert_same(case, actual, seeded(subject, *args, **kwargs), exact)


# --- The checks, per kind of database entry ---------------------------------------------------------

def check_op(case: TestCase, device: str, dtype: torch.dtype, op: Any, backend: Backend,
             dynamic: bool | None = None) -> None:
    """An OpInfo's first samples (SAMPLES) through torch.compile: eager's outputs and, where the op
    supports backward in the dtype, eager's input gradients through the backend's backward graph
    (AOTAutograd's; Inductor's kernels, as Inductor's own test_comprehensive checks gradients)."""
    grad = (backend is not Backend.EAGER and op.supports_autograd
            and dtype in op.supported_backward_dtypes(torch.device(device).type))
    for sample in islice(op.sample_inputs(device, dtype, requires_grad=grad), SAMPLES[backend]):
        args = (sample.input, *sample.args)
        exact = deterministic(op, *args, **sample.kwargs)
        counter = counting(backend)
        with backend_settings(backend):
            actual = seeded(compiled(fresh_function(op, "call_op"), backend, counter, dynamic), *args, **sample.kwargs)
            prove_compiled(counter, calls=1)
            expected = seeded(op, *args, **sample.kwargs)
            assert_same(case, actual, expected, exact)
            if grad and exact:
                inputs = leaves_of(args, sample.kwargs)
                case.assertEqual(input_gradients(sample.output_process_fn_grad(actual), inputs),
                                 input_gradients(sample.output_process_fn_grad(expected), inputs))


def compiled_user_function(function: Callable[..., Any], backend: Backend, counter: CountingBackend,
                           dynamic: bool | None = None) -> Callable[..., Any]:
    """`function` as a user hands it to torch.compile: through a fresh wrapper of its own name."""
    return compiled(fresh_function(function, f"call_{function.__name__.strip('_')}"), backend, counter, dynamic)


def check_function(case: TestCase, function: Callable[..., Any], inputs: Callable[[bool], list[torch.Tensor]],
                   backend: Backend, dynamic: bool | None = None, *,
                   counter: CountingBackend | None = None) -> CountingBackend:
    """A user's function through torch.compile gives eager's outputs (and, past dynamo alone, the
    input gradients of AOTAutograd's backward), on inputs built afresh for each run; returns the
    counting backend (`counter`, or one around `backend`), whose graphs a caller may inspect further."""
    grad = backend is not Backend.EAGER
    ours, theirs = inputs(grad), inputs(grad)
    counter = counting(backend) if counter is None else counter
    actual = compiled_user_function(function, backend, counter, dynamic)(*ours)
    prove_compiled(counter, calls=1)
    expected = function(*theirs)
    case.assertEqual(actual, expected)
    if grad:
        case.assertEqual(input_gradients(actual, ours), input_gradients(expected, theirs))
    return counter


def check_recompiles(case: TestCase, function: Callable[..., Any], steps: Sequence[Callable[[], list[torch.Tensor]]],
                     graphs: int, backend: Backend) -> None:
    """One torch.compile of `function` called once per step (each step sets its state and gives
    its inputs): every call gives eager's outputs in that state and runs a captured graph, and the
    guards failed where the state changed (at least `graphs` graphs captured): a guard that
    wrongly passes would reuse a graph built for another state."""
    counter = counting(backend)
    run = compiled_user_function(function, backend, counter)
    for number, step in enumerate(steps, 1):
        actual, expected = run(*step()), function(*step())
        case.assertEqual(actual, expected, msg=f"call {number} of {len(steps)}")
    prove_compiled(counter, calls=len(steps))
    case.assertGreaterEqual(counter.captured, graphs, f"{len(steps)} calls in changed states captured "
                            f"{counter.captured} graph(s): the guards did not fail where the state changed")


def first_op_sample(op: Any, device: str, dtype: torch.dtype) -> tuple[tuple[Any, ...], dict[str, Any]]:
    sample = next(iter(op.sample_inputs(device, dtype, requires_grad=False)))
    return (sample.input, *sample.args), dict(sample.kwargs)


def module_inputs(module_info: Any, device: str, dtype: torch.dtype, training: bool, limit: int) -> list[Any]:
    """The ModuleInfo's first `limit` module inputs that have a forward input."""
    inputs = module_info.module_inputs_func(module_info, device=device, dtype=dtype, requires_grad=True,
                                            training=training)
    return [one for one in inputs if one.forward_input is not None][:limit]


def build_module(module_info: Any, module_input: Any, device: str, dtype: torch.dtype, training: bool) -> torch.nn.Module:
    """The module of one module input, built from a fixed RNG state (the same weights every time)."""
    constructor = module_input.constructor_input
    module = seeded(module_info.module_cls, *constructor.args, **constructor.kwargs)
    return module.to(device).to(dtype).train(training)


def check_module(case: TestCase, device: str, dtype: torch.dtype, module_info: Any, training: bool,
                 backend: Backend) -> None:
    """A ModuleInfo's first module inputs: the module through torch.compile gives its twin's
    (eager) outputs, and the same gradients of parameters and inputs."""
    for module_input in module_inputs(module_info, device, dtype, training, SAMPLES[backend]):
        module = build_module(module_info, module_input, device, dtype, training)
        twin = copy.deepcopy(module)
        args, kwargs = module_input.forward_input.args, module_input.forward_input.kwargs
        exact = deterministic(twin, *args, **kwargs)
        counter = counting(backend)
        with backend_settings(backend):
            actual = seeded(compiled(module, backend, counter), *args, **kwargs)
            prove_compiled(counter, calls=1)
            expected = seeded(twin, *args, **kwargs)
            assert_same(case, actual, expected, exact)
            if exact:
                inputs = leaves_of(args, kwargs)
                case.assertEqual(input_gradients(actual, [*module.parameters(), *inputs]),
                                 input_gradients(expected, [*twin.parameters(), *inputs]))


def first_module(module_info: Any, device: str, dtype: torch.dtype, training: bool
                 ) -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]:
    module_input = module_inputs(module_info, device, dtype, training, 1)[0]
    forward = module_input.forward_input
    return build_module(module_info, module_input, device, dtype, training), tuple(forward.args), dict(forward.kwargs)


OPTIMIZER_STEPS = 3  # each step changes the optimizer's state (its step count): dynamo guards, and may recompile


def parameters(optim_info: Any, device: str, dtype: torch.dtype) -> list[torch.nn.Parameter]:
    """A weight matrix and a bias vector (only the matrix for optimizers that refuse vectors)."""
    shapes = [(4, 3), (4,)] if takes_vectors(optim_info) else [(4, 3)]
    generator = torch.Generator().manual_seed(0)
    return [torch.nn.Parameter(torch.randn(shape, generator=generator).to(device, dtype)) for shape in shapes]


def optimizer_pair(optim_info: Any, optim_input: Any, device: str, dtype: torch.dtype) -> tuple[Any, Any]:
    """Two optimizers of the same kind and settings over equal, separate parameters."""
    first = parameters(optim_info, device, dtype)
    second = [torch.nn.Parameter(p.detach().clone()) for p in first]
    return optim_info.optim_cls(first, **optim_input.kwargs), optim_info.optim_cls(second, **optim_input.kwargs)


def set_gradients(optimizer: Any, step: int, optim_info: Any) -> None:
    """The same gradients for every optimizer of a check at one step: sparse for an optimizer that
    takes only sparse gradients (SparseAdam)."""
    generator = torch.Generator().manual_seed(step)
    for group in optimizer.param_groups:
        for p in group["params"]:
            grad = torch.randn(p.shape, generator=generator).to(p.device, p.dtype)
            p.grad = grad.to_sparse() if optim_info.only_supports_sparse_grads else grad


def stepper(optimizer: Any) -> Callable[[], Any]:
    """What one training step calls: `step()`, with a closure where the optimizer needs one."""
    def closure() -> torch.Tensor:
        return sum((p * p).sum() for group in optimizer.param_groups for p in group["params"]).detach()

    return fresh_function(lambda: optimizer.step(closure), "optimizer_step")


def check_optimizer(case: TestCase, device: str, dtype: torch.dtype, optim_info: Any, backend: Backend) -> None:
    """An OptimizerInfo's first inputs: steps through torch.compile move the parameters as eager's do."""
    for optim_input in list(optim_info.optim_inputs_func(device=device, dtype=dtype))[:SAMPLES[backend]]:
        optimizer, twin = optimizer_pair(optim_info, optim_input, device, dtype)
        counter = counting(backend)
        with backend_settings(backend):
            step = compiled(stepper(optimizer), backend, counter)
            for number in range(OPTIMIZER_STEPS):
                set_gradients(optimizer, number, optim_info)
                set_gradients(twin, number, optim_info)
                step()
                stepper(twin)()
            prove_compiled(counter, calls=OPTIMIZER_STEPS)
        case.assertEqual([p for g in optimizer.param_groups for p in g["params"]],
                         [p for g in twin.param_groups for p in g["params"]])

"""One cell of the interop matrix: bring a fresh subject to a JIT state, torch.compile it, prove it.

A cell passes only if dynamo captured exactly one graph and every call through torch.compile's
callable ran that graph (the counting backend says so) with eager's numbers, and, under a JIT
configuration, if CinderX confirms each JIT state the cell claims (after waiting for background
compiles, except where the claim is that a compile is still queued). In other configurations the
same calls run interpreted and the JIT claims check nothing: the cell is the baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pytest
import torch

from harness.interop.backend import CountingBackend
from harness.interop.subjects import Kind, Subject, build, copy_function
from harness.run import jit
from harness.smoke.jitcheck import REQUEST, hot_calls, jit_on

CALLS = 3  # calls through torch.compile's callable in each phase of a cell
QUEUE_ATTEMPTS = 20  # fresh subjects tried until one is seen with its compile still queued


class State(StrEnum):
    """What the JIT did with the target before (or while) torch.compile meets it."""

    FRESH = "fresh"  # never called
    HOT = "hot"  # called past the threshold: JIT-compiled
    UNCOMPILED = "uncompiled"  # JIT-compiled, then its JIT code thrown away (force_uncompile)
    DEOPTIMIZED = "deoptimized"  # JIT-compiled; met while deoptimized (jit.pause(deopt_all)), run again after
    QUEUED = "queued"  # called past the threshold, its compile still queued on the background thread
    JIT_CALLER = "jit-caller"  # torch.compile's callable called from a JIT-compiled function
    COMPILED_FIRST = "compiled-first"  # decorated before it got hot: called past the threshold through torch.compile
    HOT_AFTER_CAPTURE = "hot-after-capture"  # captured, then called directly past the threshold, then compiled again


class JitStateNotReached(AssertionError):
    """The JIT state a cell claims was not what CinderX reports: the cell would prove nothing."""


@dataclass
class Cell:
    """A subject, its counting backend and the calls made through torch.compile's callable."""

    subject: Subject
    fullgraph: bool
    backend: CountingBackend = field(default_factory=CountingBackend)
    compiled: Callable[..., Any] | None = None
    calls: int = 0
    x: torch.Tensor = field(default_factory=lambda: torch.linspace(-1.0, 1.0, 4))

    def compile(self) -> None:
        self.compiled = self.subject.compile(self.backend, self.fullgraph)

    def compile_and_run(self) -> None:
        self.compile()
        self.run_compiled()

    def run_compiled(self, times: int = CALLS, call: Callable[..., Any] | None = None) -> None:
        """Call torch.compile's callable (through `call`, when given) and prove every call ran the graph."""
        assert self.compiled is not None
        via = call or self.subject.call
        for _ in range(times):
            result = via(self.compiled, self.x)
            self.calls += 1
            self.prove_graph_ran()
        torch.testing.assert_close(result, self.subject.expected(self.x))

    def prove_graph_ran(self) -> None:
        name = self.subject.target.__name__
        assert self.backend.captured > 0, (
            f"dynamo captured no graph of {name}: torch.compile's callable ran it eagerly (silent fallback)")
        assert self.backend.captured == 1, f"dynamo captured {self.backend.captured} graphs of {name}, expected 1"
        assert self.backend.executed == self.calls, (
            f"the compiled graph of {name} ran in {self.backend.executed} of {self.calls} calls through "
            "torch.compile's callable: the others ran eagerly (silent fallback)")

    def call_directly(self, times: int) -> None:
        for _ in range(times):
            self.subject.direct(self.x)

    def make_hot(self) -> None:
        """Call the target directly past the threshold; CinderX must then report it JIT-compiled."""
        self.call_directly(hot_calls())
        claim_compiled(self.subject.target)


def claim(reached: bool, what: str) -> None:
    """Under a JIT configuration, fail unless CinderX confirms the JIT state `what`."""
    if jit_on() and not reached:
        raise JitStateNotReached(f"JIT state not reached (threshold {REQUEST.effective_threshold}): {what}")


def claim_compiled(function: Callable[..., Any], compiled: bool = True, wait: bool = True) -> None:
    state = "JIT-compiled" if compiled else "not JIT-compiled"
    claim(jit.is_compiled(function, wait=wait) == compiled, f"{function.__qualname__} should be {state}")


def run(state: State, kind: Kind, fullgraph: bool, backend: Callable[[], CountingBackend] = CountingBackend) -> Cell:
    """Run one cell; raises AssertionError (or torch's error) when the cell fails."""
    torch._dynamo.reset()
    name = f"cell_{state}_{kind}_{'fullgraph' if fullgraph else 'partial'}".replace("-", "_")
    cell = Cell(build(kind, name), fullgraph, backend())
    STEPS[state](cell)
    return cell


def _fresh(cell: Cell) -> None:
    claim_compiled(cell.subject.target, compiled=False)
    cell.compile_and_run()


def _hot(cell: Cell) -> None:
    cell.make_hot()
    cell.compile_and_run()


def _uncompiled(cell: Cell) -> None:
    cell.make_hot()
    jit.uncompile(cell.subject.target)
    _fresh(cell)


def _deoptimized(cell: Cell) -> None:
    cell.make_hot()
    with jit.deoptimized():
        _fresh(cell)
    claim_compiled(cell.subject.target)  # the JIT put its code back
    cell.run_compiled()


def _queued(cell: Cell) -> None:
    if jit_on() and not jit.compiles_in_background():
        pytest.skip("the JIT compiles synchronously (background compilation off): a compile is never queued")
    for attempt in range(QUEUE_ATTEMPTS):  # the compile may land before it is looked at: try a fresh subject
        if attempt:
            cell.subject = build(cell.subject.kind, f"{cell.subject.target.__name__}_{attempt}")
        cell.call_directly(hot_calls() - 1)  # the last call requests the compile
        if not jit.is_compiled(cell.subject.target, wait=False):
            break
    claim_compiled(cell.subject.target, compiled=False, wait=False)
    cell.compile()
    cell.run_compiled(times=1)
    claim_compiled(cell.subject.target)  # the queued compile landed
    cell.run_compiled()


def _jit_caller(cell: Cell) -> None:
    cell.compile()
    caller = copy_function(_caller_template, f"{cell.subject.target.__name__}_caller")
    via = lambda compiled, x: caller(cell.subject.call, compiled, x)  # noqa: E731
    cell.run_compiled(times=hot_calls(), call=via)
    claim_compiled(caller)
    cell.run_compiled(call=via)


def _caller_template(call, compiled, x):
    return call(compiled, x)


def _compiled_first(cell: Cell) -> None:
    cell.compile()
    cell.run_compiled(times=hot_calls())
    claim_compiled(entry_function(cell.compiled))


def entry_function(compiled: Any) -> Callable[..., Any]:
    """The Python function torch.compile returned (or an OptimizedModule's compiled forward)."""
    return compiled if callable(compiled) and hasattr(compiled, "__code__") else compiled.forward


def _hot_after_capture(cell: Cell) -> None:
    cell.compile()
    cell.run_compiled(times=1)
    cell.make_hot()
    cell.run_compiled()


STEPS: dict[State, Callable[[Cell], None]] = {
    State.FRESH: _fresh, State.HOT: _hot, State.UNCOMPILED: _uncompiled, State.DEOPTIMIZED: _deoptimized,
    State.QUEUED: _queued, State.JIT_CALLER: _jit_caller, State.COMPILED_FIRST: _compiled_first,
    State.HOT_AFTER_CAPTURE: _hot_after_capture,
}

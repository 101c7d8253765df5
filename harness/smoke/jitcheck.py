"""Helpers for P0 tests: make a function hot and, when the JIT is on, prove it was compiled.

A P0 test that passes under `cinderx-jit` must have run its pattern as JIT-compiled code;
otherwise it proved nothing about the JIT (a "glass prison", docs/background.md §2). Under other
configurations the same tests run interpreted and `require_compiled` checks nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.protocol import JitMode, Request
from harness.run import jit

REQUEST = Request.from_env()


def jit_on() -> bool:
    return REQUEST.mode == JitMode.ON


def jit_disengaged() -> bool:
    """True in configurations that pause the JIT while torch.compile traces (compile_disengage)."""
    return REQUEST.disengage


def hot_calls() -> int:
    """Calls after which the JIT has compiled a function: it compiles on call threshold + 1."""
    return REQUEST.effective_threshold + 2


def make_hot(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call `function` often enough to be compiled; return the last result."""
    result = None
    for _ in range(hot_calls()):
        result = function(*args, **kwargs)
    return result


def require_compiled(*functions: Callable[..., Any]) -> None:
    """Under a JIT configuration, fail unless every function is JIT-compiled now."""
    if not jit_on():
        return
    missing = [f.__qualname__ for f in functions if not jit.is_compiled(f)]
    assert not missing, f"JIT on (threshold {REQUEST.effective_threshold}) but not compiled: {missing}"

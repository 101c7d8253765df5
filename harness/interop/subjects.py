"""The kinds of callable a program hands to torch.compile, each built fresh for one cell.

Every cell gets its own code objects (copies of the templates below, renamed after the cell):
the JIT compiles and dynamo caches per code object, so a cell must never meet the state another
cell left behind. A subject knows which function's JIT state its cell claims (`target`), how a
program calls it without torch.compile (`direct`), what is handed to torch.compile, and how
torch.compile's result is called.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import torch

SCALE = 2.0


class Kind(StrEnum):
    FUNCTION = "function"
    CLOSURE = "closure"
    METHOD = "method"  # the class's function, called with the instance as first argument
    BOUND_METHOD = "bound-method"
    MODULE = "module"  # an nn.Module instance
    MODULE_FORWARD = "module-forward"  # its bound forward
    DECORATED = "decorated"  # torch.compile(backend=..., ...)(function): the decorator form


@dataclass(frozen=True)
class Subject:
    kind: Kind
    target: types.FunctionType  # whose JIT state the cell claims
    direct: Callable[[torch.Tensor], torch.Tensor]  # a call without torch.compile
    compilable: Callable[..., Any]  # handed to torch.compile
    call: Callable[[Callable[..., Any], torch.Tensor], torch.Tensor]  # calls torch.compile's result
    expected: Callable[[torch.Tensor], torch.Tensor]  # an independent copy, for reference results

    def compile(self, backend: Callable[..., Any], fullgraph: bool) -> Callable[..., Any]:
        if self.kind == Kind.DECORATED:
            return torch.compile(backend=backend, fullgraph=fullgraph)(self.compilable)
        return torch.compile(self.compilable, backend=backend, fullgraph=fullgraph)


def _scaled_sine(x):
    return torch.sin(x) * SCALE + x


def _closure_template(scale):
    def scaled_sine(x):
        return torch.sin(x) * scale + x
    return scaled_sine


def _method_template(self, x):
    return torch.sin(x) * self.scale + x


def _forward_template(self, x):
    return torch.sin(self.linear(x)) * self.scale + x


def _module_init(self):
    torch.nn.Module.__init__(self)
    self.linear = torch.nn.Linear(4, 4)
    with torch.no_grad():
        self.linear.weight.copy_(torch.eye(4))
        self.linear.bias.zero_()
    self.scale = SCALE


def copy_function(function: types.FunctionType, name: str) -> types.FunctionType:
    """`function` with a code object of its own, named `name` (JIT logs and dynamo name it so)."""
    code = function.__code__.replace(co_name=name, co_qualname=name)
    return types.FunctionType(code, function.__globals__, name, function.__defaults__, function.__closure__)


def build(kind: Kind, name: str) -> Subject:
    """A fresh subject of `kind`; `name` names its code objects."""
    target, direct, compilable, call = _parts(kind, name)
    reference = _parts(kind, f"{name}_reference")[1]
    return Subject(kind, target, direct, compilable, call, reference)


def _parts(kind: Kind, name: str) -> tuple[types.FunctionType, Callable, Callable, Callable]:
    if kind in (Kind.FUNCTION, Kind.DECORATED):
        function = copy_function(_scaled_sine, name)
        return function, function, function, _call_with_x
    if kind == Kind.CLOSURE:
        function = copy_function(_closure_template(SCALE), name)
        return function, function, function, _call_with_x
    if kind in (Kind.METHOD, Kind.BOUND_METHOD):
        method = copy_function(_method_template, name)
        instance = type(f"{name}_class", (), {"scale": SCALE, name: method})()
        bound = getattr(instance, name)
        if kind == Kind.BOUND_METHOD:
            return method, bound, bound, _call_with_x
        return method, bound, method, lambda compiled, x: compiled(instance, x)
    forward = copy_function(_forward_template, name)
    module = type(f"{name}_module", (torch.nn.Module,), {"__init__": _module_init, "forward": forward})()
    if kind == Kind.MODULE:
        return forward, module, module, _call_with_x
    return forward, module, module.forward, _call_with_x


def _call_with_x(compiled: Callable[..., Any], x: torch.Tensor) -> torch.Tensor:
    return compiled(x)

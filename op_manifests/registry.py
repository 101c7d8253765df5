"""Op registry: turns a manifest's `op:` string into a callable by lookup, never by eval.

One grammar for names (checked without importing torch, so collection stays fast):

    torch.<name>                      native torch function, torch.functional helper, or a
                                      Tensor method / Python operator spelled as in RFC-0186
                                      (`torch.view`, `torch.contiguous`, `torch.getitem`)
    torch.nn.functional.<name>        also torch.linalg, torch.special, torch.fft
    torch.ops.aten.<name>[.<overload>]  (short form: aten.<name>[.<overload>])
    torch.Tensor.<name>               (short form: Tensor.<name>)
    operator.<name>                   Python operators: getitem, add, matmul, ...

Every segment must start with a letter, so private and dunder names cannot be named. Resolution
then accepts only tensor ops: torch functions with an ATen schema, public functions of the
functional namespaces, ATen op packets, public Tensor methods minus a deny-list of methods
with side effects outside the tensor (files, shared memory, hooks, autograd).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_SEGMENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# Longest prefix first; value is the canonical namespace.
_NAMESPACES: tuple[tuple[str, str], ...] = (
    ("torch.nn.functional", "torch.nn.functional"),
    ("torch.ops.aten", "torch.ops.aten"),
    ("torch.linalg", "torch.linalg"),
    ("torch.special", "torch.special"),
    ("torch.fft", "torch.fft"),
    ("torch.Tensor", "torch.Tensor"),
    ("Tensor", "torch.Tensor"),
    ("aten", "torch.ops.aten"),
    ("operator", "operator"),
    ("torch", "torch"),
)
OPERATORS = frozenset(
    {
        "abs", "add", "and_", "eq", "floordiv", "ge", "getitem", "gt", "invert", "le",
        "lshift", "lt", "matmul", "mod", "mul", "ne", "neg", "or_", "pos", "pow", "rshift",
        "sub", "truediv", "xor",
    }
)  # fmt: skip
# Ops that read or write files, touch shared memory, install hooks or run autograd.
_DENIED = frozenset(
    {
        "from_file", "save", "load", "backward", "register_hook",
        "register_post_accumulate_grad_hook", "share_memory_", "apply_", "map_", "map2_",
        "storage", "untyped_storage", "data_ptr", "pin_memory", "numpy", "tolist",
        "handle_torch_function", "has_torch_function", "has_torch_function_unary",
        "has_torch_function_variadic",
    }
)  # fmt: skip


class UnknownOp(LookupError):
    """The op name is malformed, unknown, or not an allowed tensor op."""


@dataclass(frozen=True)
class OpName:
    namespace: str
    name: str
    overload: str | None = None

    def __str__(self) -> str:
        suffix = f".{self.overload}" if self.overload else ""
        return f"{self.namespace}.{self.name}{suffix}"


def parse(op: str) -> OpName:
    """Check the grammar (no torch import) and return the canonical name."""
    if not isinstance(op, str) or not op:
        raise UnknownOp("op must be a non-empty string like 'torch.add'")
    return _parse(op)


@functools.lru_cache(maxsize=4096)  # a few hundred distinct ops per manifest set; parsed per case
def _parse(op: str) -> OpName:
    for prefix, namespace in _NAMESPACES:
        if op.startswith(prefix + "."):
            rest = op[len(prefix) + 1 :].split(".")
            break
    else:
        raise UnknownOp(f"unknown op {op!r}: namespace must be one of {_namespace_list()}")
    if not all(_SEGMENT.match(part) for part in rest):
        raise UnknownOp(f"unknown op {op!r}: names must start with a letter (no private or dunder names)")
    max_parts = 2 if namespace == "torch.ops.aten" else 1
    if len(rest) > max_parts:
        raise UnknownOp(f"unknown op {op!r}: too many dotted parts after {prefix!r}")
    if rest[0] in _DENIED:
        raise UnknownOp(f"op {op!r} is not allowed: it has effects outside its tensors")
    if namespace == "operator" and rest[0] not in OPERATORS:
        raise UnknownOp(f"unknown op {op!r}: allowed operators are {', '.join(sorted(OPERATORS))}")
    return OpName(namespace, rest[0], rest[1] if len(rest) == 2 else None)


def resolve(op: str) -> Callable[..., Any]:
    """The callable for `op`; imports torch. Raises UnknownOp with a one-line reason."""
    return _resolve(parse(op))


@functools.cache
def _resolve(name: OpName) -> Callable[..., Any]:
    import torch

    found: Callable[..., Any] | None
    if name.namespace == "torch":
        found = _torch_function(torch, name.name)
    elif name.namespace == "torch.ops.aten":
        found = _aten(torch, name)
    elif name.namespace == "torch.Tensor":
        found = _tensor_method(torch, name.name)
    elif name.namespace == "operator":
        found = getattr(operator, name.name)
    else:
        found = _public_function(_submodule(torch, name.namespace), name.name)
    if found is None:
        raise UnknownOp(f"unknown op {str(name)!r}: no such tensor op in torch {torch.__version__}")
    return found


def _submodule(torch: Any, namespace: str) -> Any:
    from torch.nn import functional

    modules = {
        "torch.nn.functional": functional,
        "torch.linalg": torch.linalg,
        "torch.special": torch.special,
        "torch.fft": torch.fft,
    }
    return modules[namespace]


def _torch_function(torch: Any, name: str) -> Callable[..., Any] | None:
    """torch.<name>: native ATen function, torch.functional helper, else RFC's method spelling."""
    if name in dir(torch._C._VariableFunctions) or name in torch.functional.__all__:
        return getattr(torch, name)
    return _tensor_method(torch, name) or (getattr(operator, name) if name in OPERATORS else None)


def _aten(torch: Any, name: OpName) -> Callable[..., Any] | None:
    try:
        packet = getattr(torch.ops.aten, name.name)
    except (AttributeError, RuntimeError):
        return None
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return None
    if name.overload is None:
        return packet
    return getattr(packet, name.overload, None)


def _tensor_method(torch: Any, name: str) -> Callable[..., Any] | None:
    method = getattr(torch.Tensor, name, None)
    return method if callable(method) and not isinstance(method, type) else None


def _public_function(module: Any, name: str) -> Callable[..., Any] | None:
    """Public functions defined by torch in a functional namespace (not re-exported typing/classes)."""
    found = getattr(module, name, None)
    if found is None or isinstance(found, type) or not callable(found):
        return None
    return found if getattr(found, "__module__", "").startswith("torch") else None


def _namespace_list() -> str:
    return ", ".join(prefix for prefix, _ in _NAMESPACES)

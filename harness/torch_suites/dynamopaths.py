"""torch.compile's own user-facing switches and the object protocols dynamo models by hand, as a
model's code meets them, for P3's `python` stage beside pythonpaths.py and modelpaths.py
(p3/test_compile_python.py): dynamo's decorators (`allow_in_graph`, `nonstrict_trace`,
`assume_constant_result`, `substitute_in_graph`), compile-time callbacks (`comptime`), a
`TorchFunctionMode` entered inside the region, class machinery (`__init_subclass__`,
`__set_name__`, `__class_getitem__`, class attributes mutated while tracing, `__getattr__` on
modules), closures and defaults over objects of every kind (each its own guard), and
`torch.nn.Module` features dynamo inlines (buffers, `training` branches, `named_modules`); and
recompilation (`RECOMPILES`): one compiled function called again after a shape, dtype, global,
attribute or module mode changed, where the guards must fail and the new graph must be right.

After the databases and the first two case files, these are the `_dynamo` modules that stayed
coldest at threshold 1 (`python -m harness coverage RUNS --subpackage _dynamo`): the function,
user-defined-object, misc and torch-variable trackers, guards, decorators and comptime. The cases
take and return tensors, as in pythonpaths.py.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch._dynamo.comptime import comptime
from torch.overrides import TorchFunctionMode

from harness.torch_suites.pythonpaths import Case


@torch._dynamo.allow_in_graph
def _opaque(t: torch.Tensor) -> torch.Tensor:
    """Put in the graph as one call: dynamo does not trace into it."""
    return t * 3 + 1


@torch._dynamo.nonstrict_trace
def _nonstrict(t: torch.Tensor, scale: float) -> torch.Tensor:
    return t.sin() * scale


@torch.compiler.assume_constant_result
def _table_size() -> int:
    return 4


def _user_norm(values: Any) -> Any:
    return sum(v * v for v in values) ** 0.5


@torch._dynamo.substitute_in_graph(operator.length_hint)
def _length_hint(obj: Any, default: int = 0) -> int:  # dynamo traces this for operator.length_hint
    return len(obj) if hasattr(obj, "__len__") else default


def _dynamo_decorators(x):
    y = _opaque(x) + _nonstrict(x, 0.5)
    return y * _table_size() + operator.length_hint([x, x])


def _comptime(x):
    y, n = x * 2, 3
    comptime(lambda ctx: ctx.get_local("y").size())  # runs while dynamo traces; nothing in eager
    comptime(lambda ctx: (list(ctx.graph().nodes), ctx.get_local("y").as_proxy(), ctx.get_local("y").is_dynamic()))
    comptime(lambda ctx: ctx.assert_static(ctx.get_local("n")))
    comptime(lambda ctx: (ctx.get_local("n").as_python_constant(), ctx.get_local("y").python_type()))
    return y + n


class Doubling(TorchFunctionMode):
    """A mode that doubles every `torch.add` inside it."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        result = func(*args, **(kwargs or {}))
        return result * 2 if func is torch.add else result


def _torch_function_mode(x):
    with Doubling():
        y = torch.add(x, 1) + torch.mul(x, 2)
    return torch.add(y, x)


class Registry:
    """Subclasses register themselves (`__init_subclass__`); fields know their names (`__set_name__`)."""

    kinds: dict[str, type] = {}
    created = 0

    def __init_subclass__(cls, kind: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Registry.kinds[kind or cls.__name__] = cls

    def __class_getitem__(cls, item: Any) -> str:
        return f"{cls.__name__}[{item}]"


class Field:
    def __set_name__(self, owner: type, name: str) -> None:
        self.name = f"_{name}"

    def __get__(self, instance: Any, owner: type) -> Any:
        return self if instance is None else getattr(instance, self.name, 1.0)

    def __set__(self, instance: Any, value: Any) -> None:
        setattr(instance, self.name, value)


class Scaled(Registry, kind="scaled"):
    factor = Field()

    def __init__(self, factor: float) -> None:
        self.factor = factor
        type(self).created += 1  # a class attribute mutated while tracing

    @classmethod
    def unit(cls) -> Scaled:
        return cls(1.0)

    @staticmethod
    def combine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        return t * self.factor


def _class_machinery(x):
    scaled, unit = Scaled(3.0), Scaled.unit()
    scaled.factor = scaled.factor + 1
    kind = Registry.kinds["scaled"]
    label = Registry["t"]
    facts = (isinstance(scaled, kind), issubclass(kind, Registry), type(scaled) is Scaled, callable(scaled),
             hasattr(scaled, "_factor"), getattr(scaled, "missing", 2), len(vars(scaled)), label == "Registry[t]",
             Scaled.__name__ == "Scaled", Scaled.__mro__[1] is Registry, "factor" in Scaled.__dict__)
    return Scaled.combine(scaled(x), unit(x)) + sum(map(int, facts))


class Settings:
    def __init__(self) -> None:
        self.gain = 1.5
        self.enabled = True
        self.offsets = (0.5, 0.25)
        self.table = {"a": 1.0, "b": 2.0}


SETTINGS = Settings()
BIAS = torch.ones(3)  # a tensor global: a guard on a tensor the frame does not take as input


def _closures_and_defaults(x):
    count, settings, scale_fn, part = 3, SETTINGS, F.gelu, functools.partial(torch.clamp, min=-0.5)
    names, kinds, order = frozenset({"a", "b"}), (int, float), range(2)

    def inner(t: torch.Tensor, power: int = 2, *, shift: float = settings.offsets[0]) -> torch.Tensor:
        value = scale_fn(t) ** power + shift + count + settings.table["b"]
        return part(value) * settings.gain if settings.enabled else value

    total = inner(x) + inner(x, 1, shift=1.0) + BIAS
    return total + len(names) + sum(order) + isinstance(count, kinds) + (inner.__defaults__[0] if inner.__defaults__ else 0)


class Block(torch.nn.Module):
    """Buffers, a training branch, submodules looked up by name, a module-level `__getattr__` path."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(3, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.register_buffer("scale", torch.full((3,), 0.5))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long), persistent=False)
        self.names = ["proj", "norm"]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in self.names:
            x = getattr(self, name)(x)
        if self.training:
            x = F.dropout(x, p=0.0, training=True)
        buffers = dict(self.named_buffers())
        return x * buffers["scale"] + self.steps + len(list(self.named_modules())) + self.proj.in_features


def _seeded_block() -> Block:
    with torch.random.fork_rng():
        torch.manual_seed(4)
        return Block()


BLOCK = _seeded_block()


def _module_features(x):
    BLOCK.train(True)
    trained = BLOCK(x)
    BLOCK.eval()
    evaluated = BLOCK(x)
    BLOCK.train()
    kinds = [type(m).__name__ for m in BLOCK.modules()]
    return trained + evaluated + len(kinds) + BLOCK.proj.weight.sum() + sum(b.sum() for b in BLOCK.buffers())


CASES = tuple(Case(function.__name__.removeprefix("_"), function, ((4, 3),) * function.__code__.co_argcount)
              for function in (_dynamo_decorators, _comptime, _torch_function_mode, _class_machinery,
                               _closures_and_defaults, _module_features))


# --- Recompilation: one compiled function called in states whose guards fail -----------------------

@dataclass(frozen=True)
class Recompile:
    """One function called through one torch.compile, once per step: a step sets whatever state it
    changes (a global, an attribute, a module's mode) and returns that call's inputs (from a fixed
    seed, the same every time it is called). The guards of the graphs before must fail where the
    state changed, so at least `graphs` graphs are captured, and every call must still give eager's
    outputs. `reset` puts the state back."""

    name: str
    function: Callable[..., Any]
    steps: tuple[Callable[[], list[torch.Tensor]], ...]
    graphs: int
    reset: Callable[[], None] = lambda: None


def _randn(*shape: int, dtype: torch.dtype = torch.float32, requires_grad: bool = False) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(shape, generator=generator, dtype=dtype).requires_grad_(requires_grad)


GAIN = 1  # read by `_global_gain`; its recompile steps change it
ITEMS: list[float] = [1.0]  # read by `_global_items`; its steps change its length


def _shaped(x):
    return x.sin() * x.shape[0] + x.sum(0)


def _typed(x):
    return (x * 2 + 1).to(torch.float32)


def _global_gain(x):
    return x * GAIN if GAIN > 1 else x - GAIN


def _global_items(x):
    return x + sum(ITEMS) * len(ITEMS)


def _settings_branch(x):
    return x * SETTINGS.gain if SETTINGS.enabled else x.cos()


def _block_mode(x):
    return BLOCK(x)


def _with_gain(value: int) -> Callable[[], list[torch.Tensor]]:
    def step() -> list[torch.Tensor]:
        global GAIN
        GAIN = value
        return [_randn(4, 3)]
    return step


def _with_items(count: int) -> Callable[[], list[torch.Tensor]]:
    def step() -> list[torch.Tensor]:
        ITEMS[:] = [float(i + 1) for i in range(count)]
        return [_randn(4, 3)]
    return step


def _with_setting(enabled: bool) -> Callable[[], list[torch.Tensor]]:
    def step() -> list[torch.Tensor]:
        SETTINGS.enabled = enabled
        return [_randn(4, 3)]
    return step


def _with_mode(training: bool) -> Callable[[], list[torch.Tensor]]:
    def step() -> list[torch.Tensor]:
        BLOCK.train(training)
        return [_randn(4, 3)]
    return step


def _reset_globals() -> None:
    global GAIN
    GAIN = 1
    ITEMS[:] = [1.0]
    SETTINGS.enabled = True
    BLOCK.train()


RECOMPILES = (
    # static, then automatic dynamic shapes (the second size marks the dimension dynamic), then reused
    Recompile("shape_change", _shaped, (lambda: [_randn(4, 3)], lambda: [_randn(5, 3)], lambda: [_randn(7, 3)]), 2),
    Recompile("dtype_change", _typed, (lambda: [_randn(4, 3)], lambda: [_randn(4, 3, dtype=torch.float64)],
                                 lambda: [_randn(4, 3)]), 2),
    Recompile("requires_grad_change", _shaped, (lambda: [_randn(4, 3)], lambda: [_randn(4, 3, requires_grad=True)]), 2),
    Recompile("global_value_change", _global_gain, (_with_gain(1), _with_gain(3), _with_gain(1)), 2, _reset_globals),
    Recompile("global_length_change", _global_items, (_with_items(1), _with_items(3)), 2, _reset_globals),
    Recompile("attribute_change", _settings_branch, (_with_setting(True), _with_setting(False)), 2, _reset_globals),
    Recompile("module_mode_change", _block_mode, (_with_mode(True), _with_mode(False), _with_mode(True)), 2, _reset_globals),
)

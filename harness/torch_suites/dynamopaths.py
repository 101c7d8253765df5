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

import collections
import dataclasses
import functools
import operator
import weakref
import typing
import warnings
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


def _slots_on_tensors(x):
    """Python's operators reached through `operator`, builtins and dunder calls, which dynamo models
    as CPython's type slots (nb_*, sq_*, mp_*), not as the tensor methods `-x` or `x[0]` trace."""
    y = x.detach().clone()  # a leaf: its flags may change
    ints = (x.detach() * 10).to(torch.int32)
    facts = (len(x), x.__len__(), x.is_cuda, x.get_device(), x.grad_fn is None,
             sum(1 for _ in iter(x)), bool(x.numel()))  # not `t in x`: Tensor.__contains__ calls .item()
    rows = [row * i for i, row in enumerate(x.__iter__())]
    y.requires_grad_(False).detach_()
    return (operator.neg(x) + operator.pos(x) + abs(x) + x.__neg__() + x.__pos__() + x.__abs__() + x.mH.mT
            + operator.invert(ints) + (ints << 1) + (ints >> 1) + (ints | 1) + (ints & 3) + (ints ^ 2)
            + operator.getitem(x, 0) + x.__getitem__(1) + operator.mul(x, 2) + operator.truediv(x, 2)
            + operator.floordiv(x.detach(), 2) + operator.matmul(x, x.T).sum() + sum(rows) + sum(map(int, facts)) + y
            + x.new_zeros(()) + operator.index(torch.Size([3])[0]))  # not x.new(...): a graph break


class Vector:
    """A user object with the numeric, conversion and representation slots a model's value types define."""

    def __init__(self, value: torch.Tensor, weight: float = 1.0) -> None:
        self.value, self.weight = value, weight

    def __neg__(self) -> Vector:
        return Vector(-self.value, self.weight)

    def __pos__(self) -> Vector:
        return self

    def __abs__(self) -> Vector:
        return Vector(self.value.abs(), self.weight)

    def __invert__(self) -> Vector:
        return Vector(self.value.flip(0), self.weight)

    def __matmul__(self, other: Vector) -> torch.Tensor:
        return self.value @ other.value.T

    def __lshift__(self, places: int) -> Vector:
        return Vector(self.value.roll(places, 0), self.weight)

    def __mul__(self, times: int) -> Vector:
        return Vector(self.value * times, self.weight)

    __rmul__ = __mul__

    def __imul__(self, times: int) -> Vector:
        self.value = self.value * times
        return self

    def __index__(self) -> int:
        return 2

    def __int__(self) -> int:
        return 3

    def __float__(self) -> float:
        return self.weight

    def __bool__(self) -> bool:
        return self.weight > 0

    def __repr__(self) -> str:
        return f"Vector(weight={self.weight})"

    def __str__(self) -> str:
        return f"v{self.weight}"

    def __len__(self) -> int:
        return self.value.shape[0]

    def __contains__(self, item: float) -> bool:
        return item == self.weight


def _slots_on_objects(x):
    v, w = Vector(x, 2.0), Vector(x * 2)
    w *= 3
    labels = (repr(v), str(v), f"{v!r}|{v}", format(v.weight, ".1f"))
    facts = (int(v), float(v), operator.index(v), bool(v), len(v), 2.0 in v, [0, 1, 2, 3][v], sum(map(len, labels)))
    return ((-v).value + (+v).value + abs(v).value + (~v).value + (v << 1).value + (v * 2).value + (3 * v).value
            + w.value + (v @ w).sum() + sum(facts))


class Palette(type):
    """A metaclass with the slots dynamo calls on a class itself."""

    def __len__(cls) -> int:
        return len(cls.colors)

    def __iter__(cls) -> Any:
        return iter(cls.colors)

    def __contains__(cls, item: str) -> bool:
        return item in cls.colors

    def __neg__(cls) -> float:
        return -float(len(cls.colors))

    def __bool__(cls) -> bool:
        return True

    def __getitem__(cls, key: str) -> float:
        return cls.colors.index(key) + 1.0


class Colors(metaclass=Palette):
    colors = ["red", "green", "blue"]


def _slots_on_classes(x):
    facts = (len(Colors), "red" in Colors, list(Colors)[1] == "green", -Colors, bool(Colors), Colors["blue"],
             Colors == Colors, Colors != Palette, isinstance(Colors, Palette), repr(Colors).startswith("<class"),
             str(int) == "<class 'int'>", (int | None) == typing.Optional[int], hash(Colors) == hash(Colors),
             len(typing.get_args(tuple[int, str])), typing.Optional[int] is not None)
    return x * sum(map(float, facts))


class Holder:
    def __init__(self) -> None:
        self.scale = 2.0

    def scaled(self, t: torch.Tensor) -> torch.Tensor:
        return t * self.scale


HOLDER = Holder()


def _live_across_graph_break(x):
    """Values of many kinds still alive where the graph breaks, so dynamo rebuilds them as Python
    objects for the code after the break (reconstruct), and context managers entered before it."""
    def nested(t: torch.Tensor) -> torch.Tensor:
        return t + x.sum()

    bound, part = HOLDER.scaled, functools.partial(torch.add, alpha=2)
    fmt, names, kinds = "{}:{}".format, ("a", "b"), {"f": nested, "m": bound, "c": Holder}
    error = ValueError("kept")
    with torch.no_grad(), torch.autocast("cpu", enabled=False), warnings.catch_warnings():
        y = x * 2
        torch._dynamo.graph_break()
        y = y + 1
    with torch.inference_mode(False):
        z = x.sin()
    label = fmt(*names) + str(error)
    return (nested(y) + bound(z) + part(x, x) + kinds["f"](x) + kinds["m"](x) + len(label)
            + isinstance(kinds["c"](), Holder))


class Table(dict):
    """A dict subclass a global holds: guards read it item by item."""


@dataclass
class Limits:
    low: float = -1.0
    high: float = 1.0


KEPT = Holder()
KEPT_REF = weakref.ref(KEPT)  # a global weak reference: dynamo guards the referent through it
NAMES = {"alpha", "beta"}  # a global set: membership becomes a guard
TABLE = Table(k=2.0, j=3.0)
LIMITS = Limits()
POINT = collections.namedtuple("POINT", ["x", "y"])(1.0, 2.0)
LEVELS = [0.5, 1.5, 2.5]


def _guards_of_every_source(x):
    """Globals reached through every kind of source dynamo names and guards: a weak reference and
    its call, membership in a set, a dict subclass's item, a dataclass's fields, a named tuple's
    fields, a list item, a slice of a tuple."""
    target = KEPT_REF()
    scale = target.scale if target is not None else 1.0
    fields = [field.name for field in dataclasses.fields(LIMITS)]
    bounds = tuple(getattr(LIMITS, name) for name in fields)
    return (x.clamp(*bounds) * scale + ("alpha" in NAMES) + ("gamma" not in NAMES) + TABLE["k"] + len(POINT._fields)
            + POINT.y + LEVELS[1] + sum(LEVELS[-2:]) + len(fields))


CASES = tuple(Case(function.__name__.removeprefix("_"), function, ((4, 3),) * function.__code__.co_argcount)
              for function in (_dynamo_decorators, _comptime, _torch_function_mode, _class_machinery,
                               _closures_and_defaults, _module_features, _slots_on_tensors, _slots_on_objects,
                               _slots_on_classes, _live_across_graph_break, _guards_of_every_source))


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


def _after(change: Callable[[], object]) -> Callable[[], list[torch.Tensor]]:
    """A step that first changes some state, then gives the call's inputs."""
    def step() -> list[torch.Tensor]:
        change()
        return [_randn(4, 3)]
    return step


def _set_gain(value: int) -> None:
    global GAIN
    GAIN = value


def _reset_globals() -> None:
    _set_gain(1)
    ITEMS[:] = [1.0]
    SETTINGS.enabled = True
    BLOCK.train()


RECOMPILES = (
    # static, then automatic dynamic shapes (the second size marks the dimension dynamic), then reused
    Recompile("shape_change", _shaped, (lambda: [_randn(4, 3)], lambda: [_randn(5, 3)], lambda: [_randn(7, 3)]), 2),
    Recompile("dtype_change", _typed, (lambda: [_randn(4, 3)], lambda: [_randn(4, 3, dtype=torch.float64)],
                                 lambda: [_randn(4, 3)]), 2),
    Recompile("requires_grad_change", _shaped, (lambda: [_randn(4, 3)], lambda: [_randn(4, 3, requires_grad=True)]), 2),
    Recompile("global_value_change", _global_gain,
              tuple(_after(functools.partial(_set_gain, value)) for value in (1, 3, 1)), 2, _reset_globals),
    Recompile("global_length_change", _global_items,
              tuple(_after(functools.partial(ITEMS.__setitem__, slice(None), items)) for items in ([1.0], [1.0, 2.0, 3.0])),
              2, _reset_globals),
    Recompile("attribute_change", _settings_branch,
              tuple(_after(functools.partial(setattr, SETTINGS, "enabled", on)) for on in (True, False)), 2, _reset_globals),
    Recompile("module_mode_change", _block_mode,
              tuple(_after(functools.partial(BLOCK.train, on)) for on in (True, False, True)), 2, _reset_globals),
)

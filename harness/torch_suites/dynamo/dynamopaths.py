"""torch.compile's own user-facing switches and the object protocols dynamo models by hand, as a
model's code meets them, for P3's `python` stage beside pythonpaths.py and modelpaths.py
(p3/test_compile_python.py): dynamo's decorators (`allow_in_graph`, `nonstrict_trace`,
`assume_constant_result`, `substitute_in_graph`), compile-time callbacks (`comptime`), a
`TorchFunctionMode` entered inside the region, class machinery (`__init_subclass__`,
`__set_name__`, `__class_getitem__`, class attributes mutated while tracing, `__getattr__` on
modules), closures and defaults over objects of every kind (each its own guard), and
`torch.nn.Module` features dynamo inlines (buffers, `training` branches, `named_modules`); the
trackers still cold after those (context managers and torch functions dynamo handles one by one,
objects made at run time, user value types with every operator, descriptors as objects, builtin
values' protocols, comptime's printers, size arithmetic, containers changed in place, tensor
queries), each traced as one graph; and recompilation (`RECOMPILES`): one compiled function called
again after a shape, dtype, global, attribute or module mode changed, or with a tensor subclass, an
itertools.count or an int subclass as input, where the guards must fail and the new graph must be
right.

After the databases and the first two case files, these are the `_dynamo` modules that stayed
coldest at threshold 1 (`python -m harness coverage RUNS --subpackage _dynamo`): the function,
user-defined-object, misc and torch-variable trackers, guards, decorators and comptime. The cases
take and return tensors, as in pythonpaths.py.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import copy
import dataclasses
import functools
import inspect
import io
import itertools
import math
import operator
import random
import sys
import types
import weakref
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch._dynamo.comptime import comptime
from torch.fx.experimental.symbolic_shapes import guard_or_false, guard_or_true, statically_known_true
from torch.overrides import TorchFunctionMode
from torch.testing._internal.two_tensor import TwoTensor
from torch.utils._ordered_set import OrderedSet

from harness.torch_suites.dynamo.pythonpaths import Case


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


def _dynamo_context_managers(x):
    """Context managers dynamo models one by one, entered inside the region (none breaks the graph)."""
    y = x * 1
    with contextlib.nullcontext() as nothing:
        y = y + (nothing is None)
    with torch.autograd.profiler.record_function("block"):
        y = y.sin()
    with torch.profiler.record_function("inner"):
        y = y + 1
    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        y = y * y
    with torch._C.DisableTorchFunctionSubclass():
        y = y + 1
    with torch._C.DisableTorchFunction():
        y = y - 1
    with torch.fx.traceback.annotate({"stage": "middle"}):
        y = y * 2
    with torch._dynamo.error_on_graph_break(False):
        y = y + 3
    with torch.autograd._unsafe_preserve_version_counter(y):
        y = y.cos()
    with torch.set_grad_enabled(False):
        z = y * 3
    return y + z


def _torch_special_functions(x):
    """torch functions dynamo answers itself while tracing (state queries, symbolic-shape helpers,
    checks) or rewrites (`full`, `tensor_split`, `one_hot`, `_foreach_pow`, `addcdiv`)."""
    n = x.shape[0]
    facts = (torch.are_deterministic_algorithms_enabled(), torch._C._is_torch_function_enabled(),
             torch._C._is_torch_function_all_disabled(), torch._C._len_torch_function_stack(),
             statically_known_true(n > 1), guard_or_true(n > 0), guard_or_false(n < 0), torch.sym_max(n, 2),
             torch.sym_min(n, 2), torch.get_default_dtype() is torch.float32, torch.is_floating_point(x),
             torch.is_complex(x), torch.numel(x), torch.finfo(x.dtype).bits, torch.iinfo(torch.int8).max,
             torch.is_tensor(x), torch.nn.modules.utils._pair(3)[1], torch.backends.cudnn.is_acceptable(x))
    torch._check(n > 0)
    torch._check_with(RuntimeError, n > 0, lambda: "empty")
    torch._assert(n > 0, "empty")
    parts = torch.tensor_split(x, 2)
    full = torch.full((n, 3), 2.0)
    hot = F.one_hot(torch.arange(3) % 3, 3).to(x.dtype)
    pows = torch._foreach_pow([x, full], 2.0)
    return (torch.addcdiv(x, full, full + 1, value=0.5) + parts[0].sum() + pows[0] + pows[1] + hot.sum()
            + sum(map(float, facts)))


def _runtime_objects(x):
    """Objects a model's code makes at run time: a seeded `random.Random` and its draws, an
    `inspect.signature`, a named tuple class, an exception with `sys.exc_info()`, method wrappers and
    method descriptors."""
    rng = random.Random(7)
    draws = (rng.random(), rng.randint(1, 5), rng.uniform(0, 1), rng.randrange(10))
    parameters = inspect.signature(_torch_special_functions).parameters.values()
    names, kinds = [p.name for p in parameters], [p.kind for p in parameters]
    Pair = collections.namedtuple("Pair", ["a", "b"])
    pair = Pair(x, 2)
    try:
        raise ValueError("bad", 3)
    except ValueError as error:
        info = sys.exc_info()
        text = str(error) + repr(error)
        args = error.args
        same = info[1] is error
    adder, getter = (3).__add__, dict.__getitem__
    return (pair.a * pair.b + draws[0] + draws[1] + draws[2] + draws[3] + len(names) + len(kinds) + len(text)
            + args[1] + same + adder(1) + getter({"k": 2}, "k") + len(dict.fromkeys("ab")) + typing.cast(int, 1))


class Money:
    """A value type with the binary and in-place operators dynamo reaches through its number slots."""

    def __init__(self, value: torch.Tensor) -> None:
        self.value = value

    def __add__(self, other: float) -> Money:
        return Money(self.value + other)

    def __iadd__(self, other: float) -> Money:
        self.value = self.value + other
        return self

    def __sub__(self, other: float) -> Money:
        return Money(self.value - other)

    def __isub__(self, other: float) -> Money:
        self.value = self.value - other
        return self

    def __mul__(self, other: float) -> Money:
        return Money(self.value * other)

    def __truediv__(self, other: float) -> Money:
        return Money(self.value / other)

    def __itruediv__(self, other: float) -> Money:
        self.value = self.value / other
        return self

    def __floordiv__(self, other: float) -> Money:
        return Money(torch.div(self.value, other, rounding_mode="floor"))

    def __ifloordiv__(self, other: float) -> Money:
        self.value = torch.div(self.value, other, rounding_mode="floor")
        return self

    def __mod__(self, other: float) -> Money:
        return Money(self.value % other)

    def __imod__(self, other: float) -> Money:
        self.value = self.value % other
        return self

    def __pow__(self, other: float) -> Money:
        return Money(self.value ** other)

    def __ipow__(self, other: float) -> Money:
        self.value = self.value ** other
        return self

    def __divmod__(self, other: float) -> tuple[Money, Money]:
        return Money(torch.div(self.value, other, rounding_mode="floor")), Money(self.value % other)

    def __rshift__(self, places: int) -> Money:
        return Money(self.value.roll(-places, 0))

    def __irshift__(self, places: int) -> Money:
        self.value = self.value.roll(-places, 0)
        return self

    def __ilshift__(self, places: int) -> Money:
        self.value = self.value.roll(places, 0)
        return self

    def __or__(self, other: Money) -> Money:
        return Money(torch.maximum(self.value, other.value))

    def __ior__(self, other: Money) -> Money:
        self.value = torch.maximum(self.value, other.value)
        return self

    def __and__(self, other: Money) -> Money:
        return Money(torch.minimum(self.value, other.value))

    def __iand__(self, other: Money) -> Money:
        self.value = torch.minimum(self.value, other.value)
        return self

    def __xor__(self, other: Money) -> Money:
        return Money(self.value - other.value)

    def __ixor__(self, other: Money) -> Money:
        self.value = self.value - other.value
        return self

    def __imatmul__(self, other: Money) -> Money:
        self.value = self.value @ other.value.T @ self.value
        return self


class Row:
    """A sequence type: item access, concatenation and repetition, in place too."""

    def __init__(self, items: list[Any]) -> None:
        self.items = list(items)

    def __getitem__(self, index: int) -> Any:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __add__(self, other: Row) -> Row:
        return Row(self.items + other.items)

    def __iadd__(self, other: Row) -> Row:
        self.items = self.items + other.items
        return self

    def __mul__(self, times: int) -> Row:
        return Row(self.items * times)

    def __imul__(self, times: int) -> Row:
        self.items = self.items * times
        return self


def _user_operators(x):
    money = Money(x)
    money += 1
    money -= 0.5
    money /= 2
    money //= 1
    money %= 3
    money **= 2
    money >>= 1
    money <<= 1
    other = Money(x.flip(0))
    money |= other
    money &= Money(x + 5)
    money ^= Money(x * 0.1)
    money @= Money(x)
    quotient, remainder = divmod(Money(x.abs() + 1), 2)
    row = Row([x, x * 2])
    row += Row([x * 3])
    row *= 2
    both = row + Row([x])
    return (money.value + (money - 1).value + (money * 2).value + (money / 4).value + (money // 2).value
            + (money % 2).value + (Money(x) ** 2).value + (Money(x) >> 1).value + (other | money).value
            + (other & money).value + (other ^ money).value + quotient.value + remainder.value + sum(row.items)
            + len(both) + both[-1] + (row * 1)[0])


class Coordinate(NamedTuple):
    x: float
    y: float


class Weighted:
    __slots__ = ("weight",)

    def __init__(self, weight: float) -> None:
        self.weight = weight


class Box:
    def __init__(self, size: float) -> None:
        self._size = size

    @property
    def size(self) -> float:
        return self._size

    @staticmethod
    def unit() -> float:
        return 1.0

    @classmethod
    def make(cls, size: float) -> Box:
        return cls(size)


def _descriptors(x):
    """Descriptors used as objects: a named tuple's field getter, a slot's member descriptor, a
    property, static and class method objects, and methods of builtin types called unbound."""
    point, item, box = Coordinate(1.5, 2.5), Weighted(3.0), Box(2.0)
    Weighted.weight.__set__(item, 4.0)  # not `Weighted.weight.__get__(item)`: dynamo raises (docs)
    size, unit, make = Box.__dict__["size"], Box.__dict__["unit"], Box.__dict__["make"]
    facts = (Coordinate.x.__get__(point), item.weight, size.fget(box), unit.__func__(), make.__func__(Box, 3.0).size,
             str.upper("ab") == "AB", str.join("-", ["a", "b"]) == "a-b", dict.get({"k": 1.0}, "k"),
             float.fromhex("0x1p1"), set.__contains__({1}, 1), dict.fromkeys(["a"], 2.0)["a"], (2.0).__mul__(3.0),
             "ab".__len__(), type(point).__name__ == "Coordinate", tuple.__len__(point),
             operator.attrgetter("y")(point))
    return x * sum(map(float, facts))


class Tags(set):
    """A set subclass."""


class History(collections.deque):
    """A deque subclass with a maximum length."""


def _more_user_containers(x):
    counts: collections.defaultdict[int, float] = collections.defaultdict(float)
    for i in range(x.shape[0]):
        counts[i % 2] += 1.0
    merged, copied = counts | {5: 2.0}, counts.copy()
    tags = Tags({"a", "b"})
    tags.add("c")
    history = History([x], maxlen=2)
    history.append(x * 2)
    history.append(x * 3)
    return (sum(counts.values()) * x + len(merged) + len(copied) + len(tags) + ("c" in tags) + history[0]
            + history.maxlen + len(history))


def _builtin_protocols(x):
    """`repr`, `hash`, `==`, `hasattr` and in-place operators over the builtin value kinds dynamo
    models one class each (ranges, slices, sets, frozensets, ordered dicts, deques, dict views,
    `torch.Size`), all folded to constants while tracing."""
    table = {"a": 1, "b": 2}
    ordered = collections.OrderedDict(a=1, b=2)
    ordered.move_to_end("a")
    queue = collections.deque([1, 2, 3])
    queue.rotate(1)
    values = (range(1, 7, 2), slice(1, 3), {1, 2}, frozenset({3}), ordered, queue, table.keys(), table.values(),
              table.items(), [1, 2], (1, 2), "s", 1.5, None)  # not x.shape: no repr of a SymInt under dynamic shapes
    reprs = [repr(value) for value in values]
    hashes = [hash(value) for value in (range(3), slice(1, 2), frozenset({3}), (1, 2), x.shape)]
    equal = (range(0, 4, 2) == range(0, 3, 2), slice(1, 2) == slice(1, 2), table.keys() == {"a", "b"},
             table.items() == {("a", 1), ("b", 2)}, ordered == {"b": 2, "a": 1}, queue == collections.deque([3, 1, 2]),
             frozenset({3}) == {3}, x.shape == (4, 3), (1, 2) + (3,) == (1, 2, 3), x.shape + (1,) == (4, 3, 1))
    has = (hasattr(range(3), "step"), hasattr(table, "keys"), hasattr(queue, "maxlen"), hasattr(slice(1), "stop"),
           hasattr((1,), "count"), hasattr(iter([1]), "__next__"), hasattr(x.shape, "numel"))
    sizes = (x.shape.numel(), x.shape.count(4), x.shape.index(3), range(10)[2:8:2][1], range(5)[-1],
             len(range(2, 9, 3)))
    left = {1, 2, 3}
    left -= {1}
    left &= {2, 3, 4}
    left ^= {5}
    left |= {6}
    rest = (frozenset({1, 2}).difference({1}) | frozenset({3}).intersection({3})
            | frozenset({4}).symmetric_difference({5}))
    return x * (sum(map(len, reprs)) + len(hashes) + sum(equal) + sum(has) + sum(sizes) + len(left) + len(rest)
                + len(ordered.popitem()) + len(table.keys() | {"c"}) + len(table.keys() ^ {"a"}))


def _comptime_printers(x):
    """comptime's printers (locals, value stack, backtrace, graph, bytecode, guards) over values of
    many kinds, written to a buffer while dynamo traces: what a user debugging a trace calls."""
    numbers, names, view = [1, 2], {"a", "b"}, {"k": 1}.items()
    span, cut, queue = range(3), slice(1, 2), collections.deque([x])
    part, size, y = functools.partial(operator.add, 1), x.shape[0], x * 2
    comptime(lambda ctx: ctx.print_locals(file=io.StringIO()))
    comptime(lambda ctx: ctx.print_value_stack(file=io.StringIO()))
    comptime(lambda ctx: ctx.print_bt(file=io.StringIO()))
    comptime(lambda ctx: ctx.print_graph(file=io.StringIO()))
    comptime(lambda ctx: ctx.print_disas(file=io.StringIO()))
    comptime(lambda ctx: ctx.print_guards(file=io.StringIO()))
    return y + len(numbers) + len(names) + len(view) + len(span) + cut.start + len(queue) + part(size)


def _size_arithmetic(x):
    """Integer and float arithmetic on sizes: symbolic under dynamic shapes, constants otherwise
    (not `divmod`, `~` or `float(bool(...))` of a size: dynamo fails on them under dynamic shapes, docs)."""
    n, m = x.shape
    values = (n | m, n & m, n ^ m, n << 1, n >> 1, n % m, -n, +n, abs(-m), n ** 2, int(n), float(m), n / m, max(n, m),
              min(n, m), round(n / 3), n // 2)
    return x * sum(map(float, values)) + torch.ones(n, m).sum()


def _builtins_and_constants(x):
    """Builtins dynamo answers while tracing (`bin`, `oct`, `hex`, `dir`, `locals`, `copy.deepcopy`,
    `operator`'s item and in-place functions on numbers) and arithmetic folded on constants."""
    table = {"a": 1, "b": 2, "c": 3}
    operator.setitem(table, "d", 4)
    operator.delitem(table, "a")
    nested = copy.deepcopy([[1, 2], (3, 4)])
    n = operator.ixor(6, 3)
    n = operator.ilshift(operator.iand(n, 7), 1)
    n = operator.ifloordiv(operator.irshift(n, 1), 2)
    numbers = (operator.itruediv(n, 2), operator.ipow(n, 2), operator.rshift(n, 1), 1 << 3, 64 >> 2, 6 | 1, 6 & 3,
               6 ^ 3, +5, ~5, pow(3, 4, 5), len("ab" * 3), "abc"[1] == "b", len("xyz"), "ab" in "cab", 2 ** -1)
    first, _ = "xy"  # not a class statement: dynamo cannot trace a class body made in the region
    facts = (len(bin(5)), len(oct(8)), len(hex(255)), "real" in dir(1), operator.length_hint([1, 2, 3]), len(table),
             len(nested[0]), first == "x", len(locals()) > 0)
    return x * (sum(map(float, facts)) + sum(map(float, numbers)))


def _containers_in_place(x):
    """Lists, deques, sets, torch's `OrderedSet`, ordered dicts, mapping proxies and dict views changed
    in place and combined: their in-place operators and less common methods."""
    items = [3, 1, 2]
    items += [5]
    items *= 2
    items.sort(key=lambda v: -v)
    queue = collections.deque([1, 2, 3], maxlen=5)
    queue.rotate(-1)
    queue[0] = 7
    queue += [4]
    joined = queue + collections.deque([9])
    queue.extendleft([0])
    seen = {1, 2, 3, 4}
    popped = seen.pop()
    rest = seen.difference({2}) | seen.copy()
    seen.symmetric_difference_update({9})
    cleared = set(seen)
    cleared.clear()
    ordered = OrderedSet([3, 1, 2])
    ordered.add(0)
    combined = (ordered | OrderedSet([7])) - OrderedSet([1])
    odict = collections.OrderedDict(a=1, b=2)
    last = odict.popitem()
    merged = odict | {"z": 3}
    proxy = types.MappingProxyType({"k": 1, "j": 2})
    views = ({"a": 1}.keys() | {"b"}, {"a": 1}.items() ^ {("b", 2)})
    facts = (len(items), items[0], len(queue), queue[0], len(joined), list(reversed(queue))[0], popped in {1, 2, 3, 4},
             len(rest), len(seen), len(cleared), len(combined), list(ordered)[0], last[1], len(merged), proxy["k"],
             len(proxy), "j" in proxy, list(proxy)[0] == "k", len(views[0]), len(views[1]),
             slice(1, 8, 2).indices(5)[1],
             queue == collections.deque([0, 7, 3, 1, 4]), (1, 2) + (3,) == (1, 2, 3), torch.Size([2]) + (3,) == (2, 3))
    return x * sum(map(float, facts))


def _tensor_queries(x):
    """A tensor's flags and metadata read inside the region, `.data`, `.new_tensor`, transposes
    (not `storage_offset()` or `is_signed()`: dynamo breaks the graph on them)."""
    y = x * 2
    facts = (x.requires_grad, y.requires_grad, x.is_sparse, x.is_quantized, x.is_leaf, x.grad is None,
             x.is_contiguous(), x.element_size(), x.dim(), x.ndimension(), x.nelement(), x.is_floating_point(),
             x.is_complex(), x.is_nested, x.is_meta, x.layout == torch.strided)
    return y + y.new_tensor([1.0, 2.0, 3.0]) + x.data * 1 + sum(map(float, facts)) + x.T.T + x.mT.mT + x.real


def _torch_modes_in_region(x):
    """Modes entered inside the region that dynamo models one by one: a dynamo config patch, both
    profilers, grad mode as a decorator, autocast with its cache off (not inference mode: AOTAutograd
    fails on `x.detach()` inside it, docs)."""
    with torch._dynamo.patch_dynamo_config(verbose=True):
        y = x * 2
    with torch.profiler.profile():
        y = y + 1
    with torch.autograd.profiler.profile():
        y = y * 3

    @torch.no_grad()
    def frozen(t: torch.Tensor) -> torch.Tensor:
        return t * 2

    with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
        product = x @ x.T
    return y + frozen(x) + product.float().sum()


def _torch_runtime_queries(x):
    """torch's runtime answered while tracing (device modules, dispatch keys, the torch-function
    mode stack, default no-wrap functions, `jit.annotate`) and functions dynamo rewrites
    (`_foreach_lerp_`, `math.radians`, `elementwise_dtypes`, `sym_size`, the version counter); not
    `_check_tensor_all`, which breaks the graph on a `.item()`."""
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    torch.cpu.synchronize()
    torch.use_deterministic_algorithms(False)
    blended = [x.clone(), x.clone()]
    torch._foreach_lerp_(blended, [x * 2, x * 3], 0.5)
    copied = x.clone()
    torch._C._autograd._unsafe_set_version_counter((copied,), (0,))
    _, result_dtype = elementwise_dtypes(x, 2, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
    facts = (torch.get_device_module("cpu") is torch.cpu, torch._C._dispatch_keys(x).has(torch._C.DispatchKey.CPU),
             torch._C._is_torch_function_mode_enabled(),  # not peek_interpreter_stack(): dynamo answers wrong (docs)
             len(torch.overrides.get_default_nowrap_functions()) > 0, torch.jit.annotate(int, 3),
             math.radians(90))
    return (blended[0] + blended[1] + copied + x.to(result_dtype) * torch.ops.aten.sym_size(x, 0)
            + torch.ops.aten.sym_stride(x, 0) + sum(map(float, facts)))


SCALE_VAR = contextvars.ContextVar("scale", default=2.0)  # read by `_python_runtime_more`


class Parent:
    def scale(self) -> float:
        return 2.0


class Child(Parent):
    def scale(self) -> float:
        return super().scale() * 1.5


def _python_runtime_more(x):
    """A context variable, weak references compared and hashed, a traceback, `super()` in a
    method, `str.format` with a spec, `typing`'s introspection, NumPy scalars and dtypes."""
    import numpy as np

    ref = weakref.ref(KEPT)
    try:
        raise ValueError("kept")
    except ValueError as error:
        has_traceback = error.__traceback__ is not None
    facts = (SCALE_VAR.get(), ref() is KEPT, ref == weakref.ref(KEPT), hash(ref) == hash(weakref.ref(KEPT)),
             has_traceback, Child().scale(), len("{:.1f}-{}".format(1.5, "a")), typing.get_origin(typing.List[int]) is list,
             len(typing.get_args(typing.Dict[str, int])), float(np.float32(2.0)), np.pi, np.dtype("float32").itemsize)
    return x * sum(map(float, facts))


def _higher_order_loops(x):
    """Loops as higher-order operators (`scan`, `while_loop`, `associative_scan`, `map`) and
    `flex_attention` with a score modification, each traced into a subgraph of the region."""
    from torch._higher_order_ops.associative_scan import associative_scan
    from torch._higher_order_ops.map import map as map_rows
    from torch._higher_order_ops.scan import scan
    from torch._higher_order_ops.while_loop import while_loop
    from torch.nn.attention.flex_attention import flex_attention

    def step(carry: torch.Tensor, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        following = carry + row.sin()
        return following, following * 2

    final, rows = scan(step, torch.zeros(3), x)
    _, grown = while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, acc * 1.5), (torch.tensor(0), x.detach()))
    totals = associative_scan(lambda a, b: a + b, x, dim=0, combine_mode="generic")
    mapped = map_rows(lambda row, weight: row * weight, x, torch.tensor(2.0))
    query = x.detach().reshape(1, 1, 4, 3)  # FlexAttention has no backward on CPU
    attended = flex_attention(query, query, query, score_mod=lambda score, b, h, q, kv: score + q - kv)
    return final + rows.sum(0) + grown.sum(0) + totals[-1] + mapped.sum(0) + attended.reshape(4, 3)


CASES = tuple(Case(function.__name__.removeprefix("_"), function, ((4, 3),) * function.__code__.co_argcount)
              for function in (_dynamo_decorators, _comptime, _torch_function_mode, _class_machinery,
                               _closures_and_defaults, _module_features, _slots_on_tensors, _slots_on_objects,
                               _slots_on_classes, _live_across_graph_break, _guards_of_every_source,
                               _dynamo_context_managers, _torch_special_functions, _runtime_objects, _user_operators,
                               _descriptors, _more_user_containers, _builtin_protocols, _comptime_printers,
                               _size_arithmetic, _builtins_and_constants, _containers_in_place, _tensor_queries,
                               _torch_modes_in_region, _torch_runtime_queries, _python_runtime_more,
                               _higher_order_loops))



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


def seeded_randn(*shape: int, dtype: torch.dtype = torch.float32, requires_grad: bool = False,
                 seed: int = 0) -> torch.Tensor:
    """A check's input: the same values every time it is asked for (a generator of its own)."""
    generator = torch.Generator().manual_seed(seed)
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


class Count(int):
    """An int subclass: dynamo guards its value as a constant of its own type."""


def _subclass_input(x):
    y = x.sin() * 2 + 1
    return y.a + y.b if isinstance(y, TwoTensor) else y


def _counted(x, counter):
    return x * next(counter) + next(counter)


def _int_subclass(x, k):
    return x * k + int(k)


def _two_tensor() -> list[Any]:
    return [TwoTensor(seeded_randn(4, 3), seeded_randn(4, 3, seed=1))]


def _after(change: Callable[[], object]) -> Callable[[], list[torch.Tensor]]:
    """A step that first changes some state, then gives the call's inputs."""
    def step() -> list[torch.Tensor]:
        change()
        return [seeded_randn(4, 3)]
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
    Recompile("shape_change", _shaped,
              (lambda: [seeded_randn(4, 3)], lambda: [seeded_randn(5, 3)], lambda: [seeded_randn(7, 3)]), 2),
    Recompile("dtype_change", _typed, (lambda: [seeded_randn(4, 3)], lambda: [seeded_randn(4, 3, dtype=torch.float64)],
                                 lambda: [seeded_randn(4, 3)]), 2),
    Recompile("requires_grad_change", _shaped,
              (lambda: [seeded_randn(4, 3)], lambda: [seeded_randn(4, 3, requires_grad=True)]), 2),
    Recompile("global_value_change", _global_gain,
              tuple(_after(functools.partial(_set_gain, value)) for value in (1, 3, 1)), 2, _reset_globals),
    Recompile("global_length_change", _global_items,
              tuple(_after(functools.partial(ITEMS.__setitem__, slice(None), items)) for items in ([1.0], [1.0, 2.0, 3.0])),
              2, _reset_globals),
    Recompile("attribute_change", _settings_branch,
              tuple(_after(functools.partial(setattr, SETTINGS, "enabled", on)) for on in (True, False)), 2, _reset_globals),
    Recompile("module_mode_change", _block_mode,
              tuple(_after(functools.partial(BLOCK.train, on)) for on in (True, False, True)), 2, _reset_globals),
    # a traceable tensor subclass (its metadata guarded), then a plain tensor
    Recompile("subclass_input", _subclass_input, (_two_tensor, _two_tensor, lambda: [seeded_randn(4, 3)]), 2),
    # an itertools.count (its state guarded, its advance replayed after the graph), then one at another state
    Recompile("count_iterator", _counted, tuple((lambda start=start: [seeded_randn(4, 3), itertools.count(start, 2)])
                                                for start in (2, 2, 5)), 2),
    # an int subclass's value, guarded as a constant of its own type
    Recompile("int_subclass", _int_subclass, tuple((lambda k=k: [seeded_randn(4, 3), Count(k)]) for k in (3, 3, 4)), 2),
)

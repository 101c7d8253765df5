"""User-style Python that torch.compile must trace: one small function per construct a model's
code leans on (containers, closures, generators, classes, exceptions, context managers, the
standard library), for P3's `python` stage (p3/test_compile_python.py).

PyTorch's databases hand dynamo an operator, a module or an optimizer step: dynamo's own Python
that models the user's language (its variable trackers, guards, bytecode handlers) is reached only
where those callables are written in Python. These cases reach it on purpose, under a JIT that has
compiled dynamo itself: that is where a Python JIT meets dynamo's code. Each case takes tensors and
returns tensors; its inputs are built from a fixed seed, afresh for every run.
"""

from __future__ import annotations

import abc
import collections
import contextlib
import dataclasses
import enum
import functools
import inspect
import itertools
import math
import operator
import random
import types
import typing
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

SCALE = 0.5  # a global the traced code reads


@dataclass(frozen=True)
class Case:
    """One construct: `function` over tensors of `shapes` (float32, from seed 0): one (4, 3) tensor
    per parameter of the function."""

    name: str
    function: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...] = ((4, 3),)

    def inputs(self, requires_grad: bool = False) -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(0)
        return [torch.randn(shape, generator=generator).requires_grad_(requires_grad) for shape in self.shapes]


class Point(NamedTuple):
    x: torch.Tensor
    y: torch.Tensor


@dataclasses.dataclass
class Pair:
    left: torch.Tensor
    right: torch.Tensor
    weight: float = 2.0

    def combined(self) -> torch.Tensor:
        return self.left * self.weight + self.right


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Scaler:
    """A plain class: attributes, a property, a static and a class method, __call__ and __getitem__."""

    factor = 3.0

    def __init__(self, offset: float) -> None:
        self.offset = offset

    @property
    def doubled(self) -> float:
        return self.offset * 2

    @staticmethod
    def square(x: torch.Tensor) -> torch.Tensor:
        return x * x

    @classmethod
    def scaled(cls, x: torch.Tensor) -> torch.Tensor:
        return x * cls.factor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.scaled(x) + self.doubled

    def __getitem__(self, index: int) -> float:
        return self.offset + index


class ShiftedScaler(Scaler):
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return super().__call__(x) - 1


class Block(torch.nn.Module):
    """A module of containers: ModuleList, ModuleDict, Sequential, a buffer, a branch on training."""

    def __init__(self) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(1)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(3, 3) for _ in range(2))
        self.heads = torch.nn.ModuleDict({"a": torch.nn.Linear(3, 2), "b": torch.nn.Linear(3, 2)})
        self.tail = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(2, 1))
        self.register_buffer("shift", torch.randn(3, generator=generator))
        with torch.no_grad():
            for parameter in self.parameters():
                parameter.copy_(torch.randn(parameter.shape, generator=generator))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x) + self.shift
        outputs = [head(x) for name, head in sorted(self.heads.items())]
        total = sum(p.sum() for p in self.parameters())
        return self.tail(outputs[0] + outputs[1]) * (1.0 if self.training else 0.5) + total * 0


BLOCK = Block()


@contextlib.contextmanager
def tracked(log: list[str]):
    log.append("enter")
    try:
        yield len(log)
    finally:
        log.append("exit")


def _dicts(x):
    table = {f"k{i}": x * i for i in range(3)}
    table.update({"k3": x.sin()})
    table.setdefault("k4", x.cos())
    squared = {key: value * value for key, value in table.items() if key != "k0"}
    return sum(squared.values()) + len(table) + table.get("missing", x)


def _lists(x):
    items = [x, x + 1, x * 2]
    items.append(x.exp())
    items.extend([x.abs(), -x])
    items.insert(0, x.tanh())
    popped = items.pop()
    picked = items[1:5:2] + items[-2:]
    return torch.stack(picked + [popped]).sum(0) + next(i for i, t in enumerate(items) if t is items[2])


def _sort_keys(x):
    rows = list(x.unbind(0))
    ordered = sorted(zip([3, 1, 2, 0], rows), key=operator.itemgetter(0), reverse=True)
    return torch.stack([row * weight for weight, row in ordered])


def _tuples(x, y):
    first, *rest = (x, y, x * y, x - y)
    (a, b), c = (rest[0], rest[1]), first
    return a + b * c, len(rest)


def _sets(x):
    seen = {1, 2, 3} | {4} - {2}
    common = {"a", "b"} & {"b", "c"}
    return x * len(seen) + x * len(common) + (x if 3 in seen else -x)


def _strings(x):
    name = "-".join(["layer", str(2), f"{3:02d}"])
    parts = name.upper().split("-")
    return x * len(parts) + x * parts.count("03") + (x if name.startswith("layer") else -x)


def _closures(x):
    total = 0.0

    def add(value: float) -> float:
        nonlocal total
        total += value
        return total

    def outer(scale: float) -> Callable[[torch.Tensor], torch.Tensor]:
        def inner(t: torch.Tensor) -> torch.Tensor:
            return t * scale + add(1.0)
        return inner

    return outer(2.0)(x) + outer(3.0)(x) + total


def _generators(x):
    def halves(t: torch.Tensor, n: int):
        for i in range(n):
            yield t / (2 ** i)

    squares = (t * t for t in halves(x, 3))
    return sum(squares) + sum(1 for _ in range(4)) + next(iter(halves(x, 1)))


def _iteration(x, y):
    pairs = list(zip(x.unbind(0), y.unbind(0)))
    total = x.new_zeros(x.shape[1])
    for index, (a, b) in enumerate(pairs, start=1):
        if index % 2 == 0:
            continue
        total = total + a * b * index
    kept = list(filter(lambda t: t is not None, map(lambda t: t * 2, x.unbind(0))))
    return total + torch.stack(kept).sum(0) + all(v is not None for v in kept)


def _loops(x):
    count, value = 0, x
    while True:
        value = value * 0.5 + 1
        count += 1
        if count >= 4:
            break
    else:
        value = -value
    return value + count


def _itertools(x):
    chained = list(itertools.chain([x], [x * 2], (x * 3,)))
    running = list(itertools.accumulate([1, 2, 3, 4]))
    grid = sum(a * b for a, b in itertools.product([1, 2], [3, 4]))
    pairs = list(itertools.pairwise(chained))
    return sum(a - b for a, b in pairs) + x * running[-1] + grid + next(itertools.islice(itertools.count(5), 1, None))


def _functools(x):
    scale = functools.partial(torch.mul, other=3.0)
    total = functools.reduce(operator.add, [x, x * 2, x * 3])
    return scale(total) + operator.mul(x, 2) + operator.attrgetter("shape")(x)[0]


def _math(x):
    angle = math.pi / 6
    return x * math.sin(angle) + math.sqrt(16) * x + math.floor(2.7) + math.isclose(0.1 + 0.2, 0.3) + math.log2(8)


def _builtins(x):
    numbers = [3, -1, 4, -1, 5]
    return (x * max(numbers) + x * min(numbers) + abs(min(numbers)) + round(2.567, 1) + sum(numbers)
            + divmod(17, 5)[1] + pow(2, 3) + int("7") + float("0.5") + len(range(2, 10, 3)) + any(n < 0 for n in numbers))


def _classes(x):
    scaler = ShiftedScaler(0.5)
    return scaler(x) + Scaler.square(x) + scaler[2] + (x if isinstance(scaler, Scaler) else -x) + hasattr(scaler, "offset")


def _dataclasses(x, y):
    pair = Pair(x, y)
    other = dataclasses.replace(pair, weight=0.5)
    fields = [field.name for field in dataclasses.fields(pair)]
    return pair.combined() + other.combined() + len(fields)


def _namedtuples(x, y):
    point = Point(x, y)
    moved = point._replace(y=point.y + 1)
    return moved.x * moved.y + point[0] + Point._fields.index("y")


def _enums(x):
    color = Color.GREEN
    scale = 2.0 if color is Color.GREEN else 1.0
    return x * scale + color.value + len(Color)


def _exceptions(x):
    try:
        raise ValueError("caught inside the traced code")
    except ValueError:
        x = x + 1
    finally:
        x = x * 2
    try:
        {}["missing"]
    except KeyError:
        x = x - 1
    return x


def _generator_context_managers(x):
    log: list[str] = []
    with tracked(log) as depth:
        y = x * depth
    with tracked(log), tracked(log) as inner:
        y = y + inner
    return y + len(log)


def _context_managers(x):
    y = x * 2
    with torch.no_grad():
        z = x * 2
    with torch.enable_grad():
        w = x + 1
    with contextlib.suppress(ZeroDivisionError):
        y = y + 1 / 0
    return y + z + w


def _recursion(x):
    def power(t: torch.Tensor, n: int) -> torch.Tensor:
        return t if n == 1 else t * power(t, n - 1)

    return power(x, 4)


def _arguments(x, y):
    def combine(*tensors: torch.Tensor, scale: float = 1.0, **extra: float) -> torch.Tensor:
        return sum(tensors) * scale + sum(extra.values())

    options = {"alpha": 1.0, "beta": 2.0}
    return combine(x, y, scale=0.5, **options) + combine(*[x, y]) + combine(x, **{"scale": 2.0})


def _globals(x):
    return x * SCALE + math.e


def _collections(x):
    counts = collections.Counter("abracadabra")
    groups = collections.defaultdict(list)
    for i, row in enumerate(x.unbind(0)):
        groups[i % 2].append(row)
    queue = collections.deque([1, 2, 3], maxlen=3)
    queue.append(4)
    ordered = collections.OrderedDict(b=2, a=1)
    ordered.move_to_end("b")
    return (torch.stack(groups[0]).sum(0) * counts["a"] + torch.stack(groups[1]).sum(0) + queue[0]
            + list(ordered)[-1].count("b"))


def _modules(x):
    return BLOCK(x)


def _shape_arithmetic(x):
    rows, cols = x.shape
    flat = x.reshape(rows * cols)
    halves = flat.view(2, (rows * cols) // 2)
    padded = torch.nn.functional.pad(x, (0, cols % 2 + 1))
    return halves.sum(0).sum() + padded.sum() + x.size(0) * x.dim() + x.numel() // 2


def _indexing(x):
    y = x.clone()
    y[0] = y[0] * 2
    y[:, 1:] += 1
    y[y > 1] = 0.0
    return y[[0, 2]].sum(0) + y[-1, None] + torch.where(x > 0, x, y)


def _lists_of_tensors(x, y):
    pieces = [x, y, x * y]
    joined = torch.cat(pieces, dim=0)
    return torch.stack([p.mean(0) for p in pieces]).sum(0) + joined.sum(0) + len(pieces)


def _dtypes(x):
    info = torch.finfo(x.dtype)
    doubled = x.to(torch.float64) * 2
    counts = (x > 0).to(torch.int64).sum()
    return doubled.to(x.dtype) + counts + (info.eps > 0) + (x.dtype == torch.float32)


def _lambdas(x):
    transforms = [lambda t: t + 1, lambda t: t * 2, lambda t, k=3: t - k]
    return functools.reduce(lambda acc, f: f(acc), transforms, x)


def _walrus_and_match(x):
    if (n := x.shape[0]) > 2:
        x = x * n
    match (x.dim(), "mean"):
        case (2, "sum"):
            return x.sum(0)
        case (2, kind) if kind == "mean":
            return x.mean(0)
        case _:
            return x


def _comprehensions(x):
    nested = [[x[i, j] * (i + j) for j in range(x.shape[1])] for i in range(x.shape[0])]
    flat = [value for row in nested for value in row if True]
    return torch.stack(flat).reshape(x.shape) + sum({i: i * i for i in range(3)}.values())


def _methods_as_values(x):
    operations = {"sum": torch.Tensor.sum, "max": torch.amax}
    bound = x.mul
    return bound(2) + operations["sum"](x) + operations["max"](x) + getattr(x, "relu")()


def _autograd(x):
    y = x.sin() * x
    return y.sum(dim=1, keepdim=True) * x + y.detach().cos()


class Bag:
    """A user container: __slots__, the sequence protocol, truth, `in` and `+`."""

    __slots__ = ("items", "scale")

    def __init__(self, items, scale: float) -> None:
        self.items = list(items)
        self.scale = scale

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __contains__(self, index: int) -> bool:
        return 0 <= index < len(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __add__(self, other: Bag) -> Bag:
        return Bag(self.items + other.items, self.scale)


class Fallback:
    """Attributes it lacks come from __getattr__; it compares and hashes by value."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __getattr__(self, name: str) -> float:
        return float(len(name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fallback) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


class Registry(dict):
    def total(self):
        return sum(self.values())


class Stack(list):
    def peek(self):
        return self[-1]


class Positive:
    """A data descriptor that stores the absolute value under a private name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.private = "_" + name

    def __get__(self, instance: Any, owner: type | None = None) -> float:
        return getattr(instance, self.private)

    def __set__(self, instance: Any, value: float) -> None:
        setattr(instance, self.private, abs(value))


class Counted(type):
    """A metaclass that counts the classes made with it."""

    made: list[str] = []

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Counted:
        mcs.made.append(name)
        return super().__new__(mcs, name, bases, namespace)


class Gain(metaclass=Counted):
    level = Positive()

    def __init__(self, level: float) -> None:
        self.level = level

    @functools.cached_property
    def squared(self) -> float:
        return self.level ** 2


class Settings:
    """A global object whose attributes the traced code reads and changes (side effects)."""

    calls = 0
    mode = "train"


SETTINGS = Settings()
LOG: list[int] = []
TABLE = {"scale": 2.0, "names": ("a", "b")}
LIMIT = 3
DTYPE = torch.float64


class Failure(Exception):
    """A user exception; its code travels in `args` (dynamo cannot trace an exception's own __init__)."""


def _user_protocols(x):
    bag = Bag(x.unbind(0), 2.0) + Bag([x[0]], 1.0)
    total = sum(t * bag.scale for t in bag)
    names = {Fallback("a"): 1.0, Fallback("b"): 2.0}
    return total + len(bag) + (2 in bag) + (x if bag else -x) + names[Fallback("b")] + Fallback("c").anything


def _user_containers(x):
    registry = Registry(a=x, b=x * 2)
    registry["c"] = x.sin()
    stack = Stack([x, x + 1])
    stack.append(x * 3)
    stack.extend([x.cos()])
    return registry.total() + stack.peek() + len(stack) * len(registry) + isinstance(stack, list)


def _descriptors_and_metaclasses(x):
    gain = Gain(-2.0)
    gain.level = -3.0
    return x * gain.level + gain.squared + len(Counted.made) + (type(gain).__name__ == "Gain")


def _dict_methods(x):
    table = dict(zip("abc", (x, x * 2, x * 3)))
    merged = table | {"d": x.exp()}
    merged |= {"e": -x}
    removed = merged.pop("a") + merged.pop("z", x)
    last_key, last = merged.popitem()
    shared = merged.keys() & {"b", "c", "q"}
    copied = merged.copy()
    del copied["b"]
    copied.clear()
    defaults = dict.fromkeys(["u", "v"], 1.5)
    ordered = sorted(merged, reverse=True)
    return (removed + last + sum(merged[k] for k in sorted(shared)) + len(copied) + sum(defaults.values())
            + len(ordered[0]) + ("c" in merged) + list(reversed(merged))[0].count("c") + (last_key == "e"))


def _set_methods(x):
    seen = {1, 2}
    seen.add(3)
    seen.update([4, 5])
    seen.discard(9)
    seen.remove(1)
    frozen = frozenset({2, 3, 10})
    parts = (seen - frozen, seen ^ frozen, seen.intersection(frozen), seen.union({7}))
    flags = (seen.issubset({2, 3, 4, 5, 6}), seen.issuperset({2}), seen.isdisjoint({11}), frozen < {2, 3, 10, 11})
    squares = {n * n for n in seen if n % 2 == 0}
    return x * sum(len(p) for p in parts) + sum(flags) + x * max(squares) + sorted(seen)[0]


def _list_methods(x):
    values = [5, 3, 8, 3, 1]
    values.remove(8)
    values.reverse()
    values.sort(key=lambda v: -v)
    copied = values.copy()
    copied[1:3] = [7, 7, 7]
    del copied[0]
    doubled = values * 2
    pair = (values.index(3), values.count(3), (1, 2, 2).count(2), (4, 5).index(5))
    rows = list(x.unbind(0))
    rows[::2] = [row * 10 for row in rows[::2]]
    return (torch.stack(rows) + sum(pair) + len(doubled) + copied[-1] + ([1, 2] < [1, 3])
            + (values == sorted(values, reverse=True)))


def _string_methods(x):
    text = "  Conv2d_layer.weight  ".strip()
    head, _, tail = text.partition(".")
    label = "{}:{:>6.2f}|%s" % tail
    parts = [head.lower(), head.title(), text.replace("_", "-"), label.format(head, 1.5), "7".zfill(3)]
    score = sum(len(p) for p in parts) + text.find("layer") + ("42".isdigit()) + len("a\nb\nc".splitlines())
    return x * score + (x if text.endswith("weight") and f"{head!r}".startswith("'") else -x)


def _more_itertools(x):
    rows = x.unbind(0)
    longest = list(itertools.zip_longest(rows, rows[:2], fillvalue=x[0] * 0))
    grouped = {key: len(list(group)) for key, group in itertools.groupby("aabbbc")}
    kept = list(itertools.takewhile(lambda v: v < 3, [1, 2, 3, 1])) + list(itertools.dropwhile(lambda v: v < 3, [1, 4, 1]))
    combos = len(list(itertools.combinations(range(4), 2))) + len(list(itertools.permutations(range(3))))
    starred = list(itertools.starmap(operator.mul, [(2, 3), (4, 5)]))
    first, second = itertools.tee(iter(rows), 2)
    picked = list(itertools.compress(rows, [1, 0, 1, 0])) + list(itertools.filterfalse(lambda t: False, [x[1]]))
    cycled = list(itertools.islice(itertools.cycle([1, 2]), 5)) + list(itertools.repeat(3, 2))
    batches = list(itertools.batched(range(5), 2))
    return (sum(a * b for a, b in longest) + grouped["b"] + sum(kept) + combos + sum(starred) + next(first)
            + next(second) + sum(picked) + sum(cycled) + len(batches))


def _more_builtins(x):
    holder = Settings()
    setattr(holder, "extra", 2.5)
    gained = getattr(holder, "extra") + getattr(holder, "missing", 1.0)
    delattr(holder, "extra")
    checks = (callable(len), issubclass(bool, int), isinstance(x, (int, torch.Tensor)), type(x) is torch.Tensor,
              hasattr(holder, "extra"), id(holder) == id(holder), ord("a") - 96, len(chr(66)), bool(0), int(3.9))
    extremes = (max([3, 1, 2], key=lambda v: -v), min([], default=4), max(2, 7), sorted("cab", reverse=True)[0] == "c")
    ranges = (range(10)[2:8:3][-1], 5 in range(0, 10, 5), range(4).index(2), slice(1, 3).stop)
    zipped = sum(a * b for a, b in zip([1, 2], [3, 4], strict=True))
    return (x * gained + sum(checks) + sum(extremes) + sum(ranges) + zipped + sum([1, 2], start=3)
            + divmod(-7, 2)[0] + pow(3, 2, 5) + abs(-2.5) + hash((1, 2)) % 1 + round(7.25, 1))


def _generator_protocol(x):
    def accumulate():
        total = 0.0
        while True:
            value = yield total
            if value is None:
                return total
            total += value

    def delegate():
        result = yield from accumulate()
        yield result * 10

    running = accumulate()
    next(running)
    running.send(2.0)
    state = running.send(3.0)
    chained = delegate()
    next(chained)
    chained.send(1.0)
    last = chained.send(None)
    return x * state + last + any(v > 1 for v in (0, 2)) + all(v for v in [1, 2])


def _exception_handling(x):
    def check(value: float) -> float:
        if value < 0:
            raise Failure(int(-value)) from ValueError("negative")
        return value

    codes = []
    for value in (1.0, -2.0, 3.0):
        try:
            x = x + check(value)
        except (KeyError, Failure) as error:
            codes.append(error.args[0])
        else:
            x = x * 1.5
    try:
        assert LIMIT == 3, "the global moved"
        [][1]
    except IndexError as error:
        codes.append(len(error.args))
    with contextlib.suppress(Failure):
        raise Failure(5)
    return x + sum(codes)


def _global_state(x):
    SETTINGS.calls += 1
    LOG.append(len(LOG))
    scale = TABLE["scale"] * len(TABLE["names"]) if SETTINGS.mode == "train" else 1.0
    return x.to(DTYPE) * scale + LIMIT + (SETTINGS.calls > 0) + (LOG[-1] >= 0)


def _functools_more(x):
    @functools.lru_cache(maxsize=None)
    def factor(n: int) -> float:
        return float(n) * 0.5

    def logged(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            return function(*args, **kwargs) + 1
        return wrapper

    @logged
    def shift(t: torch.Tensor, by: float = 0.0) -> torch.Tensor:
        return t + by

    weigh = functools.partial(shift, by=factor(4))
    again = functools.partial(weigh)
    order = sorted([3, 1, 2], key=functools.cmp_to_key(lambda a, b: b - a))
    return again(x) + order[0] + len(shift.__name__) + factor(2)


def _operator_more(x):
    rows = list(x.unbind(0))
    first, third = operator.itemgetter(0, 2)(rows)
    upper = operator.methodcaller("clamp", min=0.0)(x)
    total = operator.iadd(first * 1, third)
    return (upper + total + operator.neg(x) + operator.truediv(x, 2) + operator.getitem(rows, 1)
            + operator.contains([1, 2], 2) + operator.index(3) + operator.is_(None, None))


def _math_more(x):
    return (x * math.prod([1, 2, 3]) + math.gcd(12, 18) + math.comb(5, 2) + math.factorial(4) + math.trunc(-2.5)
            + math.ceil(1.2) + math.copysign(2.0, -1.0) + math.hypot(3.0, 4.0) + math.degrees(math.pi)
            + math.exp(1.0) + math.log(100, 10) + math.isfinite(math.inf) + math.fsum([0.1] * 10))



class Shape(abc.ABC):
    """An abstract base, a generic alias and an alternative constructor."""

    @abc.abstractmethod
    def area(self) -> float: ...

    @classmethod
    def unit(cls) -> Shape:
        return cls(1.0)


class Square(Shape):
    created: typing.ClassVar[int] = 0

    def __new__(cls, side: float) -> Square:
        cls.created += 1
        return super().__new__(cls)

    def __init__(self, side: float) -> None:
        self._side = side

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)

    @property
    def side(self) -> float:
        return self._side

    @side.setter
    def side(self, value: float) -> None:
        self._side = max(value, 0.0)

    def area(self) -> float:
        return self._side ** 2


class Left:
    def tag(self) -> float:
        return 1.0


class Right:
    def tag(self) -> float:
        return 2.0


class Both(Left, Right):
    def tag(self) -> float:
        return super().tag() + Right.tag(self)


class Defaults(dict):
    def __missing__(self, key: str) -> float:
        return float(len(key))


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 3


class Mode(enum.Flag):
    READ = 1
    WRITE = 2


@dataclasses.dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int = 0
    tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", tuple(sorted(self.tags)))


GLOBALS_OF_EVERY_KIND = {  # each a guard of its own kind on the traced code
    "int": 3, "float": 0.5, "str": "mean", "bool": True, "none": None, "tuple": (1, 2.0), "list": [1, 2],
    "frozenset": frozenset({1}), "dtype": torch.float32, "device": torch.device("cpu"), "size": torch.Size([4, 3]),
    "function": math.sqrt, "module": math, "type": Square, "enum": Level.HIGH, "version": Version(2, 1),
    "slice": slice(0, 2), "range": range(3), "tensor": torch.ones(3),
}


def _class_features(x):
    square = Square.unit()
    square.side = -1.0
    square.side = 2.0
    flags = Mode.READ | Mode.WRITE
    versions = sorted([Version(1, 2, ("b", "a")), Version(1, 0)])
    return (x * square.area() + Both().tag() + Defaults(a=1.0)["abc"] + Level.HIGH * 2 + (Mode.WRITE in flags)
            + (versions[0] < versions[1]) + len(versions[1].tags) + isinstance(square, Shape) + (Square.created > 0))


def _function_objects(x):
    def scaled(t: torch.Tensor, factor: float = 2.0, *, shift: float = 0.0) -> torch.Tensor:
        return t * factor + shift

    bound = types.MethodType(lambda self, t: t * self.offset, Scaler(1.5))
    method = Scaler(0.5).__call__
    signature = inspect.signature(scaled)
    arguments = signature.bind(x, shift=1.0)
    arguments.apply_defaults()
    wrapped = functools.update_wrapper(lambda t: scaled(t, 3.0), scaled)
    return (scaled(*arguments.args, **arguments.kwargs) + bound(x) + method.__func__(method.__self__, x) + wrapped(x)
            + len(signature.parameters) + (scaled.__defaults__[0] if scaled.__defaults__ else 0)
            + len(scaled.__name__) + scaled.__kwdefaults__["shift"])


def _module_objects(x):
    handle = weakref.ref(SETTINGS)
    rng = random.Random(7)
    picks = [rng.random() for _ in range(2)]
    names = typing.cast(list, ["a", "b"])
    return x * sum(picks) + (handle() is SETTINGS) + len(names) + math.pi + types.SimpleNamespace(v=2.0).v


def _globals_of_every_kind(x):
    g = GLOBALS_OF_EVERY_KIND
    y = x.to(g["dtype"]).to(g["device"]) * g["int"] + g["float"]
    y = y if g["bool"] and g["none"] is None else -y
    y = y + sum(g["tuple"]) + sum(g["list"]) + len(g["frozenset"]) + g["function"](16.0) + g["module"].e
    y = y + (y.shape == g["size"]) + (g["type"] is Square) + g["enum"] + g["version"].minor
    return (y[g["slice"]].sum(0) + len(g["range"]) + g["tensor"] + (g["str"] == "mean"))


CASES = tuple(Case(function.__name__.removeprefix("_"), function, ((4, 3),) * function.__code__.co_argcount)
              for function in (
    _dicts, _lists, _sort_keys, _tuples, _sets, _strings, _closures, _generators, _iteration, _loops,
    _itertools, _functools, _math, _builtins, _classes, _dataclasses, _namedtuples, _enums, _exceptions,
    _context_managers, _generator_context_managers, _recursion, _arguments, _globals, _collections, _modules,
    _shape_arithmetic, _indexing, _lists_of_tensors, _dtypes, _lambdas, _walrus_and_match, _comprehensions,
    _methods_as_values, _autograd, _user_protocols, _user_containers, _descriptors_and_metaclasses,
    _dict_methods, _set_methods, _list_methods, _string_methods, _more_itertools, _more_builtins, _generator_protocol,
    _exception_handling, _global_state, _functools_more, _operator_more, _math_more, _class_features,
    _function_objects, _module_objects, _globals_of_every_kind,
))

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

import collections
import contextlib
import dataclasses
import enum
import functools
import itertools
import math
import operator
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


CASES = tuple(Case(function.__name__.removeprefix("_"), function, ((4, 3),) * function.__code__.co_argcount)
              for function in (
    _dicts, _lists, _sort_keys, _tuples, _sets, _strings, _closures, _generators, _iteration, _loops,
    _itertools, _functools, _math, _builtins, _classes, _dataclasses, _namedtuples, _enums, _exceptions,
    _context_managers, _generator_context_managers, _recursion, _arguments, _globals, _collections, _modules,
    _shape_arithmetic, _indexing, _lists_of_tensors, _dtypes, _lambdas, _walrus_and_match, _comprehensions,
    _methods_as_values, _autograd,
))

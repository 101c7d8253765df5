"""Graph breaks of every kind dynamo knows, for P3's `python` stage (p3/test_compile_python.py,
`test_compile_python_break_{backend}_{name}`): code dynamo cannot put in a graph (a print, a branch on
a tensor's value, `.item()`, `.tolist()`, a log call, storage and pointer queries, in-place resizes,
a class statement, `nn.Parameter`, `autograd.grad`, `sys.getrefcount`) and objects alive where it
breaks (random generators, exceptions, generators, string formats, `super()`, dataclasses, user
dicts, ordered dicts and chain maps, struct sequences, bound and descriptor methods, slices,
symbolic sizes, closure cells, NumPy arrays, a torch-function mode, a decorated function), with
tensors changed in place and globals changed before the break, which dynamo must rebuild as Python
(`reconstruct`) for the code after the break. Every other check of the stage traces one graph: the
trackers' rebuilding, the sources' bytecode and the break paths of the tensor, user-defined and misc
trackers run only here (docs/torch_suites.md#graph-breaks).

Each function breaks in its own body (never in a function it calls) and is compiled from a code
object of its own in each check: code run before, by eager's twin or the other backend's check, is
hot under CinderX at threshold 1, and dynamo would never see the resumed frames (the known bypass).
"""

from __future__ import annotations

import collections
import dataclasses
import io
import logging
import operator
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.testing._internal.common_utils import TestCase

from harness.interop.subjects import copy_function
from harness.torch_suites.compiled.compilechecks import Backend, FallbackToEager, check_function, graph_break
from harness.torch_suites.dynamo.pythonpaths import Case

LOG = logging.getLogger("harness.graphbreaks")  # below its level: the call breaks, nothing is written
PRINTED = io.StringIO()  # where `_print_call` prints


@dataclass(frozen=True)
class Break:
    """A function dynamo must split: at least `graphs` graphs captured and run in one call."""

    name: str
    function: Callable[..., Any]
    graphs: int = 2

    def case(self) -> Case:
        return Case(self.name, self.function, ((4, 3),) * self.function.__code__.co_argcount)


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: int


class Counts(dict):
    pass


def _print_call(x):
    y = x.sin()
    print(y.shape[0], end="", file=PRINTED)
    return y.cos()


def _value_branch(x):
    y = x * 2
    if y.sum() > 0:
        return y.sin()
    return y.cos()


def _item(x):
    y = x.exp()
    return y * y.sum().item()


def _tolist(x):
    y = x.abs()
    rows = y.tolist()
    return y * len(rows) + rows[0][0]


def _log_call(x):
    y = x.relu()
    LOG.info("relu of %s", y.shape)
    return y - 1


def _storage_queries(x):
    y = x.detach() + 1
    storage = y.untyped_storage()
    same = y.data_ptr() == y.view(-1).data_ptr()
    torch._dynamo.graph_break()
    return y * storage.size() + same


def _resize(x):
    y = x.detach().clone()
    y.resize_(12)
    z = torch.empty(0)
    z.set_(y)
    return z * 2


def _random_across(x):
    generator, y = random.Random(1), x.sin()
    generator.seed(2)
    state = generator.getstate()
    torch._dynamo.graph_break()
    generator.setstate(state)
    items = [1, 2, 3, 4]
    generator.shuffle(items)
    return y * generator.random() + generator.sample(items, 2)[0]


def _exception_across(x):
    try:
        raise KeyError("missing", 3)
    except KeyError as error:
        caught = error
    y = x * len(caught.args)
    torch._dynamo.graph_break()
    return y.cos(), caught.args, type(caught)


def _generator_across(x):
    rows = (x[i] * i for i in range(4))
    first = next(rows)
    torch._dynamo.graph_break()
    return first + sum(rows)


def _format_across(x):
    text = "{}-{}".format(x.shape[0], "rows")
    padded = f"{x.shape[1]:>4}"
    fill, y = "{:.2f}".format, x.exp()
    torch._dynamo.graph_break()
    return y + len(text), text, padded, fill(1.5)


def _super_across(x):
    pieces, y = super(Counts, Counts(a=1)), x.abs()
    torch._dynamo.graph_break()
    return y * pieces.__len__(), repr(Counts(b=2))


def _records_across(x):
    frozen, counts = Frozen(3), Counts(a=1, b=2)
    defaults = collections.defaultdict(list)
    defaults["a"].append(1)
    defaults |= {"b": [2]}
    y = x * frozen.scale
    torch._dynamo.graph_break()
    return (y + len(counts), hash(frozen) == hash(Frozen(3)), repr(frozen), dict(defaults),
            repr(counts))


def _struct_sequence_across(x):
    largest = x.max(0)
    torch._dynamo.graph_break()
    return largest.values * 2, largest.indices, repr(type(largest).__name__)


def _methods_across(x):
    add, append, getter, keys = (1).__add__, [].append, operator.attrgetter("shape"), dict.fromkeys
    upper, init, y = str.upper, object.__init__, x.sigmoid()
    torch._dynamo.graph_break()
    return y * add(2), getter(x), keys("ab", 0), upper("a"), append(1), init is object.__init__


def _tensor_operators_across(x):
    ints = torch.tensor([6, 3])
    shifted = (ints << 1, ints >> 1, ints | 1, ints & 1, ints ^ 1, ~ints)
    y = x.tanh()
    torch._dynamo.graph_break()
    return (shifted, y, x.detach() // 2, x % 2, x ** 2, 2 ** x, x @ x.T, -x, abs(x), int(ints[0]), float(x[0, 0]),
            bool(ints[0]), operator.index(ints[1]))


def _size_operators_across(x):
    n = x.shape[0]
    ops = ((n << 1), (n >> 1), (n | 1), (n & 1), (n ^ 1), -n, abs(n), n ** 2, float(n), +n, ~n, n // 3, n % 3)
    y = x * sum(ops)
    torch._dynamo.graph_break()
    return y.sin()


def _autograd_function_across(x):
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, tensor, factor=2):
            ctx.factor = factor
            return tensor * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor, None

    y = Scale.apply(x, factor=3)
    torch._dynamo.graph_break()
    return Scale.apply(y, 2)


def _parameter_across(x):
    weight = torch.nn.Parameter(torch.ones(3))
    torch._dynamo.graph_break()
    return x * weight, weight.requires_grad


def _grad_across(x):
    leaf = x.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad((leaf * leaf).sum(), leaf)
    torch._dynamo.graph_break()
    return grad + 1


def _checks_across(x):
    torch._check(x.shape[0] == 4)
    torch._check_tensor_all(x == x)
    n = x.shape[0]
    bounds = torch.sym_max(n, 2) * torch.sym_min(n, 3) * torch.sym_not(n == 3) * torch.sym_ite(n > 2, 1, 2)
    torch._dynamo.graph_break()
    return x * bounds


def _slices_across(x):
    window, stride, span = slice(1, 3), slice(None, None, 2), range(0, 4, 2)
    y = x[window] + x[stride]
    torch._dynamo.graph_break()
    return y.cos(), x[list(span)], window.indices(10), span[1]


def _cell_across(x):
    total = x.sum()

    def add(value):
        nonlocal total
        total = total + value

    add(1)
    torch._dynamo.graph_break()
    add(2)
    return x * total


def _numpy_across(x):
    array = x.detach().numpy() * 2
    y = x.exp()
    torch._dynamo.graph_break()
    array[0, 0] = 1.0
    return y + torch.from_numpy(array), array.ndim, array.itemsize, array.shape


def _reprs_across(x):
    counts = collections.defaultdict(int, a=1)
    largest, y = x.max(1), x.log1p().abs()
    torch._dynamo.graph_break()
    return y, repr(counts), repr(largest.indices), type(largest).__name__, repr(x.new_zeros(2))


class Passthrough(TorchFunctionMode):
    """A torch-function mode that changes nothing: entered in the region, live across its break."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class Noted:
    """A global object whose attribute the traced code sets."""

    last = 0


NOTED = Noted()
SEEN: list[int] = []  # a global list the traced code appends to


def _mode_across(x):
    with Passthrough():
        y = x.sin()
        torch._dynamo.graph_break()
        z = y.cos()
    return z


def _in_place_across(x):
    y = x.clone()
    y.add_(1)
    torch._dynamo.graph_break()
    y.mul_(2)
    return y


def _refcount(x):
    y = x + 1
    count = sys.getrefcount(y)
    return y * 2, count > 0


def _ordered_across(x):
    table = collections.OrderedDict(a=x.sum(0), b=x.sum(1))
    table.move_to_end("a")
    layers = collections.ChainMap({"k": 1}, {"j": 2})
    torch._dynamo.graph_break()
    return table["a"] * layers["j"], list(table), list(layers)


def _tensor_attributes_across(x):
    y = x.clone()
    kept = (y.is_contiguous(), y.dim(), y.element_size(), y.nbytes, y.itemsize, y.is_leaf)
    torch._dynamo.graph_break()
    return y * kept[1], kept


def _decorated_across(x):
    @torch.no_grad()
    def doubled(t):
        return t * 2

    y = doubled(x)
    torch._dynamo.graph_break()
    return y + torch.is_grad_enabled()


def _side_effects_across(x):
    SEEN.clear()
    SEEN.append(x.shape[0])
    NOTED.last = x.shape[1]
    y = x * 2
    torch._dynamo.graph_break()  # the list's and the attribute's changes are applied before the break
    return y + NOTED.last + len(SEEN)


BREAKS = tuple(Break(function.__name__.removeprefix("_"), function) for function in (
    _print_call, _value_branch, _item, _tolist, _log_call, _storage_queries, _resize,
    _random_across, _exception_across, _generator_across, _format_across, _super_across, _records_across,
    _struct_sequence_across, _methods_across, _tensor_operators_across,
    _size_operators_across, _autograd_function_across, _parameter_across, _grad_across, _checks_across,
    _slices_across, _cell_across, _numpy_across, _reprs_across, _mode_across, _in_place_across, _refcount,
    _ordered_across, _tensor_attributes_across, _decorated_across, _side_effects_across))


def check_break(case: TestCase, subject: Break, backend: Backend) -> None:
    """The function, from a code object of its own, through torch.compile: eager's outputs (and
    input gradients through AOTAutograd), dynamo recorded a graph break, and at least
    `subject.graphs` graphs were captured and ran, so the code after the break resumed into a
    graph of its own."""
    fresh = copy_function(subject.function, f"break_{subject.name}")
    shapes = subject.case()
    counter = check_function(case, fresh, shapes.inputs, backend)
    if not graph_break():
        case.fail(f"dynamo recorded no graph break in {subject.name}: the check tests nothing")
    if min(counter.captured, counter.executed) < subject.graphs:
        raise FallbackToEager(f"{counter.captured} graph(s) captured and {counter.executed} run where the break "
                              f"splits {subject.name} into {subject.graphs}: the code after it ran eagerly"
                              f"{graph_break()}")

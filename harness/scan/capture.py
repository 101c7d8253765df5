"""Capture: run a model under a TorchDispatchMode and record every aten call as plain data.

Tensors are never kept. Each tensor argument becomes a `TensorObs` (shape, dtype, layout and the few
value facts that decide a valid synthetic input) at the moment the op is called, before an in-place op
can change it. Each call also records the innermost Python frame inside the model's own code, so a
manifest case can say which source line issued the op; paths are relative to the code root's parent
(`transformers/models/...`), never absolute, so the output does not depend on the machine.
"""

from __future__ import annotations

import contextlib
import linecache
import re
import sys
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from harness.scan.ops import UNINITIALIZED

# Integer and bool tensors up to this many elements keep their exact values: offsets, router indices
# and small masks are only valid with their structure (sorted, in range, consistent with a shape).
EXACT_MAX_ELEMENTS = 256


@dataclass(frozen=True)
class ValueFacts:
    """What the values of a tensor argument looked like; enough to synthesize a valid stand-in."""

    low: float | None  # smallest finite value (None: empty tensor or no finite value)
    high: float | None  # largest finite value
    nonfinite: bool  # NaN or +-inf present
    exact: tuple[Any, ...] | None  # every value as nested tuples (small integer and bool tensors only)
    uninitialized: bool = False  # memory from empty*/resize_ not yet written: its values are garbage


UNKNOWN = ValueFacts(None, None, False, None)
GARBAGE = ValueFacts(None, None, False, None, uninitialized=True)


@dataclass(frozen=True)
class TensorObs:
    shape: tuple[int, ...]
    dtype: str  # torch attribute name: float32, int64, bool...
    stride: tuple[int, ...]
    storage_offset: int
    contiguous: bool
    values: ValueFacts


@dataclass(frozen=True)
class DtypeObs:
    name: str


@dataclass(frozen=True)
class EnumObs:
    """A torch.layout or torch.memory_format value, which the manifest schema cannot spell."""

    kind: str  # "layout" | "memory_format"
    name: str  # e.g. "contiguous_format"


@dataclass(frozen=True)
class OpaqueObs:
    """Any other Python object (a Generator, a sparse tensor...): described, never reproduced."""

    text: str


Observed = TensorObs | DtypeObs | EnumObs | OpaqueObs | None | bool | int | float | str | tuple["Observed", ...]


@dataclass(frozen=True)
class Param:
    name: str  # the schema's argument name
    keyword: bool  # passed by keyword (keyword-only in the schema)
    value: Observed


@dataclass(frozen=True)
class Site:
    """A source line of the model's own code: `path:line  text`."""

    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}  {self.text}"


@dataclass(frozen=True)
class Call:
    namespace: str  # "aten"
    name: str  # "mm"
    overload: str  # "default"
    params: tuple[Param, ...]
    site: Site | None
    backward_of: str | None = None  # autograd node for backward-pass calls, e.g. "MmBackward0"

    @property
    def qualified(self) -> str:
        return f"{self.namespace}.{self.name}.{self.overload}"


class SiteFinder:
    """Finds the innermost frame whose file lies in `root` (a package folder or a single module file)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._display: dict[str, str | None] = {}

    def display(self, filename: str) -> str | None:
        """`filename` relative to the root's parent (posix), or None when it is not the model's code."""
        if filename not in self._display:
            self._display[filename] = None
            if not filename.startswith("<"):  # <string>, <frozen ...>: no file
                path = Path(filename).resolve()
                if path == self.root or self.root in path.parents:
                    self._display[filename] = path.relative_to(self.root.parent).as_posix()
        return self._display[filename]

    def from_frame(self, frame: FrameType | None) -> Site | None:
        while frame is not None:
            shown = self.display(frame.f_code.co_filename)
            if shown is not None:
                return _site(shown, frame.f_code.co_filename, frame.f_lineno)
            frame = frame.f_back
        return None

    def from_traceback(self, entries: Sequence[str]) -> Site | None:
        """Innermost model frame of a forward stack that anomaly mode stored on an autograd node."""
        for entry in reversed(entries):
            found = _TRACEBACK_ENTRY.search(entry)
            if found is None:
                continue
            shown = self.display(found["file"])
            if shown is not None:
                return _site(shown, found["file"], int(found["line"]))
        return None


_TRACEBACK_ENTRY = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in ')


def _site(shown: str, filename: str, line: int) -> Site:
    return Site(shown, line, linecache.getline(filename, line).strip())


class _Garbage:
    """Storages holding uninitialized memory (outputs of empty*, not yet written by an in-place op).

    Their values differ from run to run, so they must never reach a manifest. Keyed by storage address;
    the weak reference to the op's output proves the address was not freed and reused since."""

    def __init__(self) -> None:
        self._outputs: dict[int, weakref.ref[torch.Tensor]] = {}

    def add(self, output: Any) -> None:
        for tensor in _tensors(output):
            self._outputs[_address(tensor)] = weakref.ref(tensor)

    def contains(self, tensor: torch.Tensor) -> bool:
        owner = self._outputs.get(_address(tensor))
        return owner is not None and owner() is not None

    def written(self, tensor: torch.Tensor) -> None:
        self._outputs.pop(_address(tensor), None)


def _address(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


class OpRecorder(TorchDispatchMode):
    """Records each call before running it (an in-place op would change the inputs it records)."""

    def __init__(self, sites: SiteFinder) -> None:
        super().__init__()
        self.sites = sites
        self.calls: list[Call] = []
        self._garbage = _Garbage()

    def __torch_dispatch__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: Mapping[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        self.calls.append(self._record(func, args, kwargs))
        output = func(*args, **kwargs)
        for argument, value in _arguments(func._schema, args, kwargs):
            if argument.alias_info is not None and argument.alias_info.is_write:
                for tensor in _tensors(value):
                    self._garbage.written(tensor)
        if func._schema.name.partition("::")[2] in UNINITIALIZED:
            self._garbage.add(output)
        return output

    def _record(self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Call:
        namespace, _, name = func._schema.name.partition("::")
        node = torch._C._current_autograd_node()
        if node is not None:  # running inside the autograd engine: a backward-pass call
            site = self.sites.from_traceback(node.metadata.get("traceback_", ()))  # type: ignore[attr-defined]
            backward_of = node.name()
        else:
            site = self.sites.from_frame(sys._getframe(2))
            backward_of = None
        params = tuple(Param(argument.name, argument.kwarg_only, self.observe(value))
                       for argument, value in _arguments(func._schema, args, kwargs))
        return Call(namespace, name, func._overloadname, params, site, backward_of)

    def observe(self, value: Any) -> Observed:
        return observe(value, self._garbage.contains)


def _arguments(schema: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Iterator[tuple[Any, Any]]:
    """(schema argument, value) pairs: positional ones in order, then keywords as passed."""
    positional = [argument for argument in schema.arguments if not argument.kwarg_only]
    yield from zip(positional, args)
    by_name = {argument.name: argument for argument in schema.arguments}
    for name, value in kwargs.items():
        yield by_name[name], value


def observe(value: Any, is_garbage: Callable[[torch.Tensor], bool] = lambda tensor: False) -> Observed:
    if isinstance(value, torch.Tensor):
        return _tensor(value, is_garbage(value))
    if isinstance(value, torch.dtype):
        return DtypeObs(_torch_name(value))
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, torch.layout):
        return EnumObs("layout", _torch_name(value))
    if isinstance(value, torch.memory_format):
        return EnumObs("memory_format", _torch_name(value))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(observe(item, is_garbage) for item in value)
    return OpaqueObs(type(value).__name__)


def _torch_name(value: object) -> str:
    return str(value).removeprefix("torch.")


def _tensor(tensor: torch.Tensor, garbage: bool) -> Observed:
    if tensor.layout != torch.strided or tensor.device.type == "meta" or tensor.is_quantized:
        return OpaqueObs(f"{tensor.layout} {tensor.device.type} tensor")
    tensor = tensor.detach()
    return TensorObs(
        shape=tuple(tensor.shape),
        dtype=_torch_name(tensor.dtype),
        stride=tuple(tensor.stride()),
        storage_offset=int(tensor.storage_offset()),
        contiguous=tensor.is_contiguous(),
        values=GARBAGE if garbage else _facts(tensor),
    )


def _facts(tensor: torch.Tensor) -> ValueFacts:
    if tensor.numel() == 0 or tensor.is_complex():
        return UNKNOWN
    small = tensor.numel() <= EXACT_MAX_ELEMENTS
    if tensor.dtype == torch.bool:
        low, high = int(bool(tensor.all())), int(bool(tensor.any()))
        return ValueFacts(low, high, False, _nested(tensor.to(torch.uint8).tolist()) if small else None)
    if not tensor.is_floating_point():
        low, high = int(tensor.min()), int(tensor.max())
        return ValueFacts(low, high, False, _nested(tensor.tolist()) if small else None)
    finite = tensor[torch.isfinite(tensor)]
    nonfinite = finite.numel() != tensor.numel()
    if finite.numel() == 0:
        return ValueFacts(None, None, nonfinite, None)
    return ValueFacts(float(finite.min()), float(finite.max()), nonfinite, None)


def _nested(values: Any) -> Any:
    return tuple(_nested(v) for v in values) if isinstance(values, list) else values


@contextlib.contextmanager
def deterministic_torch() -> Iterator[None]:
    """One intra-op thread while scanning: reductions then add up in one order, so float values (and the
    input ranges derived from them) are the same on every run, whatever the machine's core count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def capture(
    module: torch.nn.Module,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    code_root: Path,
    backward: bool = False,
) -> tuple[Call, ...]:
    """Every aten call of one forward pass (and, with `backward`, of the backward pass that follows)."""
    recorder = OpRecorder(SiteFinder(code_root))
    if not backward:
        with torch.no_grad(), recorder:
            module(*args, **kwargs)
        return tuple(recorder.calls)
    # Anomaly mode stores each autograd node's forward stack, which names backward calls' source lines.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with torch.autograd.detect_anomaly(check_nan=False):
            with recorder:
                output = module(*args, **kwargs)
            loss = scalar_loss(output)  # outside the recorder: the loss is the scanner's, not the model's
            with recorder:
                loss.backward()
    return tuple(recorder.calls)


def scalar_loss(output: Any) -> torch.Tensor:
    """The model's own loss when it computed one, else the sum of its first floating-point output."""
    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    for tensor in _tensors(output):
        if tensor.is_floating_point() and tensor.requires_grad:
            return tensor.float().sum()
    raise ValueError("the model returned no floating-point tensor that requires grad; cannot run backward")


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)

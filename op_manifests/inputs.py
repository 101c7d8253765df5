"""Inputs: turn a CaseSpec's argument specs into real tensors and Python values.

Everything is built on the CPU from one seeded generator per case, so the reference and the
candidate get bit-identical inputs by building twice (never by sharing: an in-place op on one
side cannot leak into the other). Layout presets allocate a contiguous base (shape computed by
the loader) and return a view of it, so strides and storage offsets are exactly as described.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from .loader import (
    Arg,
    CaseSpec,
    DtypeArg,
    FileArg,
    Limits,
    PyArg,
    TensorListArg,
    TensorSpec,
    ValueArg,
    confined_path,
    format_error,
)


class InputError(Exception):
    """An input could not be built (file rejected, too large...); the message is one line."""


def build_arguments(case: CaseSpec, limits: Limits) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments for one call of the case's op."""
    generator = torch.Generator().manual_seed(case.seed)
    args = [_build(arg, generator, case, limits) for arg in case.args]
    kwargs = {key: _build(arg, generator, case, limits) for key, arg in case.kwargs}
    return args, kwargs


def make_tensor(spec: TensorSpec, generator: torch.Generator) -> torch.Tensor:
    base = _fill(spec, generator)
    return _layout(base, spec)


def _build(arg: Arg, generator: torch.Generator, case: CaseSpec, limits: Limits) -> Any:
    if isinstance(arg, TensorSpec):
        return make_tensor(arg, generator)
    if isinstance(arg, TensorListArg):
        return [make_tensor(item, generator) for item in arg.items]
    if isinstance(arg, (ValueArg, PyArg)):
        return copy.deepcopy(arg.value)
    if isinstance(arg, DtypeArg):
        return getattr(torch, arg.name)
    return load_file(arg, case, limits)


def _fill(spec: TensorSpec, generator: torch.Generator) -> torch.Tensor:
    dtype = getattr(torch, spec.dtype)
    shape = spec.base_shape
    args = dict(spec.init_args)
    if spec.init == "data":
        return torch.tensor(_thaw(args["values"]), dtype=dtype)
    if spec.init == "zeros":
        return torch.zeros(shape, dtype=dtype)
    if spec.init == "ones":
        return torch.ones(shape, dtype=dtype)
    if spec.init == "arange":
        return torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape).to(dtype)
    if spec.init == "randint":
        return torch.randint(args["low"], args["high"], shape, generator=generator).to(dtype)  # type: ignore[arg-type]
    # Random floats are drawn in float32 and then cast, so fp16/bf16 cases see the same values
    # as an fp32 case with the same seed, rounded.
    if spec.init == "randn":
        values = torch.randn(shape, generator=generator)
    else:
        values = torch.rand(shape, generator=generator)
        if spec.init == "uniform":
            low, high = float(args["low"]), float(args["high"])  # type: ignore[arg-type]
            values = values * (high - low) + low
    return values.to(dtype)


def _layout(base: torch.Tensor, spec: TensorSpec) -> torch.Tensor:
    if spec.stride is not None:
        return base.as_strided(spec.shape, spec.stride, spec.storage_offset)
    args = dict(spec.preset_args)
    if spec.preset == "noncontig_slice":
        index = [slice(None)] * base.dim()
        index[args["dim"]] = slice(None, None, args["step"])  # type: ignore[call-overload]
        return base[tuple(index)]
    if spec.preset == "transpose_view":
        return base.transpose(args["dim0"], args["dim1"])  # type: ignore[arg-type]
    if spec.preset == "expand":
        return base.expand(spec.shape)
    return base


def load_file(arg: FileArg, case: CaseSpec, limits: Limits) -> torch.Tensor:
    """Load a tensor with torch.load(weights_only=True): pickled code is refused, not run.

    The path is re-confined here (not only at collection) so a symlink swapped in between
    collection and run cannot point outside the manifest's folder.
    """

    def fail(message: str) -> InputError:
        return InputError(format_error(arg.where, case.name, f"file {arg.path!r}: {message}"))

    try:
        path = confined_path(arg.base_dir, arg.path)
        size = path.stat().st_size
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    if size > limits.max_file_bytes:
        raise fail(f"{size} bytes (limit {limits.max_file_bytes})")
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure to unpickle rejects the input
        raise fail(
            f"rejected by torch.load(weights_only=True): {type(exc).__name__}: {_essence(exc)}"
        ) from None
    if arg.key is not None:
        if not isinstance(loaded, dict) or arg.key not in loaded:
            raise fail(f"has no key {arg.key!r}")
        loaded = loaded[arg.key]
    if not isinstance(loaded, torch.Tensor):
        raise fail(f"holds {type(loaded).__name__}, expected a tensor (use key: for a dict)")
    if loaded.numel() > limits.max_tensor_elements:
        raise fail(f"tensor has {loaded.numel()} elements (limit {limits.max_tensor_elements})")
    return loaded


def _essence(exc: Exception) -> str:
    """The informative line of a long error (torch.load's names the refused global)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        if "WeightsUnpickler error" in line:
            return line[:300]
    return lines[0][:300] if lines else ""


def _thaw(value: object) -> object:
    return [_thaw(v) for v in value] if isinstance(value, tuple) else value

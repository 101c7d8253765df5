"""torch.export over PyTorch's databases (P3's `export` stage), shared by its module.

torch.export turns a module into an `ExportedProgram` two ways: non-strict (the default: the forward
runs as Python while torch's dispatcher records every operator, through proxy tensors) and strict
(dynamo captures the forward's bytecode, as torch.compile does). Both are Python code of torch's
(torch/export, torch/_export, torch/fx's proxy tensors, AOTAutograd's export path) that no compile
stage runs. Each check exports a module (an OpInfo's op on its first samples, wrapped in a module of
ours; a ModuleInfo's module), proves the program holds at least one operator, runs `program.module()`
and compares with eager (compilechecks.assert_same: metadata only where eager disagrees with itself
or draws random numbers).

The hot state: a module whose `forward` is JIT-compiled before strict export meets it, the state
in which torch.compile captures nothing (docs/torch_suites.md#the-hot-states-blast-radius).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import Any

import torch
from torch.testing._internal.common_utils import TestCase, freeze_rng_state

from harness.torch_suites.compiled.compilechecks import first_module, make_hot, module_wrapper
from harness.torch_suites.shared.determinism import assert_same, deterministic, seeded
from harness.torch_suites.shared.operands import Operands, at_least_one, samples

SAMPLES = 2  # per OpInfo: every sample is a new export, a trace of its own


class ExportMode(StrEnum):
    """How torch.export captures the forward."""

    NON_STRICT = "nonstrict"  # Python runs, the dispatcher records (torch.export's default)
    STRICT = "strict"  # dynamo captures the bytecode


class EmptyExport(AssertionError):
    """The exported program holds no operator: nothing of the forward was captured."""


def export(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], mode: ExportMode) -> Any:
    return torch.export.export(module, args, kwargs, strict=mode is ExportMode.STRICT)


def prove_exported(program: Any) -> None:
    """Fail unless the program calls at least one operator."""
    if not any(node.op == "call_function" for node in program.graph.nodes):
        raise EmptyExport("torch.export captured no operator: the exported program only returns its inputs")


def draws_random(function: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Whether the results depend on the RNG state: an exported program need not draw random numbers
    in eager's order (its sampling ops may be functionalized), so only their metadata is compared."""
    with freeze_rng_state():
        torch.manual_seed(1)
        other = function(*args, **kwargs)
    try:
        torch.testing.assert_close(seeded(function, *args, **kwargs), other, equal_nan=True, check_dtype=False)
    except (AssertionError, TypeError, RuntimeError, ValueError):
        return True
    return False


def check_exported(case: TestCase, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
                   mode: ExportMode) -> None:
    """`module` exported in `mode`: at least one operator captured, and eager's results when run."""
    exact = deterministic(module, *args, **kwargs) and not draws_random(module, *args, **kwargs)
    program = export(module, args, kwargs, mode)
    prove_exported(program)
    assert_same(case, seeded(program.module(), *args, **kwargs), seeded(module, *args, **kwargs), exact)


def op_subjects(op: Any, device: str, dtype: torch.dtype) -> Iterator[tuple[Callable[..., Any], tuple[Any, ...]]]:
    """(the op as a function of a sample's tensors, those tensors) for the first samples that have tensors."""
    def found() -> Iterator[tuple[Callable[..., Any], tuple[Any, ...]]]:
        for sample in samples(op, device, dtype, False, SAMPLES):
            operands = Operands.of(sample)
            positions = operands.positions()
            if positions:
                yield operands.function(op, positions), tuple(operands.leaves[index] for index in positions)
    return at_least_one(found(), f"no sample of {op.full_name} has a tensor to export it with")


def check_export_op(case: TestCase, op: Any, device: str, dtype: torch.dtype, mode: ExportMode) -> None:
    for function, values in op_subjects(op, device, dtype):
        check_exported(case, module_wrapper(function), values, {}, mode)


def check_hot_export_op(case: TestCase, op: Any, device: str, dtype: torch.dtype) -> None:
    """A user's module around the op, its forward JIT-compiled first, exported strict."""
    for function, values in op_subjects(op, device, dtype):
        module = module_wrapper(function)
        make_hot(type(module).forward, lambda: module(*values))
        check_exported(case, module, values, {}, ExportMode.STRICT)


def check_export_module(case: TestCase, device: str, dtype: torch.dtype, module_info: Any, training: bool,
                        mode: ExportMode) -> None:
    module, args, kwargs = first_module(module_info, device, dtype, training)
    check_exported(case, module, args, kwargs, mode)


def check_hot_export_module(case: TestCase, device: str, dtype: torch.dtype, module_info: Any, training: bool) -> None:
    """The ModuleInfo's module, its forward (PyTorch's own) JIT-compiled first, exported strict."""
    module, args, kwargs = first_module(module_info, device, dtype, training)
    forward = getattr(type(module), "forward")
    make_hot(forward, lambda: module(*args, **kwargs))
    check_exported(case, module, args, kwargs, ExportMode.STRICT)

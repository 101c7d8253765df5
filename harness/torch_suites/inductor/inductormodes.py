"""Inductor's CPU modes over `module_db`, for P3's `inductor-modes` stage (p3/test_inductor_modes.py).

The compile stages run Inductor as torch.compile does by default: a Python wrapper that calls C++
kernels. Users on a CPU take other paths through Inductor, each Python code of its own that the
default never runs: the C++ wrapper (`cpp_wrapper`), inference freezing (weights folded into the
graph, oneDNN weight packing), max-autotune with Inductor's C++ GEMM templates (PyTorch's CPU
inference recipe: freezing and max-autotune together), AOTInductor (export, compile and package a
model, load it back and run it: deployment without Python), the debug trace (TORCH_COMPILE_DEBUG's
artifacts), and a second compile served by the FX graph and AOTAutograd caches.

Each check compiles a ModuleInfo's module (eval mode, its first forward input, CPU float32) for
inference and compares with eager under the entry's tolerances. torch.compile is given a fresh
function of ours that calls the module, as a user's inference function does: its frame is never
hot, so dynamo captures it in every configuration (the hot states are the compile stages' subject).
Equal numbers prove nothing about a mode, so each mode proves what it promises from what Inductor
left behind (its generated code, its counters, its files): a mode that compiled as by default fails
with `ModeDidNothing`.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from torch.testing._internal.common_utils import TestCase

from harness.torch_suites.compiled.compilechecks import (
    Backend,
    backend_settings,
    compiled,
    counting,
    first_module,
    fresh_function,
    leaves_of,
    prove_compiled,
)
from harness.torch_suites.shared.determinism import assert_same, deterministic, seeded


class Mode(StrEnum):
    """A path through Inductor on a CPU that torch.compile's default does not take."""

    CPP_WRAPPER = "cpp_wrapper"
    FREEZING = "freezing"
    MAX_AUTOTUNE = "max_autotune"
    AOT_INDUCTOR = "aot_inductor"
    DEBUG_TRACE = "debug_trace"
    CACHE = "cache"


class ModeDidNothing(AssertionError):
    """What the mode promises is missing from what Inductor left: it compiled as by default."""


class CacheBypassed(Exception):
    """The FX graph cache refuses the graph: the cache mode has nothing to prove (a skip, with why)."""


@dataclass(frozen=True)
class Compiled:
    """What one compile of the subject gave: its output, Inductor's generated code, its counters."""

    output: Any
    code: str
    counters: dict[str, int]


# Inductor's output code calls one of these for a matrix product (ATen's, oneDNN's or MKL's packed
# linear after freezing), or holds a C++ GEMM template's micro-kernel.
_GEMM = re.compile(r"extern_kernels\.(mm|addmm|bmm|baddbmm)\b|_mkl_linear|_linear_pointwise|micro_gemm")
# The line of Inductor's Python wrapper that unpacks the compiled graph's arguments (`arg0_1, arg1_1 = args`):
# the weights are arguments of a graph compiled as by default, constants of a frozen one
_CALL_ARGUMENTS = re.compile(r"^\s+([\w\s,]*?)\s*=\s*args$", re.MULTILINE)
EXECUTABLE_STACK = "cannot enable executable stack"  # glibc's dlopen error for such a shared object
# Dynamo refuses these modules unless `torch._dynamo.config.allow_rnn` is set (off by default): a
# graph break, so torch.compile runs them eagerly in every configuration.
DYNAMO_REFUSES = frozenset({"nn.RNN", "nn.GRU", "nn.LSTM"})


class ModelUnloadable(Exception):
    """AOTInductor built a model that this glibc refuses to load (PyTorch's bug): a skip, with why."""


def settings(mode: Mode, folder: Path) -> dict[str, Any]:
    """Inductor's configuration for `mode` (the debug trace writes under `folder`)."""
    return {
        Mode.CPP_WRAPPER: {"cpp_wrapper": True},
        Mode.FREEZING: {"freezing": True},
        # The C++ templates alone: with ATen's kernels beside them the choice is a timing, which may
        # differ from run to run (and from configuration to configuration)
        Mode.MAX_AUTOTUNE: {"freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP"},
        # A graph served by the FX graph cache is not compiled, so it leaves no trace
        Mode.DEBUG_TRACE: {"trace.enabled": True, "trace.debug_dir": str(folder), "force_disable_caches": True},
        # AOTInductor's default assembles the weights from a `.S` file with no `.note.GNU-stack` section,
        # so the linked model requires an executable stack, which glibc 2.41 and later refuse to dlopen
        # (docs/torch_suites.md#inductors-cpu-modes): the weights are built from C++ instead. A model
        # with no constants at all still gets the assembly file (C++ has no empty array).
        Mode.AOT_INDUCTOR: {"aot_inductor.use_consts_asm_build": False},
        Mode.CACHE: {},
    }[mode]


def compile_once(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
                 options: dict[str, Any]) -> Compiled:
    """The module through torch.compile's Inductor under `options`, called once from a fresh function
    of ours: proven captured and run, with the code Inductor generated and its counters."""
    from torch._dynamo.utils import counters
    from torch._inductor import config
    from torch._inductor.utils import run_and_get_code

    counter = counting(Backend.INDUCTOR)
    with backend_settings(Backend.INDUCTOR), config.patch(options):
        function = compiled(fresh_function(module, "infer"), Backend.INDUCTOR, counter)
        output, code = run_and_get_code(lambda: seeded(function, *args, **kwargs))
    prove_compiled(counter, calls=1)
    return Compiled(output, "\n".join(code), dict(counters["inductor"]))


def aot_inductor(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], folder: Path) -> Any:
    """The module exported, compiled and packaged by AOTInductor, loaded back, and run: the model's
    compiled C++ alone computes the output (no Python, so no fallback to eager is possible)."""
    from torch._inductor import config
    from torch.export.pt2_archive._package import AOTICompiledModel

    program = torch.export.export(module, args, kwargs)
    with backend_settings(Backend.INDUCTOR), config.patch(settings(Mode.AOT_INDUCTOR, folder)):
        package = torch._inductor.aoti_compile_and_package(program, package_path=str(folder / "model.pt2"))
    try:
        with mock.patch.dict(os.environ, TMPDIR=str(folder)):  # the loader unpacks under TMPDIR and leaves it there
            loaded = torch._inductor.aoti_load_package(package)
    except RuntimeError as error:
        if EXECUTABLE_STACK in str(error):
            raise ModelUnloadable(
                "AOTInductor's model needs an executable stack (a model without constants gets its empty "
                "constants assembled with no .note.GNU-stack section), which this glibc's dlopen refuses: "
                "PyTorch's bug, docs/torch_suites.md#inductors-cpu-modes") from error
        raise
    if not isinstance(loaded, AOTICompiledModel):
        raise ModeDidNothing(f"aoti_load_package gave a {type(loaded).__name__}, not a compiled model")
    return seeded(loaded, *args, **kwargs)


def prove(mode: Mode, result: Compiled, module: torch.nn.Module, inputs: int, folder: Path) -> None:
    """Fail with `ModeDidNothing` unless Inductor left what `mode` promises (`inputs`: the tensors the
    module is called with)."""
    missing = {
        Mode.CPP_WRAPPER: lambda: None if "CppWrapperCodeCache" in result.code
        else "the output code is a Python wrapper, not a C++ one",
        Mode.FREEZING: lambda: None if not _has_weights(module) or (taken := _call_arguments(result.code)) <= inputs
        else f"the compiled graph takes {taken} arguments for {inputs} input tensors: its weights were not frozen into it",
        Mode.MAX_AUTOTUNE: lambda: None if not _GEMM.search(result.code) or result.counters.get("cpp_templated_kernel_counter")
        else "the graph multiplies matrices, yet no C++ GEMM template was generated",
        Mode.DEBUG_TRACE: lambda: _missing_trace(folder),
        Mode.CACHE: lambda: None if result.counters.get("fxgraph_cache_hit")
        else f"the second compile was not served by the FX graph cache ({_cache_counters(result)})",
    }[mode]()
    if missing:
        raise ModeDidNothing(f"{mode}: {missing}")


def _has_weights(module: torch.nn.Module) -> bool:
    return any(True for _ in module.parameters())


def _call_arguments(code: str) -> int:
    """How many arguments Inductor's Python wrapper unpacks for its compiled graph (none: no such line)."""
    found = _CALL_ARGUMENTS.search(code)
    return len([name for name in found.group(1).split(",") if name.strip()]) if found else 0


def _missing_trace(folder: Path) -> str | None:
    written = {path.name for path in folder.rglob("*") if path.is_file()}
    absent = sorted({"output_code.py", "ir_post_fusion.txt", "fx_graph_readable.py"} - written)
    return f"the debug trace lacks {', '.join(absent)}" if absent else None


def _cache_counters(result: Compiled) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(result.counters.items()) if "cache" in name) or "no cache counter"


@contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="inductor-mode-") as folder:
        yield Path(folder)


def run_mode(mode: Mode, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
             folder: Path) -> Any:
    """The module's output through `mode`, proven to have gone the mode's way."""
    if mode is Mode.AOT_INDUCTOR:
        return aot_inductor(module, args, kwargs, folder)
    options = settings(mode, folder)
    if mode is Mode.CACHE:  # the first compile fills the caches (or hits an earlier test's entry)
        if compile_once(module, args, kwargs, options).counters.get("fxgraph_cache_bypass"):
            raise CacheBypassed("Inductor's FX graph cache does not store this graph (fxgraph_cache_bypass)")
    result = compile_once(module, args, kwargs, options)
    prove(mode, result, module, len(leaves_of(args, kwargs)), folder)
    return result.output


def check_mode(case: TestCase, mode: Mode, module_info: Any, device: str, dtype: torch.dtype) -> None:
    """The ModuleInfo's module (eval, first forward input) for inference through `mode`: eager's
    outputs, under the entry's tolerances (metadata only where eager disagrees with itself)."""
    if mode is not Mode.AOT_INDUCTOR and module_info.name in DYNAMO_REFUSES:
        case.skipTest(f"dynamo does not trace {module_info.name} (torch._dynamo.config.allow_rnn is off by default)")
    module, args, kwargs = first_module(module_info, device, dtype, training=False)
    with torch.no_grad():
        exact = deterministic(module, *args, **kwargs)
        expected = seeded(module, *args, **kwargs)
        with scratch() as folder:
            try:
                actual = run_mode(mode, module, args, kwargs, folder)
            except (CacheBypassed, ModelUnloadable) as why:
                case.skipTest(str(why))
        assert_same(case, actual, expected, exact)

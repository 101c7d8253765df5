"""P3's test classes over PyTorch's databases (harness/torch_suites/p3/): each database through
torch.compile's backends, under PyTorch's class and test names where PyTorch makes the same check
(so the entries' skips and expected failures apply), with the hot states beside; the checks they
run are in compilechecks.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import torch
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_modules import TrainEvalMode, modules
from torch.testing._internal.common_optimizers import optims
from torch.testing._internal.common_utils import TestCase

from harness.torch_suites.compiled.compilechecks import (
    Backend,
    HotState,
    check_hot,
    check_module,
    check_op,
    check_optimizer,
    first_module,
    first_op_sample,
    optimizer_pair,
    python_callable,
    set_gradients,
)
from harness.torch_suites.shared.entries import instantiate_cpu_tests
from harness.torch_suites.export.exportchecks import (
    ExportMode,
    check_export_module,
    check_export_op,
    check_hot_export_module,
    check_hot_export_op,
)
from harness.torch_suites.export.transformchecks import (
    check_compiled_grad,
    check_compiled_vmap,
    check_jvp,
    check_vjp,
    check_vmap,
)


def test_class(name: str, module_name: str, tests: dict[str, Callable[..., None]]) -> type[TestCase]:
    """A generic test class for PyTorch's device-type instantiation, named as `name` in `module_name`."""
    for test_name, test in tests.items():
        test.__name__ = test.__qualname__ = test_name
    generic = type(name, (TestCase,), {"exact_dtype": True, **tests})
    generic.__module__, generic.__qualname__ = module_name, name
    return generic


def op_test(chosen: list, backend: Backend, dynamic: bool | None = None) -> Callable[..., None]:
    @ops(chosen, allowed_dtypes=(torch.float32,))
    def test(self: TestCase, device: str, dtype: torch.dtype, op: Any) -> None:
        check_op(self, device, dtype, op, backend, dynamic)
    return test


def hot_op_test(chosen: list, state: HotState, backend: Backend) -> Callable[..., None]:
    @ops(chosen, allowed_dtypes=(torch.float32,))
    def test(self: TestCase, device: str, dtype: torch.dtype, op: Any) -> None:
        args, kwargs = first_op_sample(op, device, dtype)
        check_hot(self, state, op.op if state is HotState.ENTRY else op, backend, args, kwargs)
    return test


def module_test(chosen: list, backend: Backend) -> Callable[..., None]:
    @modules(chosen, allowed_dtypes=(torch.float32,))
    def test(self: TestCase, device: str, dtype: torch.dtype, module_info: Any, training: bool) -> None:
        check_module(self, device, dtype, module_info, training, backend)
    return test


ModuleCheck = Callable[[TestCase, Any, str, torch.dtype], None]  # (case, module_info, device, dtype)


def eval_module_test(chosen: list, check: ModuleCheck) -> Callable[..., None]:
    """`check` over the chosen ModuleInfos in eval mode only (CPU, float32): for stages that compile or
    rewrite a module for inference (the `fx` passes, Inductor's modes)."""
    @modules(chosen, allowed_dtypes=(torch.float32,), train_eval_mode=TrainEvalMode.eval_only)
    def test(self: TestCase, device: str, dtype: torch.dtype, module_info: Any, training: bool) -> None:
        check(self, module_info, device, dtype)
    return test


def hot_module_test(chosen: list, state: HotState, backend: Backend) -> Callable[..., None]:
    @modules(chosen, allowed_dtypes=(torch.float32,))
    def test(self: TestCase, device: str, dtype: torch.dtype, module_info: Any, training: bool) -> None:
        module, args, kwargs = first_module(module_info, device, dtype, training)
        check_hot(self, state, module, backend, args, kwargs)
    return test


def optimizer_test(chosen: list, backend: Backend) -> Callable[..., None]:
    @optims(chosen, dtypes=[torch.float32])
    def test(self: TestCase, device: str, dtype: torch.dtype, optim_info: Any) -> None:
        check_optimizer(self, device, dtype, optim_info, backend)
    return test


def hot_optimizer_test(chosen: list, state: HotState, backend: Backend) -> Callable[..., None]:
    @optims(chosen, dtypes=[torch.float32])
    def test(self: TestCase, device: str, dtype: torch.dtype, optim_info: Any) -> None:
        optim_input = next(iter(optim_info.optim_inputs_func(device=device, dtype=dtype)))
        optimizer, _ = optimizer_pair(optim_info, optim_input, device, dtype)
        set_gradients(optimizer, 0, optim_info)
        check_hot(self, state, optimizer.step, backend, (lambda: torch.zeros(()),), {})
    return test


def hot_tests(make: Callable[[list, HotState, Backend], Callable[..., None]], entries: list,
              backend: Backend) -> dict[str, Callable[..., None]]:
    """The three hot states for one backend over `entries` (those whose callable is Python code)."""
    return {f"test_hot_{state}_{backend}": make(entries, state, backend) for state in HotState} if entries else {}


def python_entries(entries: list) -> list:
    """The OpInfos whose callable is Python code (the JIT can compile it; dynamo traces into it)."""
    return [op for op in entries if python_callable(op.op) is not None]


def instantiate_op_suite(scope: MutableMapping[str, object], chosen: list, backend: Backend) -> None:
    """op_db through one backend, under PyTorch's names where PyTorch makes the check (Inductor's
    `TestInductorOpInfo.test_comprehensive`, AOTAutograd's `TestEagerFusionOpInfo` tests), with the
    hot states beside. The dynamic-shape slice is the OpInfos written in Python: their shape
    arithmetic is Python code that dynamo turns into symbolic expressions, where a JIT meets it."""
    python = python_entries(chosen)
    suites = {
        Backend.EAGER: ("TestDynamoOpInfo", {"test_compile_eager": op_test(chosen, backend)}, chosen),
        Backend.AOT_EAGER: ("TestEagerFusionOpInfo", {
            "test_aot_autograd_exhaustive": op_test(chosen, backend),
            **({"test_aot_autograd_symbolic_exhaustive": op_test(python, backend, dynamic=True)} if python else {}),
        }, chosen),
        Backend.INDUCTOR: ("TestInductorOpInfo", {"test_comprehensive": op_test(chosen, backend)}, chosen),
    }
    name, tests, entries = suites[backend]
    instantiate(scope, test_class(name, scope["__name__"], tests), entries)
    instantiate(scope, test_class("TestCompileHotOpInfo", scope["__name__"], hot_tests(hot_op_test, python, backend)),
                python)


def instantiate(scope: MutableMapping[str, object], generic: type[TestCase], chosen: list) -> None:
    scope[generic.__name__] = generic
    instantiate_cpu_tests(generic, scope, chosen)


def instantiate_suite(scope: MutableMapping[str, object], name: str, make: Callable[[list, Backend], Callable[..., None]],
                      make_hot: Callable[[list, HotState, Backend], Callable[..., None]], chosen: list,
                      names: Mapping[Backend, str], hot_name: str) -> None:
    """A database through every backend: the compile tests under `names` (PyTorch's where PyTorch
    makes the check), in class `name`, and the hot states in class `hot_name`."""
    instantiate(scope, test_class(name, scope["__name__"], {names[b]: make(chosen, b) for b in Backend}), chosen)
    hot = {test: check for backend in Backend for test, check in hot_tests(make_hot, chosen, backend).items()}
    instantiate(scope, test_class(hot_name, scope["__name__"], hot), chosen)


def transform_test(chosen: list, check: Callable[[TestCase, Any, str, torch.dtype], None]) -> Callable[..., None]:
    @ops(chosen, allowed_dtypes=(torch.float32,))
    def test(self: TestCase, device: str, dtype: torch.dtype, op: Any) -> None:
        check(self, op, device, dtype)
    return test


def instantiate_transform_suite(scope: MutableMapping[str, object], chosen: list) -> None:
    """functorch's transforms over OpInfos, under the names of functorch's own files where they make
    the check (test_vmap.py's `TestVmapOperatorsOpInfo.test_vmap_exhaustive`, test_ops.py's
    `TestOperators.test_vjp` and `test_jvp`, float32 as there), and ours through torch.compile."""
    suites = {
        "TestVmapOperatorsOpInfo": {"test_vmap_exhaustive": transform_test(chosen, check_vmap)},
        "TestOperators": {"test_vjp": transform_test(chosen, check_vjp), "test_jvp": transform_test(chosen, check_jvp)},
        "TestCompiledTransformsOpInfo": {"test_compile_vmap": transform_test(chosen, check_compiled_vmap),
                                         "test_compile_grad": transform_test(chosen, check_compiled_grad)},
    }
    for name, tests in suites.items():
        instantiate(scope, test_class(name, str(scope["__name__"]), tests), chosen)


def export_op_test(chosen: list, mode: ExportMode | None) -> Callable[..., None]:
    """torch.export of an OpInfo's samples in `mode`; None: strict, with the user's module hot first."""
    @ops(chosen, allowed_dtypes=(torch.float32,))
    def test(self: TestCase, device: str, dtype: torch.dtype, op: Any) -> None:
        if mode is None:
            check_hot_export_op(self, op, device, dtype)
        else:
            check_export_op(self, op, device, dtype, mode)
    return test


def export_module_test(chosen: list, mode: ExportMode | None) -> Callable[..., None]:
    """torch.export of a ModuleInfo's first module input in `mode`; None: strict, its forward hot first."""
    @modules(chosen, allowed_dtypes=(torch.float32,))
    def test(self: TestCase, device: str, dtype: torch.dtype, module_info: Any, training: bool) -> None:
        if mode is None:
            check_hot_export_module(self, device, dtype, module_info, training)
        else:
            check_export_module(self, device, dtype, module_info, training, mode)
    return test


def instantiate_export_suite(scope: MutableMapping[str, object], chosen: list, kind: str,
                             make: Callable[[list, ExportMode | None], Callable[..., None]], hot_chosen: list) -> None:
    """torch.export over one database (`kind`: OpInfo or ModuleInfo), names ours: non-strict and strict
    in `TestExport<kind>`, the hot state (strict) in `TestExportHot<kind>` over `hot_chosen`."""
    name = str(scope["__name__"])
    tests = {f"test_export_{mode}": make(chosen, mode) for mode in ExportMode}
    instantiate(scope, test_class(f"TestExport{kind}", name, tests), chosen)
    hot_test = "test_hot_module_wrapper_strict" if kind == "OpInfo" else "test_hot_entry_strict"
    instantiate(scope, test_class(f"TestExportHot{kind}", name, {hot_test: make(hot_chosen, None)} if hot_chosen else {}),
                hot_chosen)

"""functorch's transforms over PyTorch's databases (P3's `transforms` stage), shared by its module.

`torch.func`'s transforms are Python: `vmap` wraps every input in a batched tensor and keeps a
stack of interpreters (torch/_functorch/vmap.py, pyfunctorch.py), `vjp` and `jvp` build their
graphs through eager_transforms.py, and a custom `autograd.Function` under a transform goes through
autograd_function.py. P3's compile stages never call them: this stage does, on each OpInfo's first
samples, eager and through torch.compile (dynamo traces the transforms as higher-order ops).

- vmap: every positional tensor batched at dim 0 (the sample repeated, as PyTorch's own vmap tests
  batch), compared with the op run once per batch entry and stacked (random ops: vmap's `same`
  randomness, both from one seed);
- vjp: `torch.func.vjp`'s outputs and its pullback of seeded cotangents, compared with autograd's
  `torch.autograd.grad` on the same outputs;
- jvp: `torch.func.jvp` of seeded tangents, compared with forward-mode AD's dual tensors;
- the same vmap and a `torch.func.grad` through torch.compile (eager backend), proved captured and
  run as every P3 check is (compilechecks.prove_compiled).

Where functorch declares it cannot transform an op (a message of its own, LIMITATIONS: dynamic output
shapes, data-dependent control flow, no batching rule), the test skips naming it: the same under
every configuration, and a JIT that made functorch say so where stock does not shows as a skip
change in the verdict. Where eager does not agree with itself on a sample (random ops, uninitialized
memory), only shapes and dtypes are compared (compilechecks.assert_same).
"""

from __future__ import annotations

import re
import unittest
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.testing._internal.common_utils import TestCase
from torch.utils._pytree import tree_flatten, tree_unflatten

from harness.torch_suites.compiled.compilechecks import Backend, compiled, counting, fresh_function, prove_compiled
from harness.torch_suites.shared.determinism import assert_same, deterministic, seeded
from harness.torch_suites.shared.operands import Operands, at_least_one, samples, tensors_only

SAMPLES = 2  # per OpInfo and check: a transform re-enters the op's Python for every sample
BATCH = 2  # entries of the batch dimension vmap maps over

# What functorch says when it cannot transform an op (seen over op_db with torch 2.14.1): its own limits,
# the same under every runtime.
LIMITATIONS = re.compile("|".join((
    r"vmap: We do not support batching operators that can output dynamic shape",
    r"Batching rule not implemented for .* We could not generate a fallback",
    r"Vmap does not currently support same randomness with a batched tensor input",
    r"Batch norm got a batched tensor as input while the running_mean or running_var",
    r"an autograd\.Function with functorch transforms .* must override the setup_context",
    r"Sparse CSR tensors do not have (strides|is_contiguous)",  # functorch wraps strided tensors only
)))


@contextmanager
def functorch_limits() -> Iterator[None]:
    """A functorch limitation raised inside becomes a skip that names it."""
    try:
        yield
    except RuntimeError as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if LIMITATIONS.search(str(error)):
            raise unittest.SkipTest(f"functorch cannot transform this: {first}") from error
        raise


# --- vmap --------------------------------------------------------------------------------------------

def batched(operands: Operands, positions: list[int]) -> tuple[torch.Tensor, ...]:
    return tuple(torch.stack([operands.leaves[index]] * BATCH) for index in positions)


def looped(function: Callable[..., Any], values: tuple[Any, ...]) -> Any:
    """`function` once per batch entry, its outputs stacked: what vmap must return."""
    outputs = [seeded(function, *values) for _ in range(BATCH)]
    flat, spec = tree_flatten(outputs[0])
    per_entry = [tree_flatten(output)[0] for output in outputs]
    return tree_unflatten([torch.stack([entry[index] for entry in per_entry]) for index in range(len(flat))], spec)


def vmapped(function: Callable[..., Any]) -> Callable[..., Any]:
    """vmap with the same random numbers in every batch entry: from one seed, what each looped call draws."""
    return torch.vmap(function, randomness="same")


def vmap_subjects(op: Any, device: str, dtype: torch.dtype) -> Iterator[tuple[Callable[..., Any], tuple[Any, ...], Any, bool]]:
    """(function of the tensors, batched tensors, eager's looped result, exact) per sample to vmap."""
    def found() -> Iterator[tuple[Callable[..., Any], tuple[Any, ...], Any, bool]]:
        for sample in samples(op, device, dtype, False, SAMPLES):
            operands = Operands.of(sample)
            positions = operands.positions()
            function = operands.function(op, positions)
            values = tuple(operands.leaves[index] for index in positions)
            if positions and tensors_only(function(*values)):  # else nothing to batch, or a number vmap cannot return
                yield function, batched(operands, positions), looped(function, values), deterministic(function, *values)
    return at_least_one(found(), f"no sample of {op.full_name} has a tensor to batch and only tensors out")


def check_vmap(case: TestCase, op: Any, device: str, dtype: torch.dtype) -> None:
    """vmap of the op over a batch of its samples gives the looped results."""
    for function, inputs, expected, exact in vmap_subjects(op, device, dtype):
        with functorch_limits():
            actual = seeded(vmapped(function), *inputs)
        assert_same(case, actual, expected, exact)


def check_compiled_vmap(case: TestCase, op: Any, device: str, dtype: torch.dtype) -> None:
    """The same vmap through torch.compile (eager backend): captured, run, eager vmap's results."""
    for function, inputs, _, exact in vmap_subjects(op, device, dtype):
        with functorch_limits():
            expected = seeded(vmapped(function), *inputs)
            counter = counting(Backend.EAGER)
            actual = seeded(compiled(fresh_function(vmapped(function), "call_vmap"), Backend.EAGER, counter),
                            *inputs)
        prove_compiled(counter, calls=1)
        assert_same(case, actual, expected, exact)


# --- vjp, jvp and grad -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Differentiable:
    """One sample as the gradient transforms take it: a function of its floating inputs."""

    function: Callable[..., Any]
    primals: tuple[torch.Tensor, ...]


def differentiable_subjects(op: Any, device: str, dtype: torch.dtype, forward: bool) -> Iterator[Differentiable]:
    """The samples whose outputs are floating tensors that depend on floating inputs, where the op
    claims reverse-mode (or, `forward`, forward-mode) AD in `dtype`."""
    mode = "forward" if forward else "reverse"
    claimed = op.supports_forward_ad if forward else op.supports_autograd
    if not claimed or dtype not in op.supported_backward_dtypes(torch.device(device).type):
        raise unittest.SkipTest(f"{op.full_name} claims no {mode}-mode AD in {dtype}")

    def found() -> Iterator[Differentiable]:
        for sample in samples(op, device, dtype, True, SAMPLES):
            operands = Operands.of(sample)
            positions = operands.positions(differentiable=True)
            if not positions:
                continue
            primals = tuple(operands.leaves[index].detach() for index in positions)
            function = _floating_outputs(operands.function(op, positions), sample.output_process_fn_grad)
            output = function(*(p.clone().requires_grad_() for p in primals))
            if any(t.requires_grad for t in output) and deterministic(function, *primals):
                yield Differentiable(function, primals)
    return at_least_one(found(), f"no sample of {op.full_name} has a floating output that depends on its inputs")


def _floating_outputs(function: Callable[..., Any], process: Callable[[Any], Any]) -> Callable[..., tuple[torch.Tensor, ...]]:
    """The function's floating-point outputs (after the sample's own output processing), as a tuple:
    what has a gradient (a sort's indices have none)."""
    def floating(*values: Any) -> tuple[torch.Tensor, ...]:
        return tuple(t for t in tree_flatten(process(function(*values)))[0]
                     if isinstance(t, torch.Tensor) and t.is_floating_point())
    return floating


def seeded_like(values: Any) -> Any:
    """Random cotangents or tangents shaped as `values`, the same every time."""
    flat, spec = tree_flatten(values)
    generator = torch.Generator().manual_seed(0)
    return tree_unflatten([torch.randn(t.shape, generator=generator, dtype=t.dtype).to(t.device) for t in flat], spec)


def autograd_vjp(subject: Differentiable, cotangents: Any) -> tuple[torch.Tensor, ...]:
    """Reverse-mode AD's input gradients, a zero where an input does not reach the outputs."""
    primals = tuple(p.clone().requires_grad_() for p in subject.primals)
    outputs, grads = tree_flatten(subject.function(*primals))[0], tree_flatten(cotangents)[0]
    used = [(out, grad) for out, grad in zip(outputs, grads) if out.requires_grad]
    found = torch.autograd.grad([out for out, _ in used], primals, [grad for _, grad in used], allow_unused=True)
    return tuple(torch.zeros_like(p) if g is None else g for p, g in zip(primals, found))


def check_vjp(case: TestCase, op: Any, device: str, dtype: torch.dtype) -> None:
    """torch.func.vjp: the op's outputs, and the pullback of seeded cotangents, as autograd gives them."""
    for subject in differentiable_subjects(op, device, dtype, forward=False):
        with functorch_limits():
            output, pullback = torch.func.vjp(subject.function, *subject.primals)
            cotangents = seeded_like(output)
            actual = pullback(cotangents)
        case.assertEqual(output, subject.function(*subject.primals))
        case.assertEqual(actual, autograd_vjp(subject, cotangents))


def dual_jvp(subject: Differentiable, tangents: tuple[torch.Tensor, ...]) -> tuple[Any, list[torch.Tensor]]:
    """Forward-mode AD's outputs and output tangents (a zero where an output has none)."""
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        duals = tuple(fwAD.make_dual(p, t) for p, t in zip(subject.primals, tangents))
        unpacked = [fwAD.unpack_dual(out) for out in tree_flatten(subject.function(*duals))[0]]
        return ([u.primal.clone() for u in unpacked],
                [torch.zeros_like(u.primal) if u.tangent is None else u.tangent.clone() for u in unpacked])


def check_jvp(case: TestCase, op: Any, device: str, dtype: torch.dtype) -> None:
    """torch.func.jvp of seeded tangents: forward-mode AD's outputs and output tangents."""
    for subject in differentiable_subjects(op, device, dtype, forward=True):
        tangents = seeded_like(subject.primals)
        with functorch_limits():
            output, tangent = torch.func.jvp(subject.function, subject.primals, tangents)
        expected_output, expected_tangent = dual_jvp(subject, tangents)
        case.assertEqual(tree_flatten(output)[0], expected_output)
        case.assertEqual(tree_flatten(tangent)[0], expected_tangent)


def summed(function: Callable[..., Any]) -> Callable[..., torch.Tensor]:
    """The sum of every output: the scalar `torch.func.grad` differentiates."""
    def total(*values: Any) -> torch.Tensor:
        return sum(t.sum() for t in tree_flatten(function(*values))[0])  # type: ignore[return-value]
    return total


def check_compiled_grad(case: TestCase, op: Any, device: str, dtype: torch.dtype) -> None:
    """torch.func.grad of the summed outputs through torch.compile (eager backend): captured, run,
    and eager grad's gradients."""
    for subject in differentiable_subjects(op, device, dtype, forward=False):
        argnums = tuple(range(len(subject.primals)))
        with functorch_limits():
            expected = torch.func.grad(summed(subject.function), argnums=argnums)(*subject.primals)
            counter = counting(Backend.EAGER)
            transformed = torch.func.grad(summed(subject.function), argnums=argnums)
            actual = compiled(fresh_function(transformed, "call_grad"), Backend.EAGER, counter)(*subject.primals)
        prove_compiled(counter, calls=1)
        case.assertEqual(actual, expected)

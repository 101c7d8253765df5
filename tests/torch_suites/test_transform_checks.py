"""The `transforms` stage's checks can fail: each catches a transform that disagrees with eager, a
torch.compile that silently runs eagerly, and turns only functorch's own declared limits into skips
(harness/torch_suites/export/transformchecks.py). Run in-process with this interpreter's torch, on ops of
our own shaped as OpInfos."""

from __future__ import annotations

import unittest
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch._C import _functorch
from torch.testing._internal.common_utils import TestCase
from torch.testing._internal.opinfo.core import SampleInput

from harness.torch_suites.compiled.compilechecks import FallbackToEager
from harness.torch_suites.export.transformchecks import (
    check_compiled_grad,
    check_compiled_vmap,
    check_jvp,
    check_vjp,
    check_vmap,
)

pytestmark = pytest.mark.integration
CHECKS = {"vmap": check_vmap, "vjp": check_vjp, "jvp": check_jvp, "compile_vmap": check_compiled_vmap,
          "compile_grad": check_compiled_grad}


class Case(TestCase):
    def runTest(self) -> None:  # an instance to compare with, as PyTorch's tests do
        pass


class OpLike(SimpleNamespace):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # an OpInfo calls its op
        return self.op(*args, **kwargs)


def op_like(name: str, function: Any) -> OpLike:
    """An OpInfo's shape, as the checks read it: two samples of two float tensors and a number."""
    def sample_inputs(device: str, dtype: torch.dtype, requires_grad: bool = False) -> list[SampleInput]:
        def tensor(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, device=device, dtype=dtype, requires_grad=requires_grad)
        return [SampleInput(tensor(3, 4), args=(tensor(3, 4), 0.5)), SampleInput(tensor(5), args=(tensor(5), 2.0))]

    return OpLike(op=function, full_name=name, name=name, sample_inputs=sample_inputs, supports_autograd=True,
                           supports_forward_ad=True, supported_backward_dtypes=lambda device: {torch.float32})


def honest(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * y + alpha * x.sin()


def unlike_under(wrapped: Any) -> Any:
    """An op that gives other numbers on the tensors a transform wraps: a transform that is wrong."""
    def op(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        return honest(x, y, alpha) * (2 if wrapped(x) else 1)
    return op


def run(check: str, op: OpLike) -> None:
    CHECKS[check](Case(), op, "cpu", torch.float32)


@pytest.mark.parametrize("check", CHECKS)
def test_every_check_passes_on_an_op_the_transforms_get_right(check):
    run(check, op_like("honest", honest))


def compiling(x: torch.Tensor) -> bool:
    return torch.compiler.is_compiling()  # True while dynamo traces: compiled code that differs from eager's


@pytest.mark.parametrize(("check", "wrapped"), [("vmap", _functorch.is_batchedtensor),
                                                ("vjp", _functorch.is_gradtrackingtensor),
                                                ("jvp", _functorch.is_functorch_wrapped_tensor),
                                                ("compile_vmap", compiling), ("compile_grad", compiling)])
def test_every_check_fails_when_the_transform_disagrees_with_eager(check, wrapped):
    """Eager transforms against plain eager; compiled transforms against the same transform run eagerly."""
    with pytest.raises(AssertionError, match="not close|mismatch"):
        run(check, op_like("unlike", unlike_under(wrapped)))


@pytest.mark.parametrize("check", ["compile_vmap", "compile_grad"])
def test_a_torch_compile_that_runs_eagerly_fails_the_compiled_checks(check):
    with torch.compiler.set_stance("force_eager"), pytest.raises(FallbackToEager, match="captured no graph"):
        run(check, op_like("honest", honest))


def test_functorchs_own_limits_skip_naming_them_and_other_errors_fail():
    dynamic = op_like("nonzero", lambda x, y, alpha: torch.nonzero(x > 0))
    with pytest.raises(unittest.SkipTest, match="functorch cannot transform this: vmap: We do not support batching "
                                                "operators that can output dynamic shape"):
        run("vmap", dynamic)

    def broken(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        raise RuntimeError("the op itself failed")

    with pytest.raises(RuntimeError, match="the op itself failed"):
        run("vmap", op_like("broken", broken))


def test_an_op_claiming_no_autograd_skips_the_gradient_checks_saying_so():
    op = op_like("no_grad", honest)
    op.supports_autograd = op.supports_forward_ad = False
    for check in ("vjp", "jvp", "compile_grad"):
        with pytest.raises(unittest.SkipTest, match="no_grad claims no (forward|reverse)-mode AD in torch.float32"):
            run(check, op)


def reused_block(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """`empty_like` when the allocator hands back one freed block twice: the same garbage on every
    plain call, other garbage under vmap, and NaN once PyTorch fills uninitialized memory."""
    out = torch.empty_like(x)
    if torch.are_deterministic_algorithms_enabled():
        return out
    return out.fill_(2.0 if _functorch.is_batchedtensor(x) else 1.0)


def test_uninitialized_memory_that_two_plain_runs_agree_on_is_compared_by_shape_only():
    """A vmapped empty_like passed in stock and failed under cinderx-jit (P3 shard 2 of 6): two plain
    runs had agreed by chance, so its garbage was compared as numbers."""
    run("vmap", op_like("empty_like", reused_block))
    assert not torch.are_deterministic_algorithms_enabled()  # the probe leaves PyTorch's mode as it was
    with pytest.raises(AssertionError, match="not close|mismatch"):  # numbers still compared where eager fills them
        run("vmap", op_like("unlike", unlike_under(_functorch.is_batchedtensor)))

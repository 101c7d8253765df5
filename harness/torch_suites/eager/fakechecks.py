"""The bodies of PyTorch's fake-tensor and tag checks (`TestFakeTensor`, `TestTags` of
`test/test_ops.py`), written in our own code against `torch._subclasses` (FakeTensorMode,
CrossRefFakeMode), the operators' `torch.Tag`s and the OpInfo API; the modules of tier breadth
keep PyTorch's class and test names so each OpInfo's decorations apply.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable

import torch
import torch._prims_common as prims_common
import torch.utils._pytree as pytree
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch._subclasses.fake_utils import CrossRefFakeMode, outputs_alias_inputs
from torch.testing._internal import composite_compliance
from torch.testing._internal.common_utils import TestCase
from torch.utils._python_dispatch import TorchDispatchMode

Context = Callable[[], contextlib.AbstractContextManager]
DECLINED = (fake_tensor.UnsupportedFakeTensorException, fake_tensor.UnsupportedOperatorException,
            fake_tensor.DynamicOutputShapeException, fake_tensor.DataDependentOutputException)
CROSSREF_UNCHECKED = (torch.ops.aten.detach.default, torch.ops.aten.empty_strided.default,
                      torch.ops.aten.copy_.default, torch.ops.aten.is_same_size.default)  # as PyTorch, for speed
NOT_FAKED = ("sparse", "jiterator")  # entries PyTorch's fake checks leave out, by a word in the name


def skip_unfaked(case: TestCase, op) -> None:
    if any(word in op.full_name for word in NOT_FAKED):
        case.skipTest("PyTorch's fake-tensor checks leave sparse and jiterator entries out")


def _faked(mode: FakeTensorMode, value):
    return pytree.tree_map(lambda x: mode.from_tensor(x) if isinstance(x, torch.Tensor) else x, value)


def fake(case: TestCase, device: str, dtype: torch.dtype, op, context: Context = contextlib.nullcontext) -> None:
    """test_fake (no context) and test_fake_autocast (under autocast): every sample the op runs
    on gives, run on fake tensors, fake results with the real results' metadata (strides included)
    and the same aliasing of inputs; non-tensor results equal. A sample the fake mode declines
    (unsupported, dynamic output shape, data-dependent) is not compared."""
    skip_unfaked(case, op)
    for sample in op.sample_inputs(device, dtype, requires_grad=False):
        try:
            with context():
                real = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            continue  # a sample the op itself refuses says nothing of fake tensors
        mode = FakeTensorMode()
        inputs = _faked(mode, (sample.input, sample.args, sample.kwargs))
        try:
            with context(), mode:
                result = op(inputs[0], *inputs[1], **inputs[2])
        except DECLINED:
            continue
        fakes = pytree.tree_leaves(result)
        for got, want in zip(fakes, pytree.tree_leaves(real)):
            if not isinstance(got, torch.Tensor):
                case.assertNotIsInstance(want, torch.Tensor)
                case.assertEqual(got, want)
                continue
            case.assertIsInstance(got, FakeTensor)
            prims_common.compare_tensor_meta(got, want, check_strides=True)
        if any(isinstance(got, torch.Tensor) for got in fakes):
            case.assertEqual(outputs_alias_inputs(result, inputs),
                             outputs_alias_inputs(real, (sample.input, sample.args, sample.kwargs)),
                             "fake and real results differ in aliasing their inputs")


class _PointwiseShapes(TorchDispatchMode):
    """Checks that every operator tagged pointwise returns its inputs' broadcast shape."""

    def __init__(self, case: TestCase) -> None:
        super().__init__()
        self.case = case

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if torch.Tag.pointwise in func.tags:
            shapes = [x.shape for x in pytree.arg_tree_leaves(*args, **kwargs) if isinstance(x, torch.Tensor)]
            expected = torch._refs._broadcast_shapes(*shapes)
            for result in pytree.tree_leaves(out):
                if isinstance(result, torch.Tensor):
                    self.case.assertEqual(result.shape, expected, f"{func} is tagged pointwise")
        return out


def pointwise_ops(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_pointwise_ops: on fake tensors, every ATen operator the op reaches that is tagged
    pointwise gives the broadcast shape of its tensor arguments."""
    skip_unfaked(case, op)
    for sample in op.sample_inputs(device, dtype, requires_grad=False):
        mode = FakeTensorMode()
        inputs = _faked(mode, (sample.input, sample.args, sample.kwargs))
        try:
            op(inputs[0], *inputs[1], **inputs[2])
        except Exception:
            continue  # what the op cannot run on fake tensors is test_fake's business
        with _PointwiseShapes(case), mode:
            op(inputs[0], *inputs[1], **inputs[2])


def fake_crossref_backward(device: str, dtype: torch.dtype, op, context: Context) -> None:
    """test_fake_crossref_backward_no_amp / _amp (CUDA only in PyTorch): forward and backward run
    under CrossRefFakeMode, which checks each ATen call's fake result (aliasing included) against
    the real one."""
    for sample in op.sample_inputs(device, dtype, requires_grad=True):
        try:
            with CrossRefFakeMode(ignore_op_fn=lambda fn: fn in CROSSREF_UNCHECKED, check_aliasing=True), \
                    warnings.catch_warnings(), context(), torch.autograd.set_multithreading_enabled(False):
                composite_compliance.compute_expected_grads(
                    op.get_op(), [sample.input, *sample.args], sample.kwargs, sample.output_process_fn_grad,
                    op.gradcheck_wrapper)
        except fake_tensor.UnsupportedOperatorException:
            continue


def strided_layout(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_strided_layout: a factory function asked for `layout=torch.strided` returns it."""
    for sample in op.sample_inputs(device, dtype):
        result = op(sample.input, *sample.args, **{**sample.kwargs, "layout": torch.strided})
        case.assertEqual(result.layout, torch.strided)


def _reshaped_in_place(first: torch.Tensor, result, size, stride) -> bool:
    """Whether `func` returned its first argument with a new size or strides."""
    return isinstance(result, torch.Tensor) and result is first and (result.size() != size or result.stride() != stride)


def _check_inplace_view_tag(func, first, result, size, stride) -> None:
    """An operator that changes its input's size or strides in place must carry Tag.inplace_view
    (but resize_, which PyTorch exempts)."""
    if func is None or not _reshaped_in_place(first, result, size, stride):
        return
    overload = func.default if isinstance(func, torch._ops.OpOverloadPacket) else func
    if overload is not torch.ops.aten.resize_.default:
        assert torch.Tag.inplace_view in overload.tags, f"{overload} reshapes its input in place without inplace_view"


class _InplaceViewTags(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not isinstance(args[0], torch.Tensor):
            return func(*args, **kwargs)
        size, stride = args[0].size(), args[0].stride()
        result = func(*args, **kwargs)
        _check_inplace_view_tag(func, args[0], result, size, stride)
        return result


def tags(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_tags: the op, and every ATen operator it reaches, that reshapes its tensor input in
    place is tagged inplace_view (samples with a tensor input; lists of tensors are not checked,
    as in PyTorch)."""
    for sample in op.sample_inputs(device, dtype, requires_grad=False):
        first = sample.input
        if not isinstance(first, torch.Tensor):
            continue
        size, stride = first.size(), first.stride()
        with _InplaceViewTags():
            result = op(first, *sample.args, **sample.kwargs)
        packet = getattr(torch.ops.aten, op.aten_name if op.aten_name is not None else op.name, None)
        _check_inplace_view_tag(packet, first, result, size, stride)

"""The bodies of PyTorch's generic OpInfo checks, shared by the modules that run them on different
databases (`op_db` in p1/test_ops_consistency.py and p1/test_ops_gradients.py;
`autograd_function_db` and `custom_op_db` in p1/test_function_db.py) and in different dtypes (tier
breadth: every dtype PyTorch runs each check in), and TestCompositeCompliance's operator, copy-on-write
and view-replay checks (breadth/test_ops_composite.py).

Each function makes the check PyTorch's test of the same name makes (`test/test_ops.py`,
`test/test_ops_gradients.py`, `test/test_ops_fwd_gradients.py`), written in our own code against
the OpInfo API and PyTorch's `TestGradients` helpers (in the wheel); the modules keep PyTorch's
class and test names so the OpInfos' own decorations apply.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import torch
import torch.utils._pytree as pytree
from torch.testing._internal import composite_compliance
from torch.testing._internal.common_device_type import OpDTypes, ops
from torch.testing._internal.common_methods_invocations import (
    BinaryUfuncInfo,
    ReductionOpInfo,
    SpectralFuncInfo,
    UnaryUfuncInfo,
)
from torch.testing._internal.common_utils import (
    TestCase,
    TestGradients,
    clone_input_helper,
    noncontiguous_like,
    set_default_dtype,
    suppress_warnings,
)

from harness.torch_suites.shared.determinism import assert_same, deterministic


@dataclass(frozen=True)
class CommonDtypes:
    """The dtypes TestCommon's checks run in (each one the op supports)."""

    noncontiguous: tuple[torch.dtype, ...]
    variants: tuple[torch.dtype, ...]


FLOAT32 = CommonDtypes((torch.float32,), (torch.float32,))  # tier P1: the affordable slice
# test_ops.py's: tier breadth
PYTORCH_COMMON = CommonDtypes((torch.float32, torch.long, torch.complex64), (torch.float32, torch.complex64))


def common_tests(chosen: list, module_name: str, dtypes: CommonDtypes = FLOAT32) -> type[TestCase]:
    """PyTorch's `TestCommon` with test_noncontiguous_samples and test_variant_consistency_eager
    over the `chosen` OpInfos in `dtypes`, to be instantiated in the module `module_name`."""

    class TestCommon(TestCase):
        exact_dtype = True

        @suppress_warnings
        @ops(chosen, allowed_dtypes=dtypes.noncontiguous)
        def test_noncontiguous_samples(self, device, dtype, op):
            noncontiguous_samples(self, device, dtype, op)

        @ops(chosen, allowed_dtypes=dtypes.variants)
        def test_variant_consistency_eager(self, device, dtype, op):
            variant_consistency_eager(self, device, dtype, op)

    TestCommon.__module__, TestCommon.__qualname__ = module_name, "TestCommon"
    return TestCommon


def backward_in(op, device: str, dtype: torch.dtype) -> bool:
    """Whether the op supports backward in `dtype` on `device`."""
    return dtype in op.supported_backward_dtypes(torch.device(device).type)


def noncontiguous_samples(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_noncontiguous_samples: each sample as given and as a non-contiguous copy agree, in the
    outputs and (where the op supports backward in the dtype) in the inputs' gradients."""
    with_grad = backward_in(op, device, dtype)
    for sample in op.sample_inputs(device, dtype, requires_grad=with_grad):
        strided = sample.noncontiguous()
        expected = op(sample.input, *sample.args, **sample.kwargs)
        actual = op(strided.input, *strided.args, **strided.kwargs)
        case.assertEqual(actual, expected)
        if with_grad:
            _compare_gradients(case, sample, strided, expected, actual)


def _compare_gradients(case: TestCase, sample, strided, expected, actual) -> None:
    expected = _differentiable(sample.output_process_fn_grad(expected))
    actual = _differentiable(strided.output_process_fn_grad(actual))
    if not expected:
        return  # a scalar or a non-tensor result: nothing to differentiate
    grad_outputs = [torch.randn_like(t) for t in expected]
    inputs, strided_inputs = _positional_tensors(sample), _positional_tensors(strided)
    case.assertEqual(len(inputs), len(strided_inputs))
    want = torch.autograd.grad(expected, inputs, grad_outputs, allow_unused=True)
    got = torch.autograd.grad(actual, strided_inputs, [noncontiguous_like(g) for g in grad_outputs],
                              allow_unused=True)
    for index, (w, g) in enumerate(zip(want, got)):
        case.assertEqual(g, w, msg=f"gradient of input {index}: contiguous and non-contiguous differ")


def _positional_tensors(sample) -> list[torch.Tensor]:
    """The sample's input (or inputs) and positional arguments that require grad."""
    first = [sample.input] if isinstance(sample.input, torch.Tensor) else list(sample.input)
    return [t for t in (*first, *sample.args) if isinstance(t, torch.Tensor) and t.requires_grad]


def _differentiable(output) -> list[torch.Tensor]:
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, Sequence):
        return [t for t in output if isinstance(t, torch.Tensor) and t.requires_grad]
    return []


def variant_consistency_eager(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_variant_consistency_eager: the method, in-place, operator and in-place operator variants
    and every alias give the function's output and first-input gradient; in-place variants refuse
    samples that would broadcast their input and return their input's storage."""
    in_place = [op.inplace_variant, op.inplace_operator_variant]
    variants = [op.method_variant, op.inplace_variant, op.operator_variant, op.inplace_operator_variant]
    for alias in op.aliases:
        variants += [alias.op, alias.method_variant, alias.inplace_variant]
        in_place.append(alias.inplace_variant)
    in_place = [v for v in in_place if v is not None]
    variants = [v for v in variants if v is not None]
    operators = [v for v in (op.operator_variant, op.inplace_operator_variant) if v is not None]
    with_grad = backward_in(op, device, dtype)
    samples = list(op.sample_inputs(device, dtype, requires_grad=with_grad))
    for sample in samples:
        _check_variants(case, op, sample, variants, in_place, operators, with_grad)
    for sample in samples:
        if not sample.broadcasts_input:
            _check_in_place_storage(case, op, sample, in_place, operators)


def _first(inputs) -> torch.Tensor:
    return inputs if isinstance(inputs, torch.Tensor) else inputs[0]


def _scalar(output: torch.Tensor) -> torch.Tensor:
    total = output.sum()
    return total.abs() if total.dtype.is_complex else total


def _check_variants(case, op, sample, variants, in_place, operators, with_grad) -> None:
    first = _first(sample.input)
    process = sample.output_process_fn_grad or (lambda output: output)
    first.grad = None
    expected = op(sample.input, *sample.args, **sample.kwargs)
    dtype_changes = isinstance(expected, torch.Tensor) and expected.dtype is not first.dtype
    expected_grad = None
    if with_grad and isinstance(expected, torch.Tensor):
        _scalar(process(expected)).backward()
        expected_grad = first.grad
    for variant in variants:
        if variant in in_place and dtype_changes:
            continue
        if variant in operators and sample.kwargs:
            continue  # operators take no keyword arguments
        first.grad = None
        given = clone_input_helper(sample.input) if variant in in_place else sample.input
        if variant in in_place and sample.broadcasts_input:
            with case.assertRaises(RuntimeError, msg="an in-place variant resized its input"):
                variant(given, *sample.args, **sample.kwargs)
            continue
        result = variant(given, *sample.args, **sample.kwargs)
        case.assertEqual(result, expected)
        if expected_grad is not None and (variant not in in_place or op.supports_inplace_autograd):
            _scalar(process(result)).backward()
            case.assertEqual(first.grad, expected_grad)


def _check_in_place_storage(case, op, sample, in_place, operators) -> None:
    expected = op(sample.input, *sample.args, **sample.kwargs)
    if isinstance(expected, torch.Tensor) and expected.dtype is not _first(sample.input).dtype:
        return
    for variant in in_place:
        if variant in operators and sample.kwargs:
            continue
        given = clone_input_helper(sample.input)
        result = variant(given, *sample.args, **sample.kwargs)
        case.assertIsInstance(result, torch.Tensor, "an in-place variant returned a non-tensor")
        case.assertEqual(result.data_ptr(), _first(given).data_ptr(), atol=0, rtol=0)


def numpy_ref_ops(chosen: list) -> list:
    """The entries test_numpy_ref compares: those with a NumPy `ref` that are not unary or binary
    ufuncs, reductions or spectral ops (PyTorch compares those through their own conventions)."""
    others = (UnaryUfuncInfo, BinaryUfuncInfo, ReductionOpInfo, SpectralFuncInfo)
    return [op for op in chosen if op.ref is not None and not isinstance(op, others)]


def numpy_ref(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_numpy_ref: every reference input against the op's NumPy reference, with float64 as the
    default dtype (int64 results compared without their dtype, as NumPy's may differ)."""
    with set_default_dtype(torch.double):
        for sample in op.reference_inputs(device, dtype):
            case.compare_with_reference(op, op.ref, sample, exact_dtype=dtype is not torch.long)


def fn_grad(case: TestGradients, device: str, dtype: torch.dtype, op) -> None:
    """test_fn_grad: gradcheck of the op's function variant on every sample, through PyTorch's own
    TestGradients helper (which applies the op's gradcheck settings)."""
    if not backward_in(op, device, dtype):
        case.skipTest("Skipped! Dtype is not in supported backward dtypes!")
    case._grad_test_helper(device, dtype, op, op.get_op())


GRADIENT_DTYPES = (torch.float64, torch.complex128)  # PyTorch's gradient tests: each of these the op supports
GRADGRAD_REFUSED = r"derivative for .* is not implemented"
FORWARD_AD_REFUSED = r"Trying to use forward AD with .* that does not support it"
gradient_ops = partial(ops, dtypes=OpDTypes.supported, allowed_dtypes=GRADIENT_DTYPES)


def fn_gradgrad(case: TestGradients, device: str, dtype: torch.dtype, op) -> None:
    """test_fn_gradgrad: gradgradcheck of the function variant (contiguous and non-contiguous
    output gradients), for ops that claim second-order gradients."""
    case._skip_helper(op, device, dtype)
    if not op.supports_gradgrad:
        case.skipTest("Skipped! Operation does not support gradgrad.")
    case._check_helper(device, dtype, op, op.get_op(), "bwgrad_bwgrad")


def fn_fail_gradgrad(case: TestGradients, device: str, dtype: torch.dtype, op) -> None:
    """test_fn_fail_gradgrad: an op that claims no second-order gradients must refuse them."""
    case._skip_helper(op, device, dtype)
    if op.supports_gradgrad:
        case.skipTest("Skipped! Operation does support gradgrad.")
    with case.assertRaisesRegex(RuntimeError, GRADGRAD_REFUSED, msg="gradgrad ran on an op that claims no support"):
        case._check_helper(device, dtype, op, op.get_op(), "bwgrad_bwgrad")


def inplace_grad(case: TestGradients, device: str, dtype: torch.dtype, op) -> None:
    """test_inplace_grad: gradcheck of the in-place variant (on a copy of each input); an op that
    claims no in-place autograd must refuse a backward pass through it."""
    case._skip_helper(op, device, dtype)
    if not op.inplace_variant:
        case.skipTest("Skipped! Op has no inplace variant.")
    inplace = case._get_safe_inplace(op.get_inplace())
    if op.supports_inplace_autograd:
        case._grad_test_helper(device, dtype, op, inplace)
        return
    for sample in op.sample_inputs(device, dtype, requires_grad=True):
        if not sample.broadcasts_input:
            with case.assertRaises(Exception, msg="in-place autograd is claimed unsupported but worked"):
                _scalar(inplace(sample.input, *sample.args, **sample.kwargs)).backward()


def inplace_gradgrad(case: TestGradients, device: str, dtype: torch.dtype, op) -> None:
    """test_inplace_gradgrad: gradgradcheck of the in-place variant, where in-place autograd is claimed."""
    _skip_without_inplace_autograd(case, device, dtype, op)
    case._check_helper(device, dtype, op, case._get_safe_inplace(op.get_inplace()), "bwgrad_bwgrad")


def forward_mode_ad(case: TestGradients, device: str, dtype: torch.dtype, op, *, inplace: bool) -> None:
    """test_forward_mode_AD (inplace=False) and test_inplace_forward_mode_AD: gradcheck of
    forward-mode gradients (with batched forward gradients where the op claims them); an op that
    claims no forward AD must refuse it."""
    if inplace:
        _skip_without_inplace_autograd(case, device, dtype, op)
    else:
        case._skip_helper(op, device, dtype)
    variant = case._get_safe_inplace(op.get_inplace()) if inplace else op.get_op()
    batched = op.check_inplace_batched_forward_grad if inplace else op.check_batched_forward_grad
    _claimed_or_refused(case, op.supports_forward_ad, lambda: case._grad_test_helper(
        device, dtype, op, variant, check_forward_ad=True, check_backward_ad=False, check_batched_grad=False,
        check_batched_forward_grad=batched))


def fn_fwgrad_bwgrad(case: TestGradients, device: str, dtype: torch.dtype, op) -> None:
    """test_fn_fwgrad_bwgrad: forward-over-reverse gradgradcheck of the function variant; an op that
    claims no forward-over-reverse support must refuse it."""
    case._skip_helper(op, device, dtype)
    _claimed_or_refused(case, op.supports_fwgrad_bwgrad,
                        lambda: case._check_helper(device, dtype, op, op.get_op(), "fwgrad_bwgrad"))


def forward_ad_with_python_scalar(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """TestForwardADWithScalars.test_0d_tensor_with_python_scalar: a 0-d dual tensor combined with a
    Python scalar, on either side the op accepts one, keeps its tangent in the primal's dtype (a
    scalar must not promote one and not the other)."""
    if not op.supports_forward_ad or dtype not in op.supported_backward_dtypes(device):
        case.skipTest("Skipped! The op has no forward AD in this dtype.")
    from torch.autograd import forward_ad

    sides = [(True, op.supports_rhs_python_scalar), (False, op.supports_one_python_scalar)]
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(torch.ones((), device=device, dtype=dtype),
                                    torch.ones((), device=device, dtype=dtype))
        for scalar_right, supported in sides:
            if supported:
                result = forward_ad.unpack_dual(op(dual, 2.0) if scalar_right else op(2.0, dual))
                case.assertEqual(result.primal.dtype, result.tangent.dtype,
                                 msg=f"scalar on the {'right' if scalar_right else 'left'}")


SELF_KEYWORD_CALLS = (  # ATen overloads whose first argument is named `self`, called by keyword only
    (torch.ops.aten.reshape.default, lambda: {"self": torch.arange(6.0).reshape(1, 6), "shape": [3, 2]}),
    (torch.ops.aten.min.default, lambda: {"self": torch.linspace(-1.0, 1.0, 100)}),
)


def self_kwargs(case: TestCase) -> None:
    """TestSelfKwarg.test_self_kwargs: an ATen overload takes its `self` argument by keyword (a
    schema argument named like Python's method receiver must still bind), with the result of the
    positional call."""
    for overload, arguments in SELF_KEYWORD_CALLS:
        keywords = arguments()
        case.assertEqual(overload(**keywords), overload(*keywords.values()), msg=str(overload))


def _skip_without_inplace_autograd(case: TestGradients, device: str, dtype: torch.dtype, op) -> None:
    case._skip_helper(op, device, dtype)
    if not op.inplace_variant or not op.supports_inplace_autograd:
        case.skipTest("Skipped! Operation does not support inplace autograd.")


def _claimed_or_refused(case: TestGradients, claimed: bool, check: Callable[[], None]) -> None:
    """Run a forward-AD check the op claims to pass; otherwise the op must refuse forward AD."""
    if claimed:
        check()
        return
    with case.assertRaisesRegex(NotImplementedError, FORWARD_AD_REFUSED,
                                msg="forward AD ran on an op that claims no support for it"):
        check()


@dataclass(frozen=True)
class MathView:
    """A lazily applied math bit (conjugation, negation): `physical` computes it, `view` sets the
    bit on a view; the gradient comparison is repeated with a random output gradient for outputs
    `random_grad_for` accepts."""

    physical: Callable[[torch.Tensor], torch.Tensor]
    view: Callable[[torch.Tensor], torch.Tensor]
    is_set: Callable[[torch.Tensor], bool]
    random_grad_for: Callable[[torch.Tensor], bool]


CONJ_VIEW = MathView(torch.conj_physical, torch.conj, torch.is_conj, torch.is_complex)
NEG_VIEW = MathView(torch.neg, torch._neg_view, torch.is_neg, lambda _: True)
NEG_CONJ_VIEW = MathView(lambda t: -t.conj_physical(), lambda t: torch._neg_view(t).conj(),
                         lambda t: bool(torch.is_neg(t) and torch.is_conj(t)), torch.is_complex)


def conj_view(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_conj_view: the op on a conjugate view agrees with the op on the conjugated values."""
    if not op.test_conjugated_samples:
        case.skipTest("Operation doesn't support conjugated inputs.")
    _math_view(case, op, op.sample_inputs(device, dtype, requires_grad=backward_in(op, device, dtype)), CONJ_VIEW)


def neg_view(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_neg_view: the op on a negative view agrees with the op on the negated values."""
    if not op.test_neg_view:
        case.skipTest("Operation not tested with tensors with negative bit.")
    _math_view(case, op, op.sample_inputs(device, dtype, requires_grad=op.supports_autograd), NEG_VIEW)


def neg_conj_view(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_neg_conj_view: both bits at once, on the first sample only (as PyTorch)."""
    if not op.test_neg_view:
        case.skipTest("Operation not tested with tensors with negative bit.")
    if not op.test_conjugated_samples:
        case.skipTest("Operation doesn't support conjugated inputs.")
    samples = op.sample_inputs(device, dtype, requires_grad=backward_in(op, device, dtype))
    _math_view(case, op, itertools.islice(samples, 1), NEG_CONJ_VIEW)


def _math_view(case: TestCase, op, samples, bit: MathView) -> None:
    """The op on an input that carries the math bit as a view gives what it gives on the input
    computed physically, forward and in the first input's gradient; its in-place variant writes
    into the view and keeps the bit."""
    for sample in samples:
        _check_math_view(case, op, sample, bit)


def _with_bit(bit: MathView, value, requires_grad: bool | None = None):
    """A leaf copy of a tensor (or of a sequence's first tensor) whose bit is set as a view over the
    physically computed value, so the view holds the sample's own values."""
    if not isinstance(value, torch.Tensor):
        copies = [clone_input_helper(item) for item in value]
        copies[0] = _with_bit(bit, copies[0])
        return tuple(copies)
    grad = value.requires_grad if requires_grad is None else requires_grad
    with torch.no_grad():
        physical = bit.physical(value)
    return bit.view(physical).requires_grad_(grad)


def _check_math_view(case: TestCase, op, sample, bit: MathView) -> None:
    first = _first(sample.input)
    viewed = _with_bit(bit, sample.input)
    expected = op(sample.input, *sample.args, **sample.kwargs)
    actual = op(viewed, *sample.args, **sample.kwargs)
    case.assertEqual(actual, expected)
    same_dtype = isinstance(expected, torch.Tensor) and expected.dtype is first.dtype
    if op.inplace_variant is not None and not sample.broadcasts_input and same_dtype:
        written = op.inplace_variant(_with_bit(bit, first, requires_grad=False), *sample.args, **sample.kwargs)
        case.assertTrue(bit.is_set(written), "the in-place result lost the math bit")
        case.assertEqual(written, expected)
    if not (isinstance(expected, torch.Tensor) and expected.requires_grad):
        return
    process = sample.output_process_fn_grad or (lambda output: output)
    expected, actual = process(expected), process(actual)
    viewed_first = _first(viewed)
    expected.sum().abs().backward(retain_graph=True)
    actual.sum().abs().backward(retain_graph=True)
    if first.grad is None:
        return
    case.assertEqual(viewed_first.grad, first.grad)
    if bit.random_grad_for(expected):
        first.grad = viewed_first.grad = None
        grad = torch.randn_like(expected)
        expected.backward(grad)
        actual.backward(bit.view(bit.physical(grad)))
        case.assertEqual(viewed_first.grad, first.grad)


@dataclass(frozen=True)
class CowRule:
    """What an OpInfo allows of copy-on-write inputs in one pass (forward or backward): whether
    they may be materialized (copied on a write or a mutable read), and which arguments may anyway."""

    when: str
    no_materialize: bool
    allowed: Sequence[int | str] | None


def _strided(value) -> bool:
    return isinstance(value, torch.Tensor) and value.layout == torch.strided


def _lazy(value):
    return torch._lazy_clone(value) if _strided(value) else value


def _saved(value):
    return value.detach().clone() if isinstance(value, torch.Tensor) else copy.deepcopy(value)


def _check_cow(case: TestCase, given, saved, raw, key: int | str, rule: CowRule) -> None:
    """A lazily cloned input stays copy-on-write (unless the OpInfo allows materializing it) and
    its data, or its original's, is unchanged."""
    if not _strided(given):
        return
    name = (f"argument {key}" if isinstance(key, int) else f"keyword argument {key!r}") + f" in {rule.when}"
    case.assertTrue(torch._C._is_cow_tensor(raw), f"{name}: the original was materialized")
    is_cow = torch._C._is_cow_tensor(given)
    if rule.no_materialize and key not in (rule.allowed or ()):
        case.assertTrue(is_cow, f"{name} was materialized, which the OpInfo does not allow")
    kept = given if is_cow else raw
    case.assertTrue(torch.allclose(kept, saved, rtol=0, atol=0, equal_nan=True), f"{name}: copy-on-write data was written")


def sample_arguments(sample) -> tuple[list, dict]:
    """A sample's positional arguments (its input first) and keyword arguments, as the op takes them."""
    return [sample.input, *sample.args], sample.kwargs


def composite_operator(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_operator: the op under PyTorch's composite-compliance mode, then with each subset of its
    arguments wrapped, compared with plain eager. Where eager does not agree with itself (the
    uninitialized memory `empty`-like ops return) only shapes and dtypes are compared: an exact
    comparison of garbage passes or fails by the allocator's chance, a false regression."""
    for sample in op.sample_inputs(device, dtype, requires_grad=False):
        args, kwargs = sample_arguments(sample)
        compare = partial(assert_same, case, exact=deterministic(op, *args, **kwargs))
        composite_compliance.check_with_mode(op, args, kwargs, compare)
        composite_compliance.check_all_permutations(op, args, kwargs, compare)


def cow_input(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_cow_input: with its strided inputs lazily cloned (copy-on-write), the op's forward and
    backward passes neither write into them nor (where the OpInfo claims so) materialize them."""
    forward = CowRule("forward", op.supports_cow_input_no_materialize_forward, op.allow_cow_input_materialize_forward)
    backward = CowRule("backward", op.supports_cow_input_no_materialize_backward, op.allow_cow_input_materialize_backward)
    for sample in op.sample_inputs(device, dtype, requires_grad=op.supports_autograd):
        raw_args = [sample.input, *sample.args]
        args, kwargs = [_lazy(a) for a in raw_args], {k: _lazy(v) for k, v in sample.kwargs.items()}
        saved_args, saved_kwargs = [_saved(a) for a in raw_args], {k: _saved(v) for k, v in sample.kwargs.items()}
        leaves = composite_compliance.gather_leaf_tensors(args, kwargs)
        results = op.get_op()(*args, **kwargs)
        for index, arg in enumerate(args):
            _check_cow(case, arg, saved_args[index], raw_args[index], index, forward)
        for key, arg in kwargs.items():
            _check_cow(case, arg, saved_kwargs[key], sample.kwargs[key], key, forward)
        if not (op.supports_autograd and leaves and not op.skip_cow_input_backward):
            continue
        if sample.output_process_fn_grad is not None:
            results = sample.output_process_fn_grad(results)
        outputs = [r for r in pytree.tree_leaves(results) if isinstance(r, torch.Tensor) and r.requires_grad]
        if not all(map(_strided, outputs)):
            continue
        raw_grads = [torch.ones(r.shape, device=r.device, dtype=r.dtype) for r in outputs]
        grads = [_lazy(g) for g in raw_grads]
        saved_grads = [_saved(g) for g in raw_grads]
        torch.autograd.grad(outputs, leaves, grads, allow_unused=True, retain_graph=True)
        for index, arg in enumerate(args):
            _check_cow(case, arg, saved_args[index], raw_args[index], index, backward)
        for index, grad in enumerate(grads):
            _check_cow(case, grad, saved_grads[index], raw_grads[index], f"output grad {index}", backward)


def _same_layout(case: TestCase, got: torch.Tensor, want: torch.Tensor) -> None:
    case.assertEqual((got.size(), got.stride(), got.storage_offset(), got.device, got.dtype),
                     (want.size(), want.stride(), want.storage_offset(), want.device, want.dtype))


def view_replay(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_view_replay: every output that is a view of the input can be replayed, with original
    view tracking on: its view function on a fresh copy of the input gives the same view, and its
    reverse view function gives back a view of the input's layout."""
    with torch.autograd._force_original_view_tracking(True):
        for sample in op.sample_inputs(device, dtype, requires_grad=False):
            outputs = op(sample.input, *sample.args, **sample.kwargs)
            for out in outputs if isinstance(outputs, (tuple, list)) else [outputs]:
                if not (isinstance(out, torch.Tensor) and out._is_view() and out._base is sample.input):
                    continue
                fresh = sample.input.clone()
                replayed = out._view_func_unsafe(fresh)
                _same_layout(case, replayed, out)
                case.assertEqual(replayed, out)
                detached = out.detach()
                reversed_view = out._rev_view_func_unsafe(detached)
                _same_layout(case, reversed_view, sample.input)
                case.assertTrue(reversed_view._is_view() and reversed_view._base is detached,
                                "the reverse view function did not give a view")

"""The bodies of the rest of PyTorch's `TestCommon` checks on `op_db` (`test/test_ops.py`): the
claims an OpInfo makes about itself (dtypes, errors, promotion, `out=` and autograd) and results
in unusual inputs (complex32, non-canonical booleans), written in our own code against the OpInfo
API; tier breadth's test_ops_common.py keeps PyTorch's class and test names so each OpInfo's
decorations apply.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import torch
import torch.utils._pytree as pytree
from torch.testing._internal.common_methods_invocations import ReductionPythonRefInfo
from torch.testing._internal.common_dtype import all_types_and_complex_and, floating_and_complex_types_and
from torch.testing._internal.common_utils import TestCase, first_sample, is_iterable_of_tensors


@dataclass
class _Support:
    """The dtypes that worked and failed (forward or backward) while probing an op, with the last error."""

    worked: set[torch.dtype] = field(default_factory=set)
    failed: set[torch.dtype] = field(default_factory=set)
    errors: dict[torch.dtype, Exception] = field(default_factory=dict)

    def fail(self, dtype: torch.dtype, error: Exception) -> None:
        self.failed.add(dtype)
        self.errors[dtype] = error

    def mismatches(self, claimed: set[torch.dtype], *, unclaimed_ok: bool) -> list[str]:
        """What contradicts the claim: dtypes that always worked but are not claimed (unless
        `unclaimed_ok`), and claimed dtypes that never worked."""
        unclaimed = set() if unclaimed_ok else (self.worked - self.failed) - claimed
        false = claimed & (self.failed - self.worked)
        return ([f"worked but not claimed: {sorted(map(str, unclaimed))}"] if unclaimed else []) + [
            f"claimed but failed: {dtype} ({self.errors[dtype]!r})" for dtype in sorted(false, key=str)]


def _probe(op, device: str, dtype: torch.dtype, with_grad: bool, forward: _Support, backward: _Support) -> None:
    """Run every sample of the op in `dtype` (and a backward pass where a sample requires grad)."""
    try:
        samples = list(op.sample_inputs(device, dtype, requires_grad=with_grad))
    except Exception as error:  # samples the dtype cannot make: the dtype is unsupported
        forward.fail(dtype, error)
        if with_grad:
            backward.fail(dtype, error)
        return
    for sample in samples:
        try:
            result = op(sample.input, *sample.args, **sample.kwargs)
        except Exception as error:
            forward.fail(dtype, error)
            if with_grad:
                backward.fail(dtype, error)
            continue
        forward.worked.add(dtype)
        leaves = pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
        if not any(isinstance(t, torch.Tensor) and t.requires_grad for t in leaves):
            continue
        try:
            result = sample.output_process_fn_grad(result)
            if not isinstance(result, torch.Tensor):
                if not (isinstance(result, (list, tuple)) and isinstance(result[0], torch.Tensor)):
                    continue
                result = result[0]
            result.backward(torch.randn_like(result))
            backward.worked.add(dtype)
        except Exception as error:
            backward.fail(dtype, error)


def dtypes(case: TestCase, device: str, op, *, is_reference: bool) -> None:
    """test_dtypes: the dtypes the op claims (forward and backward) are those it runs in: every
    dtype is tried on every sample; a reference (`python_ref_db`) may work in more than it claims."""
    kind = torch.device(device).type
    chalf = (torch.complex32,) if op.supports_dtype(torch.complex32, kind) else ()
    differentiable = set(floating_and_complex_types_and(torch.half, torch.bfloat16, *chalf))
    forward, backward = _Support(), _Support()
    for dtype in all_types_and_complex_and(torch.half, torch.bfloat16, torch.bool, *chalf):
        _probe(op, device, dtype, dtype in differentiable, forward, backward)
    wrong = ([f"forward {line}" for line in forward.mismatches(set(op.supported_dtypes(kind)), unclaimed_ok=is_reference)]
             + [f"backward {line}" for line in
                backward.mismatches(set(op.supported_backward_dtypes(kind)), unclaimed_ok=is_reference)])
    if wrong:
        case.fail(f"the dtypes {op.name} claims on {kind} are wrong:\n" + "\n".join(wrong))


def errors_sparse(case: TestCase, device: str, op, layout: torch.layout) -> None:
    """test_errors_sparse: every sparse error input in `layout` raises its error with its message."""
    for error in op.error_inputs_sparse(device, layout):
        sample = error.sample_input
        with case.assertRaisesRegex(error.error_type, error.error_regex):
            case.assertIsNot(op(sample.input, *sample.args, **sample.kwargs), NotImplemented)


def complex_half_reference(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_complex_half_reference_testing: the op in complex32 agrees with the op in complex64,
    cast back to complex32 (complex32 overflows sooner; result dtypes may differ, as for `real`)."""
    def widen(x):
        return x.to(torch.complex64) if isinstance(x, torch.Tensor) and x.dtype is torch.complex32 else x

    def narrow(x):
        return x.to(torch.complex32) if isinstance(x, torch.Tensor) and x.dtype is torch.complex64 else x

    for sample in op.sample_inputs(device, dtype):
        actual = op(sample.input, *sample.args, **sample.kwargs)
        wide = sample.transform(widen)
        expected = pytree.tree_map(narrow, op(wide.input, *wide.args, **wide.kwargs))
        case.assertEqual(actual, expected, exact_dtype=False)


def _noncanonical_bool(case: TestCase, x):
    """A bool tensor's values stored as bytes 0 and 2..254 instead of 0 and 1 (gh-54789)."""
    if not isinstance(x, torch.Tensor) or x.dtype is not torch.bool:
        return x
    true_bytes = torch.randint(2, 255, x.shape, dtype=torch.uint8, device=x.device)
    stored = torch.where(x, true_bytes, torch.zeros((), dtype=torch.uint8, device=x.device)).view(torch.bool)
    case.assertEqual(stored, x)
    return stored


def non_standard_bool_values(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_non_standard_bool_values: booleans stored as any non-zero byte give the same results."""
    for sample in op.sample_inputs(device, dtype):
        expected = op(sample.input, *sample.args, **sample.kwargs)
        odd = sample.transform(lambda x: _noncanonical_bool(case, x))
        case.assertEqual(op(odd.input, *odd.args, **odd.kwargs), expected)


def promotes_int_to_float(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_promotes_int_to_float: an op claiming `promotes_int_to_float` returns floating point."""
    for sample in op.sample_inputs(device, dtype):
        output = op(sample.input, *sample.args, **sample.kwargs)
        case.assertTrue(output.dtype.is_floating_point,
                        f"the op claims promotes_int_to_float, but {dtype} gave {output.dtype}")


def out_requires_grad_error(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_out_requires_grad_error: an `out=` tensor that requires grad is refused (out= functions
    do not support autograd); ops without a floating-point or complex output have nothing to check."""
    sample = first_sample(case, op.sample_inputs(device, dtype))
    out = op(sample.input, *sample.args, **sample.kwargs)
    inexact = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]
    if not inexact:
        return
    for t in inexact:
        t.requires_grad_(True)
    with case.assertRaises(RuntimeError, msg="an out= that requires grad was accepted"):
        op(sample.input, *sample.args, **sample.kwargs, out=out)


def multiple_devices(case: TestCase, devices: list[str], dtype: torch.dtype, op) -> None:
    """test_multiple_devices (several CUDA devices only, as PyTorch): on each device the op's
    first sample gives results on that device."""
    for name in devices:
        device = torch.device(name)
        sample = first_sample(case, op.sample_inputs(device, dtype))
        result = op(sample.input, *sample.args, **sample.kwargs)
        if not (isinstance(result, torch.Tensor) or is_iterable_of_tensors(result)):
            case.skipTest("Skipped! Only supports single tensor or iterable of tensor outputs.")
        for t in [result] if isinstance(result, torch.Tensor) else result:
            case.assertEqual(t.device, device)


def compare_cpu(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_compare_cpu (off CPU only, as PyTorch): every reference input gives on the device what
    it gives on CPU (after the sample's output processing; 1e-3 tolerance for inexact dtypes)."""
    tolerance = 1e-3 if dtype.is_floating_point or dtype.is_complex else 0
    for sample in op.reference_inputs(device, dtype):
        on_cpu = sample.transform(lambda x: x.to(device="cpu") if isinstance(x, torch.Tensor) else x)
        here = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))
        there = on_cpu.output_process_fn_grad(op(on_cpu.input, *on_cpu.args, **on_cpu.kwargs))
        case.assertEqual(here, there, atol=tolerance, rtol=tolerance)


def _out_refused(op, sample, expected, device: str, target: str) -> Exception | None:
    """The error (or None) of the op on `target` (inputs, devices and device names moved there)
    with an `out=` of float64 where the results have another dtype."""
    out = pytree.tree_map_only(torch.Tensor, lambda t: torch.empty_like(t, device=target, dtype=torch.float64),
                               expected)
    moved = pytree.tree_map_only(torch.Tensor, lambda t: t.to(target), (sample.input, sample.args, sample.kwargs))
    moved = pytree.tree_map_only(torch.device, lambda _: torch.device(target), moved)
    moved = pytree.tree_map_only(str, lambda value: target if value == device else value, moved)
    try:
        op(moved[0], *moved[1], **moved[2], out=out)
    except Exception as error:
        return error
    return None


def meta_consistency_out_dtype_mismatch(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_meta_consistency_out_dtype_mismatch: an `out=` of a mismatching dtype is refused on
    the meta device exactly when it is refused on CPU (meta kernels stand for every device's)."""
    for sample in op.sample_inputs(device, dtype):
        try:
            expected = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            continue  # a sample the op refuses has no expected output
        expected = tuple(expected) if isinstance(expected, tuple) else expected  # named tuples as plain ones
        here = _out_refused(op, sample, expected, device, device)
        meta = _out_refused(op, sample, expected, device, "meta")
        if (here is None) != (meta is None):
            verdict = {True: "accepted", False: "refused"}
            raise AssertionError(f"{device} {verdict[here is None]} the out=, meta {verdict[meta is None]} it") \
                from here or meta


def reduction_ops_reduce(case: TestCase, device: str, op) -> None:
    """test_reduction_ops_reduce: an operator tagged `reduction`, given `dim`, returns as many
    elements as its input has over the reduced dimensions' sizes (float32 samples)."""
    for sample in op.sample_inputs(device, torch.float32):
        if "dim" not in sample.kwargs:
            continue
        result = op(sample.input, *sample.args, **sample.kwargs)
        if not isinstance(result, torch.Tensor):
            continue
        dim, ndim = sample.kwargs["dim"], sample.input.ndim
        dims = list(range(ndim)) if dim is None else [dim] if isinstance(dim, int) else dim
        if any(abs(d) >= ndim for d in dims):
            continue  # zero-dimensional inputs are not checked, as in PyTorch
        reduced = math.prod(sample.input.shape[d] for d in dims)
        case.assertEqual(result.numel(), sample.input.numel() // reduced, f"{op.name} over dim={dim} did not reduce")


INTEGRAL_OUT_REFUSED = "dtype argument and out dtype must match in reduction"


def out_integral_dtype(case: TestCase, device: str, dtype: torch.dtype, op) -> None:
    """test_out_integral_dtype: a reduction of int16 values with `out=` int32 refuses a `dtype=`
    argument other than int32 (and only that), with or without `dtype=` otherwise running."""
    def attempt(kwargs: dict, *, with_out: bool, refused: bool) -> None:
        out = {"out": torch.empty(0, dtype=torch.int32, device=device)} if with_out else {}
        try:
            op(sample.input, *sample.args, **kwargs, **out)
        except RuntimeError as error:
            case.assertEqual(str(error), INTEGRAL_OUT_REFUSED)
            case.assertTrue(refused, "refused an out= whose dtype matches")
            return
        case.assertFalse(refused, "accepted an out= whose dtype does not match the dtype argument")

    for sample in op.sample_inputs(device, dtype):
        if "dtype" in sample.kwargs:
            attempt(sample.kwargs, with_out=False, refused=False)
            attempt(sample.kwargs, with_out=True, refused=sample.kwargs["dtype"] != torch.int32)
            continue
        for given in (None, torch.int16, torch.int32):
            kwargs = sample.kwargs if given is None else {**sample.kwargs, "dtype": given}
            attempt(kwargs, with_out=False, refused=False)
            attempt(kwargs, with_out=True, refused=given is torch.int16)


def has_reduction_tag(op) -> bool:
    """Whether the ATen operator the entry is named after is tagged `reduction`."""
    packet = getattr(torch.ops.aten, op.name, None)
    return packet is not None and hasattr(packet, "default") and torch.Tag.reduction in packet.default.tags


def takes_integral_out(op) -> bool:
    """The reductions test_out_integral_dtype checks: references with `out=`, int16 and a `dtype=` keyword."""
    return (isinstance(op, ReductionPythonRefInfo) and op.supports_out and torch.int16 in op.dtypes
            and "dtype" in inspect.getfullargspec(op.op).kwonlyargs)

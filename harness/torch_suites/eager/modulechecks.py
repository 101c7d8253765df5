"""The bodies of PyTorch's generic ModuleInfo checks, shared by tier P1 (p1/test_module_db.py: five
checks, one dtype each) and tier breadth (breadth/test_modules.py: every check of PyTorch's
`test/test_modules.py` in every dtype its `@modules` gives).

Each function makes the check PyTorch's test of the same name makes, written in our own code against
the ModuleInfo API (`module_inputs_func`, `module_error_inputs_func`, the entry's flags); the modules
keep PyTorch's class and test names (`TestModule.test_forward`, ...) so each ModuleInfo's skips,
expected failures and tolerance overrides apply.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from copy import deepcopy
from inspect import signature
from itertools import chain, product
import torch
from torch._subclasses.meta_utils import assert_metadata_eq
from torch.testing._internal.common_modules import ModuleErrorEnum
from torch.testing._internal.common_utils import TestCase, freeze_rng_state
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

GradientCheck = Callable[..., bool]  # gradcheck or gradgradcheck
CASTS = {torch.float32: torch.nn.Module.float, torch.float64: torch.nn.Module.double}  # test_forward's


def build(module_input, module_info, device, dtype, training: bool, **extra) -> torch.nn.Module:
    """The module of one constructor input, on `device` in `dtype`, in the training mode asked."""
    args, kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
    module = module_info.module_cls(*args, **kwargs, **extra)
    module.to(device).to(dtype)
    module.train(training)
    return module


def module_inputs(module_info, device, dtype, training: bool, requires_grad: bool = False) -> list:
    return list(module_info.module_inputs_func(module_info, device=device, dtype=dtype,
                                               requires_grad=requires_grad, training=training))


def forwards(module_info, device, dtype, training: bool, requires_grad: bool) -> list:
    """The module inputs that have a forward input."""
    return [one for one in module_inputs(module_info, device, dtype, training, requires_grad)
            if one.forward_input is not None]


def forward_runs(module_info, device, dtype, training: bool) -> Iterator[tuple]:
    """(module input, module, args, kwargs, output) for each module input with a forward input,
    built and run with the RNG state frozen; it stays frozen while the caller checks the module."""
    for module_input in forwards(module_info, device, dtype, training, requires_grad=False):
        with freeze_rng_state():
            module = build(module_input, module_info, device, dtype, training)
            args, kwargs = module_input.forward_input.args, module_input.forward_input.kwargs
            yield module_input, module, args, kwargs, module(*args, **kwargs)


def assert_placed(case: TestCase, module: torch.nn.Module, device, dtype) -> None:
    """Every parameter and buffer is on `device`; the floating-point ones are in `dtype`."""
    for kind, items in (("parameter", module.named_parameters()), ("buffer", module.named_buffers())):
        for name, item in items:
            case.assertEqual(item.device, torch.device(device), f"{kind} {name} is on {item.device}")
            if item.dtype.is_floating_point:
                case.assertEqual(item.dtype, dtype, f"{kind} {name} is {item.dtype}")


def _tensors(value) -> list[torch.Tensor]:
    return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def _strided(value):
    """A non-contiguous copy of every tensor of more than zero dimensions (same values)."""
    def one(t):
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            return t
        copy = torch.repeat_interleave(t, 2, dim=-1)[..., ::2].detach()
        copy.requires_grad = t.requires_grad
        return copy
    return tree_map(one, value)


def _grads(value):
    return tree_map(lambda t: t.grad if isinstance(t, torch.Tensor) and t.requires_grad else None, value)


def _clear_grads(tensors) -> None:
    for t in _tensors(tensors):
        t.grad = None


def _backward(output, grad_output) -> None:
    for out, grad in zip(tree_flatten(output)[0], tree_flatten(grad_output)[0]):
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.backward(grad, retain_graph=True)


def forward(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_forward: the reference function's output where the input has one; after the dtype's
    own method (`.float()`, `.double()`) the module still runs, its floating-point parameters and
    buffers in the dtype on the device."""
    for module_input, module, args, kwargs, outputs in forward_runs(module_info, device, dtype, training):
        if module_input.reference_fn is not None:
            case.assertEqual(outputs, module_input.reference_fn(module, *args, **kwargs))
        if dtype in CASTS:
            CASTS[dtype](module)
            module(*args, **kwargs)
            assert_placed(case, module, device, dtype)


def repr_(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_repr: `repr()` and `str()` of every constructed module work."""
    for module_input in module_inputs(module_info, device, dtype, training):
        module = build(module_input, module_info, device, dtype, training)
        repr(module)
        str(module)


def save_load(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_save_load (P1: test_pickle): a module saved with `torch.save` and loaded back gives the
    same output."""
    for _module_input, module, args, kwargs, output in forward_runs(module_info, device, dtype, training):
        buffer = io.BytesIO()
        torch.save(module, buffer)
        buffer.seek(0)
        copy = torch.load(buffer, weights_only=False)
        case.assertEqual(copy(*args, **kwargs), output)


def non_contiguous_tensors(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_non_contiguous_tensors: outputs, input gradients and parameter gradients are the same
    for contiguous and non-contiguous inputs and output gradients, in all four combinations."""
    for module_input in forwards(module_info, device, dtype, training, requires_grad=True):
        given = (module_input.forward_input.args, module_input.forward_input.kwargs)
        if not any(t.dim() > 0 for t in _tensors(given)):
            continue
        module = build(module_input, module_info, device, dtype, training)
        for t in _tensors(given):
            if t.requires_grad:
                t.retain_grad()
        with freeze_rng_state():
            expected = module(*given[0], **given[1])
            grad_output = tree_map(lambda t: t.clone().detach_().normal_()
                                   if isinstance(t, torch.Tensor) and t.requires_grad else None, expected)
            _backward(expected, grad_output)
        expected_input_grads = deepcopy(_grads(given))
        expected_param_grads = deepcopy([p.grad for p in module.parameters()])
        for (args, kwargs), grads in product((given, _strided(given)), (grad_output, _strided(grad_output))):
            _clear_grads((args, kwargs))
            _clear_grads(list(module.parameters()))
            with freeze_rng_state():
                output = module(*args, **kwargs)
                _backward(output, deepcopy(grads))
            case.assertEqual(output, expected)
            case.assertEqual(_grads((args, kwargs)), expected_input_grads, atol=1e-4, rtol=0)
            case.assertEqual([p.grad for p in module.parameters()], expected_param_grads)


def gradients(case: TestCase, device, dtype, module_info, training: bool, check: GradientCheck) -> None:
    """test_grad / test_gradgrad: `check` (gradcheck or gradgradcheck) of the output with respect
    to inputs, parameters and tensor keyword arguments together, then to each parameter and keyword
    tensor alone (the inputs keep their requires_grad)."""
    for module_input in forwards(module_info, device, dtype, training, requires_grad=True):
        module = build(module_input, module_info, device, dtype, training)
        args, kwargs = module_input.forward_input.args, module_input.forward_input.kwargs
        if module_info.is_lazy:
            with torch.no_grad():
                module(*args, **kwargs)  # lazy modules create their parameters on a first input
        _check_module_gradients(case, module, args, kwargs, check)


def _check_module_gradients(case: TestCase, module, args, kwargs, check: GradientCheck) -> None:
    params = tuple(module.parameters())
    tensor_kwargs = {name: v for name, v in kwargs.items() if isinstance(v, torch.Tensor)}
    other_kwargs = {name: v for name, v in kwargs.items() if name not in tensor_kwargs}
    flat, spec = tree_flatten((args, params, tuple(tensor_kwargs.values())))

    def run(*flat_values):
        new_args, _params, kwarg_values = tree_unflatten(list(flat_values), spec)
        with freeze_rng_state():
            output = module(*new_args, **dict(zip(tensor_kwargs, kwarg_values)), **other_kwargs)
        return tree_flatten(output)[0]

    case.assertTrue(check(run, flat, nondet_tol=0.0))
    alone = [*params, *tensor_kwargs.values()]
    before = [t.requires_grad for t in alone]
    for t in alone:
        t.requires_grad = False
    for t, was in zip(alone, before):
        t.requires_grad = was
        case.assertTrue(check(run, flat, nondet_tol=0.0))
        t.requires_grad = False


def takes_inplace(module_info) -> bool:
    """Whether the module's constructor has an `inplace` flag (test_check_inplace's entries)."""
    return "inplace" in signature(module_info.module_cls).parameters


def factory_kwargs(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_factory_kwargs: a module that creates parameters or buffers of its own (not tensors it
    was given) places them on `device=` in `dtype=` (floating point) when constructed with them;
    a lazy module's uninitialized ones carry both."""
    for module_input in module_inputs(module_info, device, dtype, training):
        args, kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
        given = {t.data_ptr() for t in _tensors((args, kwargs)) if t.numel()}
        plain = module_info.module_cls(*args, **kwargs)
        if not any(torch.nn.parameter.is_lazy(t) or not t.numel() or t.data_ptr() not in given
                   for t in chain(plain.parameters(), plain.buffers())):
            continue
        module = module_info.module_cls(*args, **{**kwargs, "device": device, "dtype": dtype})
        module.train(training)
        assert_placed(case, module, device, dtype)


def check_inplace(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_check_inplace: the out-of-place module leaves its first input alone, the in-place one
    writes it (its version moves); outputs and first-input gradients agree."""
    for module_input in forwards(module_info, device, dtype, training, requires_grad=True):
        out_of_place = build(module_input, module_info, device, dtype, training, inplace=False)
        in_place = build(module_input, module_info, device, dtype, training, inplace=True)
        args, kwargs = module_input.forward_input.args, module_input.forward_input.kwargs
        case.assertGreaterEqual(len(args), 1, "the in-place input must be positional")
        version = args[0]._version
        with freeze_rng_state():
            expected = out_of_place(*args, **kwargs)
        case.assertEqual(args[0]._version, version)
        leaves = deepcopy(args)
        clones = tuple(t.clone() for t in leaves)
        version = clones[0]._version
        with freeze_rng_state():
            actual = in_place(*clones, **kwargs)
        case.assertGreater(clones[0]._version, version)
        case.assertEqual(actual, expected)
        grad = expected.detach().clone().normal_()
        expected.backward(grad)
        actual.backward(grad)
        case.assertEqual(leaves[0].grad, args[0].grad)


def _memory_formats(args) -> tuple[list[torch.memory_format], list[torch.memory_format]]:
    """(input formats, module formats) to try: channels-last ones where an input has 4 (5) dims."""
    dims = {t.dim() for t in _tensors(args)}
    last = [torch.channels_last] if 4 in dims else [torch.channels_last_3d] if 5 in dims else []
    return [torch.contiguous_format, *last], [torch.preserve_format, torch.contiguous_format, *last]


def _in_format(value, memory_format: torch.memory_format):
    """Copies of the tensors in `memory_format` where their rank allows it, requires_grad kept."""
    rank = {torch.channels_last: 4, torch.channels_last_3d: 5}.get(memory_format)

    def one(t):
        if not isinstance(t, torch.Tensor):
            return t
        copy = t.clone() if rank not in (None, t.dim()) else t.clone().to(memory_format=memory_format)
        return copy.detach().requires_grad_(t.requires_grad)
    return tree_map(one, value)


def _assert_format(case: TestCase, tensors, input_format, module_format, module_affects: bool) -> None:
    """Outputs (or gradients) are channels-last where the input was, or where the module was and
    the ModuleInfo says that decides the output's format; contiguous otherwise."""
    for t in _tensors(tensors):
        wanted = torch.contiguous_format
        for rank, last in ((4, torch.channels_last), (5, torch.channels_last_3d)):
            if t.dim() == rank and (input_format == last or (module_format == last and module_affects)):
                wanted = last
        case.assertTrue(t.is_contiguous(memory_format=wanted), f"expected {wanted}")


def _differentiable(value) -> tuple[torch.Tensor, ...]:
    return tuple(t for t in _tensors(value) if t.requires_grad)


def memory_format(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_memory_format: for every input format and module format (channels-last where an input
    has 4 or 5 dims), outputs and, in training, gradients of inputs and parameters equal those of
    the contiguous run and are in the format the input (or module) asks for."""
    for module_input in forwards(module_info, device, dtype, training, requires_grad=True):
        given = (module_input.forward_input.args, module_input.forward_input.kwargs)
        input_formats, module_formats = _memory_formats(given[0])
        with freeze_rng_state():
            module = build(module_input, module_info, device, dtype, training)
            expected = module(*given[0], **given[1])
            outputs = _differentiable(expected)
            grad_outputs = tuple(torch.rand_like(t) for t in outputs)
            with_grad = training and bool(outputs)
            if with_grad:
                expected_grads = torch.autograd.grad(outputs, _differentiable((given, list(module.parameters()))),
                                                     grad_outputs)
            for input_format in input_formats:
                args, kwargs = _in_format(given, input_format)
                for module_format in module_formats:
                    module.to(memory_format=module_format)
                    output = module(*args, **kwargs)
                    changed = torch.contiguous_format != input_format or torch.contiguous_format != module_format
                    if changed:
                        case.assertEqual(output, expected)
                    _assert_format(case, output, input_format, module_format, module_info.module_memformat_affects_out)
                    if with_grad and _differentiable(output):
                        grads = torch.autograd.grad(
                            _differentiable(output), _differentiable(((args, kwargs), list(module.parameters()))),
                            tuple(torch.empty_like(t).copy_(g) for t, g in zip(_differentiable(output), grad_outputs)))
                        if changed:
                            case.assertEqual(grads, expected_grads)
                        _assert_format(case, grads, input_format, module_format,
                                       module_info.module_memformat_affects_out)


def train_and_eval_differ(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_if_train_and_eval_modes_differ: a module whose forward reads `training` must say so in
    its ModuleInfo (`train_and_eval_differ`); found by running it without the attribute."""
    for module_input in forwards(module_info, device, dtype, training, requires_grad=False):
        module = build(module_input, module_info, device, dtype, training)
        del module.training
        try:
            module(*module_input.forward_input.args, **module_input.forward_input.kwargs)
        except AttributeError as error:
            if "'training'" not in str(error):
                raise
            case.assertTrue(module_info.train_and_eval_differ,
                            f"{module_info.name} reads `training` in forward but its ModuleInfo says "
                            "train_and_eval_differ=False")


def device_ctx_init(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_device_ctx_init: built under `torch.device('meta')`, the module's parameters and buffers
    are meta tensors with the metadata (shape, strides, dtype, ...) of the CPU-built module's."""
    on_cpu = module_inputs(module_info, device, dtype, training)
    with torch.device("meta"):
        on_meta = module_inputs(module_info, None, dtype, training)
    for cpu_input, meta_input in zip(on_cpu, on_meta):
        cpu_module = module_info.module_cls(*cpu_input.constructor_input.args, **cpu_input.constructor_input.kwargs)
        with torch.device("meta"):
            meta_module = module_info.module_cls(*meta_input.constructor_input.args,
                                                 **meta_input.constructor_input.kwargs)
        for meta, cpu in chain(zip(meta_module.parameters(), cpu_module.parameters()),
                               zip(meta_module.buffers(), cpu_module.buffers())):
            if torch.nn.parameter.is_lazy(meta):
                continue
            case.assertTrue(meta.is_meta)
            assert_metadata_eq(case.assertEqual, meta, cpu)


def errors(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_errors: every error input raises as declared, at construction or in forward."""
    for error_input in module_info.module_error_inputs_func(module_info, device=device, dtype=dtype,
                                                            requires_grad=False, training=training):
        given = error_input.module_error_input
        args, kwargs = given.constructor_input.args, given.constructor_input.kwargs
        if error_input.error_on == ModuleErrorEnum.CONSTRUCTION_ERROR:
            with case.assertRaisesRegex(error_input.error_type, error_input.error_regex):
                module_info.module_cls(*args, **kwargs)
        else:
            module = module_info.module_cls(*args, **kwargs)
            with case.assertRaisesRegex(error_input.error_type, error_input.error_regex):
                module(*given.forward_input.args, **given.forward_input.kwargs)


def _place_by_hand(module: torch.nn.Module, device, dtype, set_grad: bool) -> None:
    """Moves parameters and buffers to `device`/`dtype` without `Module.to` (the method under
    test): fresh Parameters, each with a random gradient when `set_grad`."""
    for child in module.modules():
        for name, param in list(child.named_parameters(recurse=False)):
            fresh = torch.nn.Parameter(param.detach().clone().to(device, dtype))
            setattr(child, name, fresh)
            if set_grad:
                fresh.grad = torch.randn_like(fresh)
        for name, buffer in list(child.named_buffers(recurse=False)):
            setattr(child, name, buffer.detach().clone().to(device, dtype))


def _cdatas(tensors) -> list[int]:
    return [t._cdata for t in tensors]


def to(case: TestCase, device, dtype, module_info, training: bool, set_grad: bool) -> None:
    """test_to: `Module.to(device, dtype)` over the ModuleInfo's dtypes keeps each parameter a
    Parameter on the device in the dtype (its gradient too); with swapping on
    (`torch.__future__.set_swap_module_params_on_conversion`) the Python objects stay and their
    tensors are swapped (a gradient only when it changed), without it the tensors stay too.
    With swapping, `.to()` also works after a forward and backward pass."""
    swap = torch.__future__.get_swap_module_params_on_conversion()
    for module_input in forwards(module_info, device, dtype, training, requires_grad=False):
        module = module_info.module_cls(*module_input.constructor_input.args, **module_input.constructor_input.kwargs)
        _place_by_hand(module, device, dtype, set_grad)
        params = list(module.parameters())
        if swap and not set_grad and params:
            output = module(*module_input.forward_input.args, **module_input.forward_input.kwargs)
            (output[0] if isinstance(output, tuple) else output).sum().backward()
            module.to(dtype=torch.half)
            module.to(dtype=torch.float32)
        previous = (torch.device(device), dtype)
        for new_dtype in module_info.dtypes:
            unchanged = previous == (torch.device(device), new_dtype)
            previous = (torch.device(device), new_dtype)
            ids, cdatas = [id(p) for p in params], _cdatas(params)
            grad_ids, grad_cdatas = ([id(p.grad) for p in params], _cdatas(p.grad for p in params)) if set_grad \
                else ([], [])
            module.to(device=device, dtype=new_dtype)
            params = list(module.parameters())
            case.assertTrue(all(isinstance(p, torch.nn.Parameter) and p.device == torch.device(device)
                                and p.dtype == new_dtype for p in params))
            case.assertEqual([id(p) for p in params], ids)
            if set_grad:
                case.assertTrue(all(p.grad.device == torch.device(device) and p.grad.dtype == new_dtype
                                    for p in params))
            if swap:
                case.assertTrue(all(a != b for a, b in zip(cdatas, _cdatas(params))))
                if set_grad:
                    case.assertTrue(all((a == b) == unchanged for a, b in zip(grad_cdatas, _cdatas(p.grad for p in params))))
            else:
                case.assertEqual(_cdatas(params), cdatas)
                if set_grad:
                    case.assertEqual(_cdatas(p.grad for p in params), grad_cdatas)
                    case.assertEqual([id(p.grad) for p in params], grad_ids)


def to_empty(case: TestCase, device, dtype, module_info, training: bool) -> None:
    """test_to_empty: a module built on the meta device and moved with `to_empty(device=...)` has
    Parameters on the device in `dtype`; with swapping on the Python objects stay, their tensors
    are swapped."""
    swap = torch.__future__.get_swap_module_params_on_conversion()
    with torch.device("meta"):
        inputs = module_inputs(module_info, None, dtype, training)
    for module_input in inputs:
        with torch.device("meta"):
            module = module_info.module_cls(*module_input.constructor_input.args,
                                            **module_input.constructor_input.kwargs)
        params = list(module.parameters())
        ids, cdatas = [id(p) for p in params], _cdatas(params)
        module.to_empty(device=device)
        params = list(module.parameters())
        case.assertTrue(all(isinstance(p, torch.nn.Parameter) and p.device == torch.device(device)
                            and p.dtype == dtype for p in params))
        if swap:
            case.assertEqual([id(p) for p in params], ids)
            case.assertTrue(all(a != b for a, b in zip(cdatas, _cdatas(params))))

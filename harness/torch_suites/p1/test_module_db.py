"""PyTorch's generic module checks on `module_db` (CPU): forward, pickling, non-contiguous inputs
and gradients of every ModuleInfo's module inputs.

The checks are the ones PyTorch's `test/test_modules.py` makes under the same names, written here
in our own code against the ModuleInfo API, so the class is `TestModule` and each ModuleInfo's
skips, expected failures and tolerance overrides for these names apply:

- test_forward (float32): the module built from each constructor input, moved to the dtype, gives
  its reference function's output where the input has one; after `.float()` its floating-point
  parameters and buffers are float32 on the device. PyTorch also runs float64.
- test_repr (float32): `repr()` and `str()` of every constructed module work.
- test_pickle (float32): a module saved with `torch.save` and loaded back gives the same output.
- test_non_contiguous_tensors (float32): outputs, input gradients and parameter gradients are the
  same for contiguous and non-contiguous inputs and output gradients, in all four combinations.
- test_grad (float64): `gradcheck` of the output with respect to inputs, parameters and tensor
  keyword arguments together, then with respect to each parameter and keyword tensor alone.
Modules whose train and eval modes differ run both (`_train_mode` / `_eval_mode`), as in PyTorch.
"""

import io
from copy import deepcopy
from itertools import product

import torch
from torch.testing._internal.common_modules import module_db, modules
from torch.testing._internal.common_utils import TestCase, freeze_rng_state, gradcheck, run_tests
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from harness.torch_suites.entries import Entries, instantiate_cpu_tests

ENTRIES = Entries(tuple(module_db), full_name=lambda info: info.name)
MODULES = ENTRIES.chosen()


def _build(module_input, module_info, device, dtype, training, **extra):
    args, kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
    module = module_info.module_cls(*args, **kwargs, **extra)
    module.to(device).to(dtype)
    module.train(training)
    return module


def _forwards(module_info, device, dtype, training, requires_grad):
    """The module inputs that have a forward input."""
    inputs = module_info.module_inputs_func(module_info, device=device, dtype=dtype,
                                            requires_grad=requires_grad, training=training)
    return [one for one in inputs if one.forward_input is not None]


def _forward_runs(module_info, device, dtype, training):
    """(module input, module, args, kwargs, output) for each module input with a forward input,
    built and run with the RNG state frozen; it stays frozen while the caller checks the module."""
    for module_input in _forwards(module_info, device, dtype, training, requires_grad=False):
        with freeze_rng_state():
            module = _build(module_input, module_info, device, dtype, training)
            args, kwargs = module_input.forward_input.args, module_input.forward_input.kwargs
            yield module_input, module, args, kwargs, module(*args, **kwargs)


def _strided(value):
    """A non-contiguous copy of every tensor of more than zero dimensions (same values)."""
    def one(t):
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            return t
        copy = torch.repeat_interleave(t, 2, dim=-1)[..., ::2].detach()
        copy.requires_grad = t.requires_grad
        return copy
    return tree_map(one, value)


def _has_strideable(value) -> bool:
    return any(isinstance(t, torch.Tensor) and t.dim() > 0 for t in tree_flatten(value)[0])


def _grads(value):
    return tree_map(lambda t: t.grad if isinstance(t, torch.Tensor) and t.requires_grad else None, value)


def _clear_grads(tensors) -> None:
    for t in tree_flatten(tensors)[0]:
        if isinstance(t, torch.Tensor):
            t.grad = None


def _backward(output, grad_output) -> None:
    for out, grad in zip(tree_flatten(output)[0], tree_flatten(grad_output)[0]):
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.backward(grad, retain_graph=True)


class TestModule(TestCase):
    precision = 1e-5
    rel_tol = 1e-5

    def _assert_placed(self, module, device, dtype) -> None:
        for kind, items in (("parameter", module.named_parameters()), ("buffer", module.named_buffers())):
            for name, item in items:
                self.assertEqual(item.device, torch.device(device), f"{kind} {name} is on {item.device}")
                if item.dtype.is_floating_point:
                    self.assertEqual(item.dtype, dtype, f"{kind} {name} is {item.dtype}")

    @modules(MODULES, allowed_dtypes=(torch.float32,))
    def test_forward(self, device, dtype, module_info, training):
        for module_input, module, args, kwargs, outputs in _forward_runs(module_info, device, dtype, training):
            if module_input.reference_fn is not None:
                self.assertEqual(outputs, module_input.reference_fn(module, *args, **kwargs))
            module.float()
            module(*args, **kwargs)
            self._assert_placed(module, device, dtype)

    @modules(MODULES, allowed_dtypes=(torch.float32,))
    def test_repr(self, device, dtype, module_info, training):
        inputs = module_info.module_inputs_func(module_info, device=device, dtype=dtype,
                                                requires_grad=False, training=training)
        for module_input in inputs:
            module = _build(module_input, module_info, device, dtype, training)
            repr(module)
            str(module)

    @modules(MODULES, allowed_dtypes=(torch.float32,))
    def test_pickle(self, device, dtype, module_info, training):
        for _module_input, module, args, kwargs, output in _forward_runs(module_info, device, dtype, training):
            buffer = io.BytesIO()
            torch.save(module, buffer)
            buffer.seek(0)
            copy = torch.load(buffer, weights_only=False)
            self.assertEqual(copy(*args, **kwargs), output)

    @modules(MODULES, allowed_dtypes=(torch.float32,))
    def test_non_contiguous_tensors(self, device, dtype, module_info, training):
        for module_input in _forwards(module_info, device, dtype, training, requires_grad=True):
            given = (module_input.forward_input.args, module_input.forward_input.kwargs)
            if not _has_strideable(given):
                continue
            module = _build(module_input, module_info, device, dtype, training)
            for t in tree_flatten(given)[0]:
                if isinstance(t, torch.Tensor) and t.requires_grad:
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
                self.assertEqual(output, expected)
                self.assertEqual(_grads((args, kwargs)), expected_input_grads, atol=1e-4, rtol=0)
                self.assertEqual([p.grad for p in module.parameters()], expected_param_grads)

    @modules(MODULES, allowed_dtypes=(torch.float64,))
    def test_grad(self, device, dtype, module_info, training):
        for module_input in _forwards(module_info, device, dtype, training, requires_grad=True):
            module = _build(module_input, module_info, device, dtype, training)
            args, kwargs = module_input.forward_input.args, module_input.forward_input.kwargs
            if issubclass(module_info.module_cls, torch.nn.modules.lazy.LazyModuleMixin):
                with torch.no_grad():
                    module(*args, **kwargs)  # lazy modules create their parameters on a first input
            self._gradcheck_module(module, args, kwargs)

    def _gradcheck_module(self, module, args, kwargs) -> None:
        params = tuple(module.parameters())
        tensor_kwargs = {name: v for name, v in kwargs.items() if isinstance(v, torch.Tensor)}
        other_kwargs = {name: v for name, v in kwargs.items() if name not in tensor_kwargs}
        everything = (args, params, tuple(tensor_kwargs.values()))
        flat, spec = tree_flatten(everything)

        def run(*flat_values):
            new_args, _params, kwarg_values = tree_unflatten(list(flat_values), spec)
            with freeze_rng_state():
                output = module(*new_args, **dict(zip(tensor_kwargs, kwarg_values)), **other_kwargs)
            return tree_flatten(output)[0]

        self.assertTrue(gradcheck(run, flat, nondet_tol=0.0))
        # then each parameter and each keyword tensor alone (the inputs keep their requires_grad)
        alone = [*params, *tensor_kwargs.values()]
        before = [t.requires_grad for t in alone]
        for t in alone:
            t.requires_grad = False
        for t, was in zip(alone, before):
            t.requires_grad = was
            self.assertTrue(gradcheck(run, flat, nondet_tol=0.0))
            t.requires_grad = False


instantiate_cpu_tests(TestModule, globals(), MODULES)

if __name__ == "__main__":
    run_tests()

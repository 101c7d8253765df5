"""PyTorch's `common_nn` module and criterion tests, registered on a `TestNN` class as PyTorch's
`test/test_nn.py` registers them (CPU only).

Each entry of `module_tests + get_new_module_tests()` becomes a `NewModuleTest` and each entry of
`criterion_tests` a `CriterionTest`; calling one with the test case runs PyTorch's own check from
`common_nn` (forward against the reference function, non-contiguous inputs, pickling, Jacobians
against finite differences, gradgradcheck where enabled). The test names are `get_name()`, plus
the `_eval` variant of modules with `check_eval` and the `_sum_reduction` variant of criteria with
`check_sum_reduction`, exactly as test_nn.py names them, and each entry's `decorator` is applied
as there. The `_cuda` twins are not registered (CPU only).
"""

from copy import deepcopy

import torch
from torch import nn
from torch.testing._internal.common_nn import (
    CriterionTest,
    NNTestCase,
    NewModuleTest,
    criterion_tests,
    get_new_module_tests,
    module_tests,
)
from torch.testing._internal.common_utils import freeze_rng_state, run_tests

from harness.torch_suites.shared.entries import Entries


def _with_constructor(params: dict) -> dict:
    params = deepcopy(params)
    if "constructor" not in params:
        params["constructor"] = getattr(nn, params.pop("module_name"))
    return params


def _variant(params: dict, suffix: str, adapt) -> dict:
    """The same test with `suffix` appended to its name and its module adapted after construction."""
    made = params["constructor"]

    def constructor(*args, **kwargs):
        return adapt(made, *args, **kwargs)
    constructor.__name__ = made.__name__
    desc = params.get("desc")
    return {**params, "desc": suffix if not desc else f"{desc}_{suffix}", "constructor": constructor}


def _in_eval(made, *args, **kwargs):
    module = made(*args, **kwargs)
    module.training = False
    return module


def _summing(made, *args, **kwargs):
    return made(*args, reduction="sum", **kwargs)


def _cases() -> list[tuple[object, object]]:
    """(test, decorator) for every CPU test test_nn.py registers from common_nn, in its order."""
    cases = []
    for params in module_tests + get_new_module_tests():
        params = _with_constructor(params)
        decorator = params.pop("decorator", None)
        cases.append((NewModuleTest(**params), decorator))
        if "check_eval" in params:
            cases.append((NewModuleTest(**_variant(params, "eval", _in_eval)), decorator))
    for params in criterion_tests:
        params = _with_constructor(params)
        decorator = params.pop("decorator", None)
        cases.append((CriterionTest(**params), decorator))
        if "check_sum_reduction" in params:
            cases.append((CriterionTest(**_variant(params, "sum_reduction", _summing)), decorator))
    return [(test, decorator) for test, decorator in cases if getattr(test, "test_cpu", True)]


def _family(case) -> str:
    """`nn.<Module>` for tests of a torch.nn class, so one name selects them beside module_db's."""
    name = case[0].constructor.__name__
    return f"nn.{name}" if hasattr(nn, name) else case[0].get_name().removeprefix("test_")


ENTRIES = Entries(tuple(_cases()), full_name=lambda case: case[0].get_name().removeprefix("test_"), family=_family)


class TestNN(NNTestCase):
    """The hooks `common_nn`'s tests call on their test case (NNTestCase leaves them abstract)."""

    _do_cuda_memory_leak_check = True
    _do_cuda_non_default_stream = True

    def _forward(self, module, input):
        with freeze_rng_state():
            return module(*input) if isinstance(input, tuple) else module(input)

    def _backward(self, module, input, output, grad_output, create_graph=False):
        output.backward(grad_output, retain_graph=True, create_graph=create_graph)
        grad = lambda t: t.grad.data if t.grad is not None else None  # noqa: E731
        return tuple(grad(t) for t in input) if isinstance(input, tuple) else grad(input)

    def _forward_criterion(self, criterion, input, target, extra_args=None):
        inputs = input if isinstance(input, tuple) else (input,)
        return criterion(*inputs, target, *(extra_args or ()))

    def _get_parameters(self, module):
        params = list(module.parameters())
        return params, [p.grad for p in params]

    def _zero_grad_parameters(self, module) -> None:
        for p in module.parameters():
            if p.grad is not None:
                with torch.no_grad():
                    p.grad.zero_()
                p.grad.detach_()


def _register(test, decorator) -> None:
    name = test.get_name()
    if hasattr(TestNN, name):
        raise RuntimeError(f"two common_nn tests are named {name}")

    def run(self, test=test):
        test(self)
    run.__name__ = name
    setattr(TestNN, name, decorator(run) if decorator is not None else run)


for _test, _decorator in ENTRIES.chosen():
    _register(_test, _decorator)

if __name__ == "__main__":
    run_tests()

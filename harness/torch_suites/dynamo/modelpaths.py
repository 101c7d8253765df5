"""torch's own Python APIs as a model's code calls them inside a compiled region: grad modes and
autocast, control flow and torch.func's transforms as higher-order ops, activation checkpointing,
custom autograd Functions, tensor subclasses, module hooks, lazy modules and parametrizations,
distributions, NumPy through torch._numpy, attention, and torch.compiler's own switches; for P3's
`python` stage beside the language cases of pythonpaths.py (p3/test_compile_python.py).

Each of these sends dynamo down a rule of its own (a context-manager tracker, a higher-order op's
speculation of subgraphs, a subclass's `__torch_function__`, a hook's side effects, a NumPy call
rewritten to torch), the code that stays cold while the databases hand dynamo one operator,
module or optimizer at a time. The cases take and return tensors, as in pythonpaths.py.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from typing import Any

import numpy
import torch
import torch.nn.functional as F
from torch.nn.utils import parametrize
from torch.utils import _pytree as pytree

from harness.torch_suites.dynamo.pythonpaths import Case

LOGGER = logging.getLogger(__name__)  # below its level: the traced code's log calls emit nothing


def _seeded(build: Any) -> Any:
    """A module built from a fixed RNG state, the same weights in every process."""
    with torch.random.fork_rng():
        torch.manual_seed(2)
        return build()


class Clip(torch.autograd.Function):
    """A custom Function: clamps forward, passes the gradient straight through, saves a tensor."""

    @staticmethod
    def forward(x: torch.Tensor, bound: float) -> torch.Tensor:
        return x.clamp(-bound, bound)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        ctx.save_for_backward(inputs[0])
        ctx.bound = inputs[1]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= ctx.bound * 2), None


class Traced(torch.Tensor):
    """A tensor subclass whose `__torch_function__` dynamo traces (it only defers to torch)."""

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        return super().__torch_function__(func, types, args, kwargs or {})


class Symmetric(torch.nn.Module):
    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight.triu() + weight.triu(1).transpose(0, 1)


class Hooked(torch.nn.Module):
    """A module with forward pre- and post-hooks, a counter it mutates and a ParameterList."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)
        self.extras = torch.nn.ParameterList([torch.nn.Parameter(torch.full((3,), 0.1 * i)) for i in range(2)])
        self.calls = 0
        self.register_forward_pre_hook(lambda module, args: (args[0] * 2,))
        self.register_forward_hook(lambda module, args, output: output + 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.linear(x) + sum(self.extras)


HOOKED = _seeded(Hooked)
LAZY = _seeded(lambda: torch.nn.Sequential(torch.nn.LazyLinear(2), torch.nn.ReLU()))
SYMMETRIC = _seeded(lambda: torch.nn.Linear(3, 3))
parametrize.register_parametrization(SYMMETRIC, "weight", Symmetric())
WEIGHT_NORMED = _seeded(lambda: torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 2)))
TREE = _seeded(lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Linear(4, 3))))



@torch.library.custom_op("harness::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    """A custom operator with a fake kernel and an autograd formula of its own (torch.library)."""
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.empty_like(x)


def _scaled_tanh_setup(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.save_for_backward(output)
    ctx.scale = inputs[1]


def _scaled_tanh_backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
    (output,) = ctx.saved_tensors
    return grad * (ctx.scale - output * output / ctx.scale), None


scaled_tanh.register_autograd(_scaled_tanh_backward, setup_context=_scaled_tanh_setup)

def _grad_modes(x):
    with torch.set_grad_enabled(False):
        frozen = x * 2
    inner = torch.no_grad()(lambda t: t * 3)(x)
    with torch.enable_grad():
        live = x.sin()
    return live + frozen + inner + torch.is_grad_enabled()


def _autocast(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        product = x @ x.transpose(0, 1)
        flag = torch.is_autocast_enabled("cpu")
    return product.float().sum(1, keepdim=True) * x + flag


def _cond(x):
    def positive(t: torch.Tensor) -> torch.Tensor:
        return t.sin() * 2

    def negative(t: torch.Tensor) -> torch.Tensor:
        return t.cos() - 1

    return torch.cond(x.sum() > 0, positive, negative, (x,)) + torch.cond(x.sum() < -100, positive, negative, (x,))


def _func_transforms(x):
    rows = torch.vmap(lambda row: row * row.sum())(x)
    nested = torch.vmap(torch.vmap(lambda v: v.sin()))(x)
    gradient = torch.func.grad(lambda t: (t.sin() * t).sum())(x)
    jacobian = torch.func.jacrev(lambda t: t.tanh())(x[0])
    _, tangent = torch.func.jvp(lambda t: t.exp(), (x[0],), (torch.ones_like(x[0]),))
    return rows + nested + gradient + jacobian.sum(0) + tangent


def _functional_call(x):
    weights = {name: value * 0.5 for name, value in TREE.named_parameters()}
    return torch.func.functional_call(TREE, weights, (x,)) + TREE(x)


def _checkpoint(x):
    def block(t: torch.Tensor) -> torch.Tensor:
        return (t.sin() @ t.transpose(0, 1)).relu() @ t

    return torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) + x


def _nested_region(x):
    @torch.compiler.nested_compile_region
    def layer(t: torch.Tensor) -> torch.Tensor:
        return (t * 2).sigmoid() + t

    return layer(layer(x)) + layer(x * 3)


def _autograd_function(x):
    return Clip.apply(x * 3, 1.0) + Clip.apply(x, 0.5).sum()


def _tensor_subclass(x):
    traced = x.as_subclass(Traced)
    result = (traced * 2 + traced.sin()).sum(0)
    return result.as_subclass(torch.Tensor) + isinstance(traced, Traced)


def _module_hooks(x):
    return HOOKED(x) + HOOKED(x * 0.5)


def _module_traversal(x):
    names = [name for name, _ in TREE.named_modules()]
    linear = [m for m in TREE.modules() if isinstance(m, torch.nn.Linear)]
    count = sum(p.numel() for p in TREE.parameters()) + len(list(TREE.children())) + len(names)
    return TREE(x) + linear[-1](x.tanh() @ linear[0].weight.transpose(0, 1)) * 0 + count + TREE[1][1].in_features


def _lazy_module(x):
    return LAZY(x) + LAZY[0].out_features


def _parametrizations(x):
    return SYMMETRIC(x) + WEIGHT_NORMED(x).sum(1, keepdim=True) + parametrize.is_parametrized(SYMMETRIC)


def _distributions(x):
    normal = torch.distributions.Normal(x.mean(0), x.std(0) + 1, validate_args=False)
    other = torch.distributions.Normal(torch.zeros(3), torch.ones(3), validate_args=False)
    categorical = torch.distributions.Categorical(logits=x, validate_args=False)
    return (normal.log_prob(x) + normal.entropy() + torch.distributions.kl_divergence(normal, other)
            + categorical.entropy().unsqueeze(1) + categorical.log_prob(torch.tensor([0, 1, 2, 0])).unsqueeze(1))


def _numpy(x):
    array = x.detach().numpy()
    mixed = numpy.sin(array) * 2 + numpy.clip(array, -0.5, 0.5) + array.mean(axis=0, keepdims=True)
    return x * torch.from_numpy(numpy.ascontiguousarray(mixed)) + float(numpy.linalg.norm(array))


def _attention(x):
    query = x.reshape(1, 1, 4, 3)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        causal = F.scaled_dot_product_attention(query, query.sin(), query.cos(), is_causal=True)
    scaled = F.scaled_dot_product_attention(query, query, query, scale=0.5)
    return (causal + scaled).reshape(4, 3)


def _compiler_switches(x):
    @torch.compiler.disable
    def eager_only(t: torch.Tensor) -> torch.Tensor:
        return t + 1

    y = x * 2 if torch.compiler.is_compiling() else x * 2
    LOGGER.debug("traced with %s", y.shape)
    y = eager_only(y)
    torch._dynamo.graph_break()
    return y.cos() * (2 if torch.compiler.is_dynamo_compiling() else 2)


def _data_dependent(x):
    total = x.sum().item()
    y = x * 2 if total > 0 else x * 3
    rows = (y * 2).tolist()
    return y + len(rows) + (x[x > 0].numel() if x.max() > 10 else 0)


def _tensor_attributes(x):
    facts = (x.ndim, x.is_floating_point(), x.is_contiguous(), x.stride()[0], x.element_size(), x.dtype.is_floating_point,
             x.device.type == "cpu", x.layout == torch.strided, torch.is_tensor(x), torch.numel(x),
             torch.result_type(x, 2) == torch.float32, torch.promote_types(torch.int32, torch.float16) == torch.float16,
             torch.can_cast(torch.float32, torch.int32), torch.broadcast_shapes((4, 1), (1, 3))[1],
             torch.get_default_dtype() == torch.float32, len(x), x.T.shape[0], x.mT.shape[1], x.is_leaf or True)
    # int(): with dynamic shapes, sum() of a SymInt and then two bools fails inside dynamo (docs)
    return x.new_ones(x.shape) * sum(map(int, facts)) + x.new_full((3,), 2.0) + x.type(torch.float64).float()


def _tensor_mutation(x):
    y = x.clone()
    y.mul_(2).clamp_(min=-1.0)
    y.index_add_(0, torch.tensor([0, 2]), x[:2])
    torch.Tensor.add_(y, 1)
    z = y.unsqueeze(0)
    z.squeeze_(0)  # last: AOTAutograd mis-grades a view's metadata change followed by its base's (docs)
    w = y.t().contiguous()
    w.t_()
    return y + z + w


def _forward_ad(x):
    import torch.autograd.forward_ad as fwad

    with fwad.dual_level():
        dual = fwad.make_dual(x.detach(), torch.ones_like(x))
        primal, tangent = fwad.unpack_dual((dual.sin() * dual))
    return x * primal + tangent



def _kept(t: torch.Tensor) -> torch.Tensor:
    return t


def _more_context_managers(x):
    y = x * 2
    with torch.autograd.graph.saved_tensors_hooks(_kept, _kept):
        y = y.sin() * x
    with warnings.catch_warnings():  # a call inside (warnings.simplefilter) would make dynamo skip the frame
        y = y + 1
    with contextlib.nullcontext(), torch.autograd.profiler.record_function("region"):
        y = y * 2
    with torch._C.DisableTorchFunctionSubclass():
        y = y - x
    return y


def _custom_op(x):
    return scaled_tanh(x, 2.0) + torch.ops.harness.scaled_tanh(x * 0.5, 1.5)


def _tensor_methods(x):
    first, rest = x.split([1, 3])
    left, right = x.chunk(2, dim=1) if x.shape[1] % 2 == 0 else (x[:, :2], x[:, 2:])
    windows = x.unfold(0, 2, 1)
    strided = x.as_strided((2, 2), (3, 1), 1)
    facts = (x.size(1), x.numel(), x.dim(), x.is_contiguous(memory_format=torch.contiguous_format), x.stride(1),
             x.storage_offset(), x.itemsize, x.is_sparse, x.is_nested, x.is_quantized, x.is_complex(),
             x.type() == "torch.FloatTensor", x.grad is None, sum(1 for _ in x))
    return (rest.sum(0) + first + left.sum() + right.sum() + windows.sum() + strided.sum() + x.new_tensor([1.0, 2.0, 3.0])
            + x.data.abs().sum() * 0 + sum(map(int, facts)) + x.view(torch.int32).bitwise_and(1).sum())


def _torch_functions(x):
    sizes = torch.tensor([x.shape[0], 2.0])
    checked = torch.as_tensor([1.0, 2.0, 3.0])
    torch._check(x.shape[0] > 0)
    facts = (torch.sym_max(x.shape[0], 2), torch.sym_min(x.shape[1], 9), torch.sym_int(2.5), torch.sym_float(x.shape[0]),
             torch.is_complex(x), torch.is_inference_mode_enabled(), torch.are_deterministic_algorithms_enabled(),
             torch.cuda.is_available(), torch.Size([2, 3]).numel(), torch.overrides.has_torch_function((x,)))
    tree = pytree.tree_map(lambda t: t * 2, {"a": x, "b": [x, (x,)]})
    leaves, spec = pytree.tree_flatten(tree)
    rebuilt = pytree.tree_unflatten([leaf + 1 for leaf in leaves], spec)
    return (torch.ops.aten.add.Tensor(x, x) + torch.ops.aten.mul(x, 2) + sizes.sum() + checked + sum(map(float, facts))
            + rebuilt["a"] + rebuilt["b"][1][0])


def _tensor_hooks(x):
    y = x * 2
    if y.requires_grad:  # the `aot_eager` checks' inputs require gradients, the `eager` check's do not
        y.register_hook(lambda grad: grad * 3)
    z = y.sin()
    return z + y


def _module_containers(x):
    heads = torch.nn.ModuleDict({"a": torch.nn.Tanh(), "b": torch.nn.ReLU()})
    stack = torch.nn.ModuleList([torch.nn.Sigmoid(), torch.nn.Softsign(), torch.nn.Identity()])
    y = x
    for name, head in heads.items():
        y = head(y) + len(name)
    for layer in reversed(stack[:2]):
        y = layer(y)
    linear = TREE.get_submodule("1.1")
    direct = sum(p.sum() for p in TREE.parameters(recurse=False)) + len(list(TREE.named_children()))
    return (y + TREE[:1](x).sum() + linear(x.tanh() @ linear.weight.new_ones(3, 4)) + direct + ("a" in heads)
            + len(stack) + TREE.get_parameter("0.bias").sum())


def _seeded_randomness(x):
    torch.manual_seed(3)
    return x + torch.rand(4, 3) + torch.randn(3)


CASES = tuple(Case(function.__name__.removeprefix("_"), function, ((4, 3),) * function.__code__.co_argcount)
              for function in (
    _grad_modes, _autocast, _cond, _func_transforms, _functional_call, _checkpoint, _nested_region,
    _autograd_function, _tensor_subclass, _module_hooks, _module_traversal, _lazy_module, _parametrizations,
    _distributions, _numpy, _attention, _compiler_switches, _data_dependent, _tensor_attributes, _tensor_mutation,
    _forward_ad, _more_context_managers, _custom_op, _tensor_methods, _torch_functions, _tensor_hooks,
    _module_containers, _seeded_randomness,
))

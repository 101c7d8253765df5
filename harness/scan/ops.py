"""What the scanner knows about particular aten ops: which outputs are not comparable, and how to call
private ops that the op registry cannot name.

Everything here is a table, so adding an op is one line with its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

# Outputs that hold uninitialized memory: two identical calls may return different values.
UNINITIALIZED = frozenset({
    "empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted", "resize_",
    "resize_as_",
})  # fmt: skip
# Outputs drawn from the global random generator: two identical calls return different values.
RANDOM = frozenset({
    "bernoulli", "bernoulli_", "dropout", "dropout_", "feature_dropout", "alpha_dropout", "feature_alpha_dropout",
    "native_dropout", "normal", "normal_", "uniform_", "rand", "rand_like", "randn", "randn_like", "randint",
    "randint_like", "randperm", "multinomial", "exponential_", "geometric_", "cauchy_", "log_normal_", "random_",
    "poisson", "binomial", "rrelu", "rrelu_", "rrelu_with_noise", "rrelu_with_noise_",
})  # fmt: skip


def metadata_only_reason(name: str, params: Mapping[str, object]) -> str | None:
    """Why only shape/dtype/strides of this call's outputs can be compared, or None if values can."""
    if name in UNINITIALIZED:
        return f"{name} returns uninitialized memory"
    if name in RANDOM:
        return f"{name} draws random values"
    dropout = params.get("dropout_p")  # attention kernels (SDPA and its private variants)
    if isinstance(dropout, float) and dropout > 0:
        return f"{name} with dropout_p={dropout} draws random values"
    return None


# A private op's public entry point: the op the model's code reached it through, with the same kernel.
# Bound arguments (schema name -> value) in; (positional names, keyword names, extra keywords) out.
@dataclass(frozen=True)
class PublicEntry:
    op: str  # the manifest's op name
    positional: tuple[str, ...]  # private-op argument names passed positionally, in this order
    keyword: tuple[str, ...] = ()  # private-op argument names passed by keyword (same name)
    extra: tuple[tuple[str, object], ...] = ()  # constant keyword arguments the public op needs
    when: Callable[[Mapping[str, object]], str | None] = lambda params: None  # why it does not apply, or None


def _not_half_to_float(params: Mapping[str, object]) -> str | None:
    return "half_to_float=True has no public spelling" if params.get("half_to_float") else None


# The registry refuses names starting with "_" (private), so these ops are emitted as the public op
# that calls them. The description of each such case says which private op was recorded.
PUBLIC_ENTRIES: Mapping[str, PublicEntry] = {
    "_to_copy.default": PublicEntry(
        "torch.ops.aten.to.dtype_layout", ("self",),
        ("dtype", "layout", "device", "pin_memory", "non_blocking", "memory_format"), (("copy", True),)),
    "_unsafe_view.default": PublicEntry("torch.ops.aten.view.default", ("self", "size")),
    "_softmax.default": PublicEntry("torch.ops.aten.softmax.int", ("self", "dim"), when=_not_half_to_float),
    "_log_softmax.default": PublicEntry("torch.ops.aten.log_softmax.int", ("self", "dim"), when=_not_half_to_float),
    "_local_scalar_dense.default": PublicEntry("torch.ops.aten.item.default", ("self",)),
    "_scaled_dot_product_flash_attention_for_cpu.default": PublicEntry(
        "torch.ops.aten.scaled_dot_product_attention.default", ("query", "key", "value"),
        ("attn_mask", "dropout_p", "is_causal", "scale")),
    "_grouped_mm.default": PublicEntry(
        "torch.nn.functional.grouped_mm", ("self", "mat2"), ("offs", "bias", "out_dtype")),
}  # fmt: skip

# Private ops that are not computations worth a case (queries, assertions) or have no public equivalent.
NOT_EMITTED: Mapping[str, str] = {
    "_fused_sdp_choice": "a query for the attention backend, not a computation",
    "_assert_async": "an assertion, not a computation",
    "_assert_tensor_metadata": "an assertion, not a computation",
    "_assert_scalar": "an assertion, not a computation",
    "_safe_softmax": "private op without a public entry point of the same semantics",
}


def public_name(name: str, overload: str) -> str:
    """The manifest spelling of a public aten op."""
    return f"torch.ops.aten.{name}.{overload}"

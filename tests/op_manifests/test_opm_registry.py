"""Op lookup: every spelling the RFC and the scanner use resolves; nothing else does."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.nn.functional as F

from op_manifests import registry

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("torch.add", torch.add),
        ("torch.einsum", torch.einsum),  # torch.functional helper
        ("torch.nn.functional.softmax", F.softmax),
        ("torch.linalg.norm", torch.linalg.norm),
        ("torch.ops.aten.view", torch.ops.aten.view),
        ("aten.view.default", torch.ops.aten.view.default),
        ("torch.Tensor.view", torch.Tensor.view),
        ("Tensor.contiguous", torch.Tensor.contiguous),
        ("torch.view", torch.Tensor.view),  # RFC-0186 spelling of a Tensor method
        ("torch.getitem", operator.getitem),  # RFC-0186 spelling of a Python operator
        ("operator.matmul", operator.matmul),
    ],
)
def test_known_spellings_resolve(name: str, expected: object) -> None:
    assert registry.resolve(name) is expected


def test_aliases_share_one_canonical_name() -> None:
    assert str(registry.parse("aten.view")) == str(registry.parse("torch.ops.aten.view"))
    assert str(registry.parse("Tensor.view")) == "torch.Tensor.view"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("torch.nn.functional.Callable", "no such tensor op"),  # typing re-export
        ("torch.nn.functional.handle_torch_function", "effects outside"),
        ("torch.ops.aten.name", "no such tensor op"),  # an attribute, not an op packet
        ("torch.ops.aten.view.nonexistent_overload", "no such tensor op"),
        ("torch.nn.Module", "too many dotted parts"),
        ("torch.hub", "no such tensor op"),
        ("torch.from_file", "effects outside"),
        ("torch.Tensor.register_hook", "effects outside"),
        ("torch.add.__call__", "dunder"),
        ("builtins.exec", "namespace must be one of"),
        ("torch", "namespace must be one of"),
        ("", "non-empty"),
    ],
)
def test_everything_else_is_unknown(name: str, reason: str) -> None:
    with pytest.raises(registry.UnknownOp, match=reason):
        registry.resolve(name)

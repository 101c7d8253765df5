"""A database entry's sample as the checks that re-enter an op take it: a function of its tensors
alone (the transforms, torch.export), the rest of its arguments closed over; shared by
transformchecks.py and exportchecks.py."""

from __future__ import annotations

import unittest
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeVar

import torch
from torch.utils._pytree import TreeSpec, tree_flatten, tree_unflatten


@dataclass(frozen=True)
class Operands:
    """A sample's positional arguments, flattened, with the op's call closed over the rest."""

    leaves: tuple[Any, ...]
    spec: TreeSpec
    kwargs: dict[str, Any]

    @classmethod
    def of(cls, sample: Any) -> Operands:
        leaves, spec = tree_flatten((sample.input, *sample.args))
        return cls(tuple(leaves), spec, dict(sample.kwargs))

    def positions(self, differentiable: bool = False) -> list[int]:
        """Where the tensors are (only floating ones that carry a gradient, when `differentiable`)."""
        return [index for index, leaf in enumerate(self.leaves) if isinstance(leaf, torch.Tensor)
                and (not differentiable or (leaf.requires_grad and leaf.is_floating_point()))]

    def call(self, op: Any, positions: list[int], values: tuple[Any, ...]) -> Any:
        """`op` on the sample with the leaves at `positions` replaced by `values`."""
        leaves = list(self.leaves)
        for index, value in zip(positions, values):
            leaves[index] = value
        return op(*tree_unflatten(leaves, self.spec), **self.kwargs)

    def function(self, op: Any, positions: list[int]) -> Callable[..., Any]:
        """A function of the tensors at `positions` alone, as the transforms and torch.export take them."""
        def of_tensors(*values: Any) -> Any:
            return self.call(op, positions, values)
        return of_tensors


def samples(op: Any, device: str, dtype: torch.dtype, requires_grad: bool, limit: int) -> Iterator[Any]:
    """An OpInfo's first `limit` samples."""
    return islice(op.sample_inputs(device, dtype, requires_grad=requires_grad), limit)


def tensors_only(value: Any) -> bool:
    return all(isinstance(leaf, torch.Tensor) for leaf in tree_flatten(value)[0])


T = TypeVar("T")


def at_least_one(items: Iterator[T], reason: str) -> Iterator[T]:
    """`items`, then a skip saying `reason` if there were none: a check that compared nothing did not pass."""
    found = False
    for item in items:
        found = True
        yield item
    if not found:
        raise unittest.SkipTest(reason)

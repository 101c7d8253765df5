"""Which database entries a bundled test module instantiates: every entry, or only those named.

`HARNESS_ENTRIES` (comma-separated names: `add`, `div.floor_rounding`, `nn.Linear`, `Adam`)
narrows every bundled module to the entries it names, before PyTorch's framework instantiates
any test, so collecting a narrowed file is fast. A name selects an entry when it is the entry's
full name or its family (an OpInfo's `name` selects all of its variants). `catalog` reads the
same `Entries` objects to list what each module covers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sized
from dataclasses import dataclass
from typing import Generic, TypeVar

from harness.protocol import Env

T = TypeVar("T")
NO_ENTRY = "<none>"  # a name no entry has: `catalog` imports modules with it, instantiating no test


def requested(env: Mapping[str, str] = os.environ) -> frozenset[str] | None:
    """The entry names HARNESS_ENTRIES asks for; None when it is unset or empty (every entry)."""
    names = frozenset(name.strip() for name in env.get(Env.ENTRIES, "").split(",") if name.strip())
    return names or None


@dataclass(frozen=True)
class Entries(Generic[T]):
    """One module's database entries, with how each is named (its full name and its family)."""

    items: tuple[T, ...]
    full_name: Callable[[T], str]
    family: Callable[[T], str] | None = None  # e.g. an OpInfo's `name`, shared by its variants

    def names_of(self, item: T) -> frozenset[str]:
        return frozenset({self.full_name(item), *((self.family(item),) if self.family else ())})

    @property
    def names(self) -> tuple[str, ...]:
        """Every name a user may select in this module, sorted."""
        return tuple(sorted(set().union(*(self.names_of(item) for item in self.items))))

    def chosen(self, env: Mapping[str, str] = os.environ) -> list[T]:
        """The entries to instantiate: all of them, or those HARNESS_ENTRIES names."""
        wanted = requested(env)
        return [item for item in self.items if wanted is None or self.names_of(item) & wanted]


def op_entries(ops: Iterable[T]) -> Entries[T]:
    """OpInfo-like entries (op_db, custom_op_db, hop_db, autograd_function_db): `name.variant`."""
    return Entries(tuple(ops), full_name=lambda op: op.full_name, family=lambda op: op.name)


def drop_tests_without_entries(generic: type, chosen_by_test: Mapping[str, Sized]) -> None:
    """Remove from `generic` each test whose own subset of the chosen entries is empty (PyTorch's
    `@ops` fails on an empty list), so that a narrowed selection still instantiates the rest."""
    for name, chosen in chosen_by_test.items():
        if not chosen:
            delattr(generic, name)


def instantiate_cpu_tests(generic: type, scope: MutableMapping[str, object], chosen: Sized) -> None:
    """PyTorch's device-type instantiation of `generic` for CPU over the `chosen` entries its
    templates are parametrized with; with none chosen, no test (PyTorch's `@ops` refuses an empty
    list). The generic class leaves `scope` either way, as PyTorch's instantiation does."""
    if chosen:
        from torch.testing._internal.common_device_type import instantiate_device_type_tests

        instantiate_device_type_tests(generic, scope, only_for="cpu")
    else:
        del scope[generic.__name__]

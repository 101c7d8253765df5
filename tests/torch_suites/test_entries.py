"""Selection by database entry, as a user writes it in HARNESS_ENTRIES (harness/torch_suites/shared/entries.py)."""

from __future__ import annotations

import unittest
from types import SimpleNamespace

import pytest

from harness.protocol import Env
from harness.torch_suites.shared.entries import NO_ENTRY, Entries, drop_tests_without_entries, requested
from harness.torch_suites.shared.spawned import Shard

pytestmark = pytest.mark.unit

OPS = Entries((SimpleNamespace(name="div", variant="floor_rounding"), SimpleNamespace(name="div", variant=""),
               SimpleNamespace(name="add", variant="")),
              full_name=lambda op: f"{op.name}.{op.variant}" if op.variant else op.name,
              family=lambda op: op.name)


def chosen(value: str) -> list[str]:
    return [OPS.full_name(op) for op in OPS.chosen({Env.ENTRIES: value})]


def test_unset_or_blank_selects_every_entry():
    assert requested({}) is None and requested({Env.ENTRIES: " , "}) is None
    assert chosen("") == ["div.floor_rounding", "div", "add"]


def test_a_family_name_selects_all_its_variants_and_a_full_name_only_itself():
    assert chosen("div") == ["div.floor_rounding", "div"]
    assert chosen(" div.floor_rounding ,add") == ["div.floor_rounding", "add"]


def test_names_unknown_here_select_nothing():
    assert chosen("nn.Linear") == [] and chosen(NO_ENTRY) == []


def test_names_list_every_selectable_name_once():
    assert OPS.names == ("add", "div", "div.floor_rounding")


def test_shards_split_the_tests_of_their_classes_without_overlap_or_loss():
    def suite(name: str, tests: list[str]) -> type:
        return type(name, (unittest.TestCase,), {test: lambda self: None for test in tests})

    def collected(shard: Shard) -> set[str]:
        classes = shard.keep({"A": suite("A", ["test_a1", "test_a2", "test_a3"]), "B": suite("B", ["test_b1"])})
        return {f"{name}.{test}" for name, cls in classes.items()
                for test in unittest.TestLoader().getTestCaseNames(cls) if getattr(getattr(cls, test), "__test__", True)}

    parts = [collected(Shard(index, 3)) for index in (1, 2, 3)]
    assert set().union(*parts) == {"A.test_a1", "A.test_a2", "A.test_a3", "B.test_b1"}
    assert sum(map(len, parts)) == 4 and all(parts)


def test_a_test_whose_own_subset_of_the_chosen_entries_is_empty_leaves_the_class_and_the_rest_stay():
    class Generic:
        def test_all(self):
            pass

        def test_with_errors(self):
            pass

    drop_tests_without_entries(Generic, {"test_all": ["add"], "test_with_errors": []})
    assert hasattr(Generic, "test_all") and not hasattr(Generic, "test_with_errors")

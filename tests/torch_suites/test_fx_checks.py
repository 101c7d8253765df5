"""P3's `fx` stage: a pass must leave the graph computing what the module computes, and a pass that
promises partitions must make them (harness/torch_suites/fx/fxchecks.py). Run with this
interpreter's torch, in-process."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def module_info(name: str):
    from torch.testing._internal.common_modules import module_db

    return next(info for info in module_db if info.name == name)


class Case:
    """The TestCase methods the checks call, from a real PyTorch TestCase."""

    def __new__(cls):
        from torch.testing._internal.common_utils import TestCase

        class Probe(TestCase):
            def runTest(self) -> None:  # a TestCase needs a method to be built
                pass

        return Probe()


def test_a_real_pass_over_a_traceable_module_passes_the_check():
    import torch

    from harness.torch_suites.fx.fxchecks import PASSES, check_pass

    for fx_pass in PASSES:
        subject = next(info for info in map(module_info, ("nn.Linear", "nn.Embedding")) if fx_pass.applies(info))
        check_pass(Case(), fx_pass, subject, "cpu", torch.float32)


def fx_pass(name: str):
    from harness.torch_suites.fx.fxchecks import PASSES

    return next(p for p in PASSES if p.name == name)


def check(name: str, module: str = "nn.Linear") -> None:
    import torch

    from harness.torch_suites.fx.fxchecks import check_pass

    check_pass(Case(), fx_pass(name), module_info(module), "cpu", torch.float32)


def test_a_partitioner_that_fits_the_graph_into_one_device_fails_though_the_numbers_match(monkeypatch):
    from torch.fx.experimental.accelerator_partitioner import Partitioner

    def one_partition(self):  # the shortcut the partitioner takes when one device holds everything
        self.find_single_partition(0, logical_device_id=self.devices[0].logical_id)

    monkeypatch.setattr(Partitioner, "size_based_partition", one_partition)
    with pytest.raises(AssertionError, match="into one partition"):
        check("partition_size_based")


def test_sparse_nn_partitioning_that_mixes_a_table_with_the_dense_part_fails(monkeypatch):
    from torch.fx.experimental.accelerator_partitioner import Partitioner

    monkeypatch.setattr(Partitioner, "sparse_nn_partition", lambda self, available: self.size_based_partition())
    with pytest.raises(AssertionError, match="share"):
        check("partition_sparse_nn", "nn.Embedding")


def test_a_minimizer_that_blames_no_node_fails(monkeypatch):
    from torch.fx.passes.net_min_base import _MinimizerBase

    monkeypatch.setattr(_MinimizerBase, "_sequential_traverse", lambda self, nodes: set())
    with pytest.raises(AssertionError, match="sequential search, discrepancy at"):
        check("net_minimizer")


@pytest.mark.parametrize("manager", ["pass_manager", "legacy_pass_manager"])
def test_a_pass_manager_whose_dead_code_elimination_does_nothing_fails(monkeypatch, manager):
    from harness.torch_suites.fx import fxchecks

    def dead_code(graph):  # named as the real pass, which the managers schedule by name
        return graph

    monkeypatch.setattr(fxchecks, "dead_code", dead_code)
    with pytest.raises(AssertionError, match="dead clone is left"):
        check(manager)


def test_a_type_rule_that_infers_nothing_fails_the_gradual_type_check(monkeypatch):
    import torch
    from torch.fx.experimental import graph_gradual_typechecker
    from torch.fx.tensor_type import Dyn

    def unknown(node, module_instance):
        node.type = Dyn
        return Dyn

    monkeypatch.setitem(graph_gradual_typechecker._INFERENCE_RULES, torch.nn.Linear, unknown)
    with pytest.raises(AssertionError, match="node _0"):
        check("gradual_types")


def test_a_constraint_rule_that_constrains_nothing_fails_as_it_admits_a_wrong_output(monkeypatch):
    import torch
    from torch.fx.experimental.migrate_gradual_types import constraint_generator

    def unconstrained(node, module_instance, symbols, constraints, counter):
        symbols[node], counter = constraint_generator.gen_tvar(counter)
        return [], counter

    monkeypatch.setitem(constraint_generator._INFERENCE_RULES, torch.nn.Linear, unconstrained)
    with pytest.raises(AssertionError, match="the constraints with the types"):
        check("gradual_constraints")


def test_a_pass_that_changes_what_the_graph_computes_fails_the_check():
    import torch

    from harness.torch_suites.fx.fxchecks import FxPass, Level, check_pass

    def off_by_one(*args, **kwargs):
        return torch.nn.functional.linear(*args, **kwargs) + 1

    def corrupting(case, s):
        for node in s.graph.graph.nodes:
            if node.op == "call_function":
                node.target = off_by_one
        s.graph.recompile()
        return lambda: s.graph(*s.inputs)

    with pytest.raises(AssertionError, match="not close"):
        check_pass(Case(), FxPass("corrupting", Level.MODULE, corrupting), module_info("nn.Linear"), "cpu", torch.float32)


def test_a_split_that_made_no_partition_fails_even_with_the_same_numbers(monkeypatch):
    import torch.fx.passes.split_module

    monkeypatch.setattr(torch.fx.passes.split_module, "split_module", lambda graph, *args, **kwargs: graph)
    with pytest.raises(AssertionError, match="split_module made no partition"):
        check("split_module")


def test_the_untraceable_modules_are_module_db_entries_that_fx_cannot_trace():
    import torch
    import torch.fx

    from harness.torch_suites.compiled.compilechecks import first_module
    from harness.torch_suites.fx.fxchecks import CONTROL_FLOW, LAZY, TYPE_CHECKED, VALUE_DEPENDENT, traceable

    for names, error, message in ((CONTROL_FLOW, torch.fx.proxy.TraceError, "control flow"),
                                  (TYPE_CHECKED, RuntimeError, "_none_or_dtype"),
                                  (LAZY, ValueError, "uninitialized parameter")):
        for name in sorted(names):
            module, args, kwargs = first_module(module_info(name), "cpu", torch.float32, training=False)
            with pytest.raises(error, match=message):
                torch.fx.symbolic_trace(module)(*args, **kwargs)
    assert not any(traceable(module_info(name)) for name in CONTROL_FLOW | TYPE_CHECKED | LAZY)
    assert all(traceable(module_info(name)) for name in VALUE_DEPENDENT)


def test_the_aten_passes_skip_a_value_dependent_module_with_the_reason():
    import unittest

    import torch

    from harness.torch_suites.fx.fxchecks import PASSES, Level, check_pass

    aten = next(p for p in PASSES if p.level is Level.ATEN)
    with pytest.raises(unittest.SkipTest, match="make_fx cannot trace nn.CTCLoss"):
        check_pass(Case(), aten, module_info("nn.CTCLoss"), "cpu", torch.float32)


def test_symbolic_output_sizes_that_disagree_with_the_run_fail_the_shape_guard_check(monkeypatch):
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    size_hint = ShapeEnv.size_hint
    monkeypatch.setattr(ShapeEnv, "size_hint", lambda self, expr, **kwargs: size_hint(self, expr, **kwargs) + 1)
    with pytest.raises(AssertionError, match="an output's symbolic sizes"):
        check("shape_guards")

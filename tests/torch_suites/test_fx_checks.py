"""P3's `fx` stage: a pass must leave the graph computing what the module computes, and a pass that
promises partitions must make them (harness/torch_suites/fxchecks.py). Run with this
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

    from harness.torch_suites.fxchecks import PASSES, check_pass

    for fx_pass in PASSES:
        check_pass(Case(), fx_pass, module_info("nn.Linear"), "cpu", torch.float32)


def test_a_pass_that_changes_what_the_graph_computes_fails_the_check():
    import torch

    from harness.torch_suites.fxchecks import FxPass, Level, check_pass

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
    import torch
    import torch.fx.passes.split_module

    from harness.torch_suites.fxchecks import PASSES, check_pass

    monkeypatch.setattr(torch.fx.passes.split_module, "split_module", lambda graph, *args, **kwargs: graph)
    split = next(p for p in PASSES if p.name == "split_module")
    with pytest.raises(AssertionError, match="split_module made no partition"):
        check_pass(Case(), split, module_info("nn.Linear"), "cpu", torch.float32)


def test_the_untraceable_modules_are_module_db_entries_that_fx_cannot_trace():
    import torch
    import torch.fx

    from harness.torch_suites.compilechecks import first_module
    from harness.torch_suites.fxchecks import CONTROL_FLOW, LAZY, TYPE_CHECKED, VALUE_DEPENDENT, traceable

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

    from harness.torch_suites.fxchecks import PASSES, Level, check_pass

    aten = next(p for p in PASSES if p.level is Level.ATEN)
    with pytest.raises(unittest.SkipTest, match="make_fx cannot trace nn.CTCLoss"):
        check_pass(Case(), aten, module_info("nn.CTCLoss"), "cpu", torch.float32)

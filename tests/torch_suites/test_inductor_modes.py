"""P3's `inductor-modes` stage: each of Inductor's CPU modes must give eager's numbers and prove it
went its own way, so that Inductor compiling as by default fails the check
(harness/torch_suites/inductor/inductormodes.py). Run with this interpreter's torch, in-process."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

MODES = ("cpp_wrapper", "freezing", "max_autotune", "debug_trace", "cache")


@pytest.fixture(scope="module")
def linear():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU()).eval(), (torch.randn(8, 32),), {}


@pytest.fixture(scope="module")
def by_default(linear):
    """The module compiled by Inductor as torch.compile does by default (and served by no cache)."""
    import torch

    from harness.torch_suites.inductor.inductormodes import compile_once

    module, args, kwargs = linear
    with torch.no_grad():
        return compile_once(module, args, kwargs, {"force_disable_caches": True})


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_gives_eagers_numbers_and_inductor_compiling_as_by_default_fails_its_proof(mode, linear, by_default,
                                                                                          tmp_path):
    import torch

    from harness.torch_suites.inductor.inductormodes import Mode, ModeDidNothing, prove, run_mode

    module, args, kwargs = linear
    ours, theirs = tmp_path / "mode", tmp_path / "default"  # where each run may write (the debug trace)
    ours.mkdir()
    theirs.mkdir()
    with torch.no_grad():
        torch.testing.assert_close(run_mode(Mode(mode), module, args, kwargs, ours), module(*args))
    torch.testing.assert_close(by_default.output, module(*args))
    with pytest.raises(ModeDidNothing, match=mode):
        prove(Mode(mode), by_default, module, len(args), theirs)


def test_aot_inductor_runs_the_loaded_model_and_leaves_no_unpacked_package_behind(linear, tmp_path, monkeypatch):
    import torch

    from harness.torch_suites.inductor.inductormodes import Mode, run_mode

    module, args, kwargs = linear
    elsewhere, folder = tmp_path / "elsewhere", tmp_path / "mode"
    elsewhere.mkdir()
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(elsewhere))
    with torch.no_grad():
        torch.testing.assert_close(run_mode(Mode.AOT_INDUCTOR, module, args, kwargs, folder), module(*args))
    assert list(elsewhere.iterdir()) == []  # torch 2.14.1's loader unpacks under TMPDIR and leaves it there


def test_a_module_dynamo_refuses_skips_a_compile_mode_with_the_reason():
    import unittest

    import torch
    from torch.testing._internal.common_modules import module_db
    from torch.testing._internal.common_utils import TestCase

    from harness.torch_suites.inductor.inductormodes import DYNAMO_REFUSES, Mode, check_mode

    class Probe(TestCase):
        def runTest(self) -> None:
            pass

    lstm = next(info for info in module_db if info.name == "nn.LSTM")
    assert lstm.name in DYNAMO_REFUSES
    with pytest.raises(unittest.SkipTest, match="allow_rnn"):
        check_mode(Probe(), Mode.CPP_WRAPPER, lstm, "cpu", torch.float32)

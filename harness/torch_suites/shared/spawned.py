"""PyTorch's multi-process suites as P2 test modules: `DistributedTest` on gloo and the RPC suites
on the TensorPipe agent, CPU and loopback only, split into shards so no module runs much past ten
minutes on two cores.

Each test of these suites spawns its worker processes (`MultiProcessTestCase`, start method
`spawn`): a worker is a fresh interpreter that unpickles the test class by module and name, so
every class is created here with the calling module's name (as PyTorch's
`rpc_utils.generate_tests` requires) and lives in that module's globals. A worker imports that
module again; everything here is deterministic, so it rebuilds the same shard of the same classes.
"""

from __future__ import annotations

import functools
import os
import unittest
from dataclasses import dataclass

from torch.testing._internal.common_utils import find_free_port

from harness.torch_suites.shared.entries import Entries

# What PyTorch's test/run_test.py gives test_distributed_spawn.py for gloo on a machine without two
# GPUs, set only where the environment says nothing (a spawned worker inherits its parent's
# values, port included). With WORLD_SIZE 2 the group tests skip ("small world size").
DISTRIBUTED_DEFAULTS = {"BACKEND": "gloo", "WORLD_SIZE": "3"}


@dataclass(frozen=True)
class Shard:
    """Shard `index` (from 1) of `count`: every count-th test of the sorted (class, test) names,
    so the shards of a suite mix its slow and fast families alike."""

    index: int
    count: int

    def keep(self, classes: dict[str, type]) -> dict[str, type]:
        """Hide the tests of other shards on these (freshly generated) classes; drop emptied ones.

        A hidden test stays an attribute (setUp code reads some tests' attributes) but carries
        `__test__ = False`, which pytest honours for unittest methods: not collected, not skipped."""
        names = sorted((class_name, test) for class_name, cls in classes.items()
                       for test in unittest.TestLoader().getTestCaseNames(cls))
        kept = {class_name: False for class_name in classes}
        for position, (class_name, test) in enumerate(names):
            if position % self.count == self.index - 1:
                kept[class_name] = True
            else:
                setattr(classes[class_name], test, _hidden(getattr(classes[class_name], test)))
        return {name: cls for name, cls in classes.items() if kept[name]}


def _hidden(test):
    @functools.wraps(test)
    def elsewhere(*args, **kwargs):
        return test(*args, **kwargs)

    elsewhere.__test__ = False  # run by another shard's module
    return elsewhere


def suite_entries(suites) -> Entries[type]:
    """A module's entries are the PyTorch suites (test classes) it runs, by class name."""
    return Entries(tuple(suites), full_name=lambda suite: suite.__name__)


def distributed_suites() -> tuple[type, ...]:
    """`DistributedTest`, importable once the gloo environment is set (it reads BACKEND on import)."""
    for name, value in DISTRIBUTED_DEFAULTS.items():
        os.environ.setdefault(name, value)
    os.environ.setdefault("MASTER_PORT", str(find_free_port()))  # env:// tests; one per test process
    from torch.testing._internal.distributed.distributed_test import DistributedTest

    return (DistributedTest,)


def distributed_classes(chosen, shard: Shard, module_name: str) -> dict[str, type]:
    """The test class test_distributed_spawn.py builds for gloo: PyTorch's TestDistBackend with
    DistributedTest's tests, spawning WORLD_SIZE workers per test."""
    if not chosen:
        return {}
    from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend

    def setUp(self):  # noqa: N802 (unittest's name)
        TestDistBackend.setUp(self)
        self._spawn_processes()

    cls = type("TestDistBackendWithSpawn", (TestDistBackend, DistributedTest._DistTestBase),
               {"setUp": setUp, "__module__": module_name})
    return shard.keep({cls.__name__: cls})


def rpc_suites(names: tuple[str, ...]) -> tuple[type, ...]:
    """PyTorch's generic and TensorPipe-specific RPC suites (rpc_utils) with these names."""
    from torch.testing._internal.distributed.rpc_utils import GENERIC_TESTS, TENSORPIPE_TESTS

    known = {suite.__name__: suite for suite in GENERIC_TESTS + TENSORPIPE_TESTS}
    return tuple(known[name] for name in names)


def rpc_classes(chosen, shard: Shard, module_name: str) -> dict[str, type]:
    """`rpc_utils.generate_tests("TensorPipe", TensorPipeRpcAgentTestFixture, chosen, module)`:
    each suite on the TensorPipe agent, spawning its workers, named TensorPipe<Suite>."""
    from torch.testing._internal.distributed.rpc.tensorpipe_rpc_agent_test_fixture import (
        TensorPipeRpcAgentTestFixture,
    )
    from torch.testing._internal.distributed.rpc_utils import generate_tests

    return shard.keep(generate_tests("TensorPipe", TensorPipeRpcAgentTestFixture, list(chosen), module_name))

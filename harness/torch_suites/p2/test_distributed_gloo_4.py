"""PyTorch's `DistributedTest` on gloo with spawned workers, as test_distributed_spawn.py runs it,
shard 4 of 4 (harness/torch_suites/shared/spawned.py)."""

from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.shared import spawned

ENTRIES = spawned.suite_entries(spawned.distributed_suites())
globals().update(spawned.distributed_classes(ENTRIES.chosen(), spawned.Shard(4, 4), __name__))

if __name__ == "__main__":
    run_tests()

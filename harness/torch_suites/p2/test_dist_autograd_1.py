"""PyTorch's RPC suites `DistAutogradTest` and `TensorPipeAgentDistAutogradTest` on the
TensorPipe agent, as `rpc_utils.generate_tests` builds them, shard 1 of 3
(harness/torch_suites/shared/spawned.py)."""

from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.shared import spawned

ENTRIES = spawned.suite_entries(spawned.rpc_suites(("DistAutogradTest", "TensorPipeAgentDistAutogradTest")))
globals().update(spawned.rpc_classes(ENTRIES.chosen(), spawned.Shard(1, 3), __name__))

if __name__ == "__main__":
    run_tests()

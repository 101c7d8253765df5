"""PyTorch's RPC suites `JitRpcTest` and `JitDistAutogradTest` on the TensorPipe agent, as
`rpc_utils.generate_tests` builds them, shard 1 of 2 (harness/torch_suites/shared/spawned.py)."""

from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.shared import spawned

ENTRIES = spawned.suite_entries(spawned.rpc_suites(("JitRpcTest", "JitDistAutogradTest")))
globals().update(spawned.rpc_classes(ENTRIES.chosen(), spawned.Shard(1, 2), __name__))

if __name__ == "__main__":
    run_tests()

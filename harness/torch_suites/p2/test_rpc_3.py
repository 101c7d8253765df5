"""PyTorch's RPC suite `RpcTest` on the TensorPipe agent, as
`rpc_utils.generate_tests` builds it, shard 3 of 5 (harness/torch_suites/shared/spawned.py)."""

from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.shared import spawned

ENTRIES = spawned.suite_entries(spawned.rpc_suites(("RpcTest",)))
globals().update(spawned.rpc_classes(ENTRIES.chosen(), spawned.Shard(3, 5), __name__))

if __name__ == "__main__":
    run_tests()

"""PyTorch's smaller RPC suites on the TensorPipe agent, as `rpc_utils.generate_tests` builds them:
remote modules, the distributed optimizer, DDP under distributed autograd, and the parameter-server
and reinforcement-learning examples (harness/torch_suites/shared/spawned.py)."""

from torch.testing._internal.common_utils import run_tests

from harness.torch_suites.shared import spawned

ENTRIES = spawned.suite_entries(spawned.rpc_suites((
    "RemoteModuleTest", "ThreeWorkersRemoteModuleTest", "DistOptimizerTest", "DdpUnderDistAutogradTest",
    "DdpComparisonTest", "ReinforcementLearningRpcTest", "ParameterServerTest")))
globals().update(spawned.rpc_classes(ENTRIES.chosen(), spawned.Shard(1, 1), __name__))

if __name__ == "__main__":
    run_tests()

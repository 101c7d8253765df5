"""Tier P2: PyTorch's distributed (gloo) and RPC (TensorPipe) suites, CPU and loopback only."""

"""Tier P1: PyTorch's generic op, module, optimizer and nn checks, CPU only."""

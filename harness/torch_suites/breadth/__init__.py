"""Tier breadth (nightly): PyTorch's generic op checks at PyTorch's breadth, every dtype it runs them in."""

"""Stress tier: long loops that have crashed a JIT, kept as reproducers (not part of P0)."""

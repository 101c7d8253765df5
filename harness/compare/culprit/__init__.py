"""Culprit search: from a failing test under a JIT to the compiled functions to blame (docs/culprit.md).

cinderx (CinderX's settings and debug log), search (delta debugging over JIT lists), probes (reruns
with a JIT list, in parallel), locate (where a function's code is), blame (one test, end to end),
targets (which tests); the command (`harness culprit`, `diff --culprit`) is harness/commands/culprit.py.
"""

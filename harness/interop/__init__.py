"""torch.compile x JIT interop: the matrix of cells (docs/interop.md).

torch.compile meets callables in every state the JIT can leave them in; a fallback to eager
gives the same numbers, so every cell proves with a counting backend that dynamo captured a graph
and that the compiled graph is what ran, and, under a JIT configuration, that the JIT state the
cell claims was really reached (read back from CinderX). `test_matrix.py` is the P0 matrix
(counting backend over dynamo's graph); `test_backends.py` is the P3 stage (real backends).
"""

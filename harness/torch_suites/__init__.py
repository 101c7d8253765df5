"""Tiers P1, P2, P3 and breadth without a PyTorch checkout: PyTorch's own tests that ship inside the torch wheel.

Each `p1/test_*.py` and `p2/test_*.py` is a thin module that instantiates PyTorch's test bases and
databases (`op_db`, `module_db`, `optim_db`, `common_nn`, the distributed and RPC suites) through
PyTorch's own framework, so running it is running PyTorch's tests at exactly the installed
version. `entries` narrows every module to the database entries named in HARNESS_ENTRIES;
`catalog` lists which entries each module covers. See docs/torch_suites.md.
"""

"""Tiers P1, P2, P3 and breadth without a PyTorch checkout: PyTorch's own tests that ship inside the torch wheel.

Each `p1/test_*.py` and `p2/test_*.py` is a thin module that instantiates PyTorch's test bases and
databases (`op_db`, `module_db`, `optim_db`, `common_nn`, the distributed and RPC suites) through
PyTorch's own framework, so running it is running PyTorch's tests at exactly the installed
version. The check bodies live in folders by what they check (eager/, optim/, compiled/, dynamo/,
fx/, inductor/, export/), on the machinery in shared/: `shared.entries` narrows every module to the
database entries named in HARNESS_ENTRIES; `shared.catalog` lists which entries each module covers.
The tier folders keep their thin files, so test ids and JUnit names do not depend on the groups.
See docs/architecture.md and docs/torch_suites.md.
"""

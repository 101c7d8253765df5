"""Which database entries each bundled test module covers, as JSON, for the runner's `--select`.

    python -m harness.torch_suites.shared.catalog    (in a test interpreter: it imports torch)

prints `{"harness/torch_suites/p1/test_ops_out.py": ["abs", "add", ...], ...}`: for every bundled
module (path relative to the repository root), every name `HARNESS_ENTRIES` may carry to select
entries in it. Modules are imported with HARNESS_ENTRIES set to a name no entry has, so their
`ENTRIES` are read without instantiating a single test.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import harness
from harness.protocol import Env
from harness.torch_suites.shared.entries import NO_ENTRY

ROOT = Path(harness.__file__).resolve().parent.parent
SUITES = Path(__file__).resolve().parent.parent  # harness/torch_suites/, whose tier folders hold the bundled modules
TIERS = ("p1", "p2", "p3", "breadth")


def bundled_files() -> list[Path]:
    """Every bundled test module, relative to the repository root."""
    return sorted(path.relative_to(ROOT) for tier in TIERS for path in (SUITES / tier).glob("test_*.py"))


def covered(files: list[Path]) -> dict[str, list[str]]:
    """File (as a posix path) -> the entry names its module selects by."""
    os.environ[Env.ENTRIES] = NO_ENTRY
    return {file.as_posix(): list(importlib.import_module(".".join(file.with_suffix("").parts)).ENTRIES.names)
            for file in files}


def main() -> None:
    print(json.dumps(covered(bundled_files()), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()

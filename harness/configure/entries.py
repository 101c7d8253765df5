"""`--select add nn.Linear Adam`: entries of PyTorch's test databases, resolved to the files that run them.

The bundled suites (harness/torch_suites/) instantiate PyTorch's generic tests over databases that
ship inside torch (op_db, module_db, optim_db, ...). Which entries each file covers is known only
to the torch of the test interpreter, so the suites' catalog is asked there; the run then gets the
files that cover the names, and HARNESS_ENTRIES tells those files to instantiate only them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.errors import HarnessError, did_you_mean

CATALOG_MODULE = "harness.torch_suites.shared.catalog"


def is_path(selection: str, tests_dir: Path) -> bool:
    """A file or node id (relative to the tests directory), as opposed to a database entry's name."""
    return "::" in selection or selection.endswith(".py") or (tests_dir / selection).exists()


def catalog(python: str, env: dict[str, str]) -> dict[str, list[str]]:
    """Each bundled file (relative to the harness root) and the entries it covers, from the test interpreter."""
    done = subprocess.run([python, "-m", CATALOG_MODULE], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise HarnessError(f"{python} -m {CATALOG_MODULE} failed: {last}")
    try:
        found = json.loads(done.stdout)
    except ValueError:
        raise HarnessError(f"{python} -m {CATALOG_MODULE} printed no catalog") from None
    return {str(file): [str(name) for name in names] for file, names in found.items()}


def files_for(names: Sequence[str], covered: dict[str, list[str]], files: Sequence[str]) -> list[str]:
    """The tier's files that cover any of `names`, in the tier's order; a name no file covers is an error."""
    known = {name for file in files for name in covered.get(file, ())}
    for name in names:
        if name not in known:
            hint = did_you_mean(name, known)
            raise HarnessError(f"--select {name}: no test file, node id or PyTorch test-database entry of that name "
                               f"in this tier{hint}")
    return [file for file in files if set(names) & set(covered.get(file, ()))]

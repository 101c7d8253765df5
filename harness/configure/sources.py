"""PyTorch's own test files for the installed torch: a shallow, sparse checkout of `test/`.

PyTorch wheels do not ship `test/`. This fetches it from the PyTorch repository (or a mirror:
HARNESS_PYTORCH_REPO, --repo) at the release tag of the installed torch, once per version, into
the harness cache. Runs record the checkout's commit and a content hash of what they ran.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
from pathlib import Path

from harness.configure.provision import cache_root
from harness.errors import HarnessError
from harness.protocol import Setting

DEFAULT_REPOSITORY = "https://github.com/pytorch/pytorch.git"


def installed_torch_version() -> str:
    """The release of the torch this interpreter has, without its local tag (2.14.1+cpu -> 2.14.1)."""
    try:
        return importlib.metadata.version("torch").split("+", 1)[0]
    except importlib.metadata.PackageNotFoundError:
        raise HarnessError("torch is not installed in this interpreter: pass --version") from None


def fetch_tests(version: str, repository: str | None = None, cache: Path | None = None) -> Path:
    """The `test/` folder of PyTorch at tag v<version>, fetched once and reused."""
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:[a-z0-9.]*)", version):
        raise HarnessError(f"--version must be a torch release such as 2.14.1, not {version!r}")
    repository = repository or os.environ.get(Setting.PYTORCH_REPO, DEFAULT_REPOSITORY)
    checkout = (cache or cache_root() / "pytorch-tests") / version
    tests = checkout / "test"
    if (checkout / ".harness-complete").is_file():
        return tests
    shutil.rmtree(checkout, ignore_errors=True)
    checkout.parent.mkdir(parents=True, exist_ok=True)
    _git(["clone", "--quiet", "--depth", "1", "--branch", f"v{version}", "--filter=blob:none", "--sparse",
          repository, str(checkout)], f"cloning tag v{version} of {repository}")
    _git(["-C", str(checkout), "sparse-checkout", "set", "test"], "checking out test/")
    if not tests.is_dir():
        raise HarnessError(f"{repository} at v{version} has no test/ folder")
    (checkout / ".harness-complete").write_text(f"{repository} v{version}\n")
    return tests


def _git(arguments: list[str], what: str) -> None:
    done = subprocess.run(["git", *arguments], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise HarnessError(f"git failed {what}: {last}")

"""Shared helpers for the op-manifest tests.

The `op_manifests` package lives at the repository root, which bare `pytest` (unlike
`python -m pytest`) does not put on sys.path; pytest.ini's other settings are not ours to change.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

HOSTILE = Path(__file__).resolve().parent / "hostile"


def run_pytest(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m pytest op_manifests ARGS` in a fresh process, exactly as a user runs it."""
    command = [sys.executable, "-m", "pytest", str(REPO / "op_manifests"), "-p", "no:cacheprovider", *args]
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "TEST_COMPILE_BACKEND"}
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def manifest_dir(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write `name` with `text` into a fresh manifest folder; returns the file's path."""
    folder = tmp_path / "manifests"
    folder.mkdir()

    def write(name: str, text: str) -> Path:
        path = folder / name
        path.write_text(text)
        return path

    return write

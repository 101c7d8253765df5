"""The tests of a file, by name: a `pytest --collect-only` pass in the test interpreter.

Shards split big files into tests (harness/run/shards.py) and the count table counts PyTorch's
files and ours (harness/torch_suites/shared/counts.py); both need node ids exactly as a run names them,
so each file is collected the way filerun runs it (rootdir the tests directory, the tier's pytest
options and environment): one process per file, `jobs` at a time, where files differ in environment
(shards), or all files in one process, which imports torch once (the count table).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path



@dataclass(frozen=True)
class Collected:
    """A file's node ids in collection order, or why pytest could not collect it (the file's own
    run then records its collection error, as for any file)."""

    nodeids: tuple[str, ...]
    error: str | None = None


def collect(python: str, tests_dir: Path, files: Sequence[str], env: Mapping[str, str],
            pytest_args: Sequence[str] = (), jobs: int = 1,
            env_per_file: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Collected]:
    """Each file's tests, collected `jobs` files at a time."""
    per_file = env_per_file or {}
    with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        found = pool.map(lambda file: _collect_file(python, tests_dir, file, {**env, **per_file.get(file, {})},
                                                    pytest_args), files)
        return dict(zip(files, found, strict=True))


def _collect_file(python: str, tests_dir: Path, file: str, env: Mapping[str, str],
                  pytest_args: Sequence[str]) -> Collected:
    return collect_together(python, tests_dir, [file], env, pytest_args)[file]


def collect_together(python: str, tests_dir: Path, files: Sequence[str], env: Mapping[str, str],
                     pytest_args: Sequence[str] = ()) -> dict[str, Collected]:
    """Each file's tests, from one pytest process (an error of the process is every file's)."""
    command = [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--color=no",
               f"--rootdir={tests_dir}", *pytest_args, *files]
    done = subprocess.run(command, cwd=tests_dir, env=dict(env), capture_output=True, text=True)
    lines = [line.strip() for line in done.stdout.splitlines() if "::" in line]
    error = None
    if done.returncode not in (0, 5):  # 5: no tests collected
        last = ([*done.stderr.strip().splitlines(), *done.stdout.strip().splitlines()] or ["no output"])[-1]
        error = f"pytest exit status {done.returncode}: {last}"
    return {file: Collected(tuple(line for line in lines if line.startswith(f"{file}::")), error) for file in files}

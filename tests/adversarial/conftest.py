"""Helpers of the adversarial suite (docs/robustness.md): what every hostile input must end in."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.run import processes

HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "hostile"


def one_line(err: str) -> str:
    """The single line a refused command printed: no traceback, no usage block, nothing else."""
    assert "Traceback" not in err, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("harness: error: "), err
    return err.strip()


@pytest.fixture
def refused(capsys):
    """Run `python -m harness ARGS` in this process: it must exit 3 with one line; returns the line."""
    def run(*args: object) -> str:
        capsys.readouterr()
        try:
            status = main([str(arg) for arg in args])
        except SystemExit as exit:  # argparse's errors end the parse by raising it
            status = exit.code
        err = capsys.readouterr().err
        assert status == 3, err
        return one_line(err)
    return run


@pytest.fixture
def leftovers(tmp_path: Path) -> Iterator[list[int]]:
    """Pids a test started or saw; ended after it, with every process of its runs, even when it
    failed halfway (a failing test of this suite must not leave processes on a shared machine)."""
    pids: list[int] = []
    yield pids
    for run in tmp_path.glob("results/*"):
        pids.extend(processes.marked(processes.marks(run)))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

"""`python -m harness culprit` on input it cannot search: one line, exit status 3."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.store import RunDirectory
from tests.unit.test_diff import record

pytestmark = pytest.mark.integration


def test_culprit_of_a_run_that_is_no_jit_run_is_one_line_exit_3(tmp_path: Path):
    run = RunDirectory(tmp_path / "stock")
    run.create()
    run.write_record(record())
    done = subprocess.run([sys.executable, "-m", "harness", "culprit", str(run.root)], capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stderr.strip() == (f"harness: error: {run.root}: not a run of a JIT configuration (jit: on): "
                                   "nothing to blame on a JIT")
    done = subprocess.run([sys.executable, "-m", "harness", "culprit", str(tmp_path / "nothing")],
                          capture_output=True, text=True)
    assert done.returncode == 3 and "neither a run directory (run.json) nor a report.json" in done.stderr

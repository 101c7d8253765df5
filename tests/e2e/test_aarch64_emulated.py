"""The aarch64 job for real (docs/aarch64.md): P0's smoke checks and the project plan's Python
patterns under stock and cinderx-jit on aarch64, then the diff. On an x86_64 host the harness
provisions qemu-user, binfmt_misc, the arm64 CPython 3.14 and the aarch64 wheels (as root), and the
runs are emulated; on an aarch64 host the same sessions are native.

Emulated, each session takes minutes (`import torch` alone is ~44 s), so the check stays at the
two smoke files at the configurations' threshold (1000); docs/aarch64.md has the full P0 and threshold 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.configure.architectures import ARCHITECTURES, emulator_command, emulator_ready, host_machine
from harness.record.store import find_runs
from harness.run.forkserver import EMULATED_JIT
from tests.e2e.test_cinderx_end_to_end import nox

PATTERNS = "harness/smoke/test_python_patterns.py"
SMOKE = "harness/smoke/test_smoke.py"
AARCH64 = ARCHITECTURES["aarch64"]
EMULATED = host_machine() != AARCH64.machine

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(EMULATED and os.geteuid() != 0 and not emulator_ready(AARCH64),
                       reason=f"emulating aarch64 needs qemu-user and binfmt_misc, set up as root: {emulator_command(AARCH64)}"),
]


@pytest.fixture(scope="module")
def aarch64_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """stock against cinderx-jit on aarch64 (P0's smoke and patterns), then `nox -s diff`."""
    results = tmp_path_factory.mktemp("aarch64")
    env = {"HARNESS_RESULTS": str(results)}
    runs = nox("-s", "stock-aarch64-p0", "cinderx-jit-aarch64-p0", "--", "--select", SMOKE, PATTERNS, "--jobs", "2",
               env=env)
    assert runs.returncode == 0, runs.stdout[-3000:] + runs.stderr[-3000:]
    diff = nox("-s", "diff", env=env)
    assert diff.returncode == 0, diff.stdout[-3000:] + diff.stderr[-3000:]
    return results


def test_aarch64_p0_smoke_and_patterns_give_a_valid_verdict_with_jit_proof(aarch64_job: Path):
    report = json.loads((aarch64_job / "reports" / "report.json").read_text())
    assert report["valid"] and report["problems"] == [] and report["summary"]["regressions"] == 0
    assert (report["baseline"], report["configuration"]) == ("stock-aarch64", "cinderx-jit-aarch64")
    platform = f"aarch64{' (emulated)' if EMULATED else ''}"
    assert report["platform"] == {"baseline": platform, "candidate": platform}
    modules = {row["module"]: row for row in report["modules"]}
    assert set(modules) == {"harness.smoke.test_smoke", "harness.smoke.test_python_patterns"}
    for row in modules.values():  # every pattern test proves its function compiled (jitcheck), or fails
        assert row["jit_compiled"] > 0 and row["candidate"] == row["baseline"] and "failed" not in row["candidate"], row
    markdown = (aarch64_job / "reports" / "report.md").read_text()
    assert f"vs stock-aarch64 (tier p0){' on aarch64 (emulated)' if EMULATED else ''}" in markdown


def test_aarch64_runs_record_architecture_emulation_and_scaled_limits(aarch64_job: Path):
    records = {record.configuration["name"]: record for _, record in find_runs(aarch64_job)}
    assert set(records) == {"stock-aarch64", "cinderx-jit-aarch64"}
    for record in records.values():
        assert (record.architecture, record.emulated) == ("aarch64", EMULATED)
        assert record.timeout_scale == (40 if EMULATED else 1)
    jit = records["cinderx-jit-aarch64"]
    assert jit.versions["cinderx"] and records["stock-aarch64"].versions["cinderx"] is None
    assert all(f.jit["enabled"] and f.jit["threshold"] == 1000 for f in jit.files)  # read back from the aarch64 JIT


def test_emulated_test_processes_fork_their_workers_except_under_the_jit(aarch64_job: Path):
    """qemu-user runs a thread of its own beside the emulated interpreter: it is not a pool a fork
    would break, so emulated stock files get warm restarts (a crash costs a fork, not a 44 s `import
    torch`). A JIT switched on in a forked worker died under qemu-user (the findings of
    docs/aarch64.md), so emulated JIT files run unforked, and the record says why; natively they fork."""
    records = {record.configuration["name"]: record for _, record in find_runs(aarch64_job)}
    assert {f.file: f.restart for f in records["stock-aarch64"].files} == {SMOKE: "warm", PATTERNS: "warm"}
    expected = f"fresh: {EMULATED_JIT}" if EMULATED else "warm"
    assert {f.file: f.restart for f in records["cinderx-jit-aarch64"].files} == {SMOKE: expected, PATTERNS: expected}

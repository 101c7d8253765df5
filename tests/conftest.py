"""Shared helpers for the harness's own tests. Fixture test files under fixtures/ are run by the
harness in the tests, never collected directly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.configure.configurations import Configuration
from harness.configure.tiers import Tier
from harness.record.store import RunDirectory
from harness.run.runner import RunRequest, execute

collect_ignore_glob = ["fixtures/*"]
FIXTURES = Path(__file__).parent / "fixtures"


def run_fixtures(results: Path, targets: tuple[str, ...], *, timeout: int = 60, test_timeout: int = 60,
                 jit: str = "absent", env: dict[str, str] | None = None, jobs: int = 1,
                 tests_dir: Path = FIXTURES / "outcomes", entry: str = "pytest",
                 requires: str | None = None, restart: str = "warm", exit_grace: int = 30) -> RunDirectory:
    """Run fixture files through the real runner with this interpreter, as `stock` would."""
    configuration = Configuration(name="fixture", python=sys.executable, jit=jit, env=env or {})
    tier = Tier(name="fixture", source="pytorch", files=("*.py",), timeout=timeout, test_timeout=test_timeout,
                entry=entry, requires=requires, restart=restart, exit_grace=exit_grace)
    request = RunRequest(configuration=configuration, tier=tier, tests_dir=tests_dir, targets=targets,
                         results_root=results, python=sys.executable, jobs=jobs)
    return RunDirectory(execute(request, announce=lambda line: None))


@pytest.fixture
def run_outcomes(tmp_path: Path):
    def run(*targets: str, **options) -> RunDirectory:
        return run_fixtures(tmp_path / "results", targets, **options)
    return run


def write_run(results: Path, config: str, outcomes: dict[str, str], *, started: str, threshold: int | None = None,
              durations: dict[str, float] | None = None, module: str = "test_mod", status: str = "complete",
              messages: dict[str, str] | None = None) -> Path:
    """A run directory as the runner leaves it (run.json and one JUnit XML), without running anything:
    `outcomes` maps test names of one module to their outcome."""
    from harness.record.junit import write_suite
    from harness.record.model import FileRecord, RunRecord, TestResult

    jit = "on" if threshold is not None else "absent"
    run = RunDirectory(results / f"{config}-p1-{started.replace(':', '').replace('-', '')}")
    run.create()
    tests = [TestResult(f"{module}.TestX", name, outcome, module, duration=(durations or {}).get(name, 0.01),
                        message=(messages or {}).get(name, "AssertionError: x" if outcome == "failed" else ""),
                        nodeid=f"{module}.py::TestX::{name}")
             for name, outcome in outcomes.items()]
    write_suite(run.junit(module), module, tests, {"file": f"{module}.py"}, {})
    run.write_record(RunRecord(
        configuration={"name": config, "jit": jit}, tier="p1", threshold=threshold, interpreter={},
        versions={"torch": "2.14.1", "python": "3.14.0"}, fingerprint={"hash": "f"}, tests_dir="/t",
        test_sources={"hash": "s"}, started=started, status=status,
        files=(FileRecord(file=f"{module}.py", module=module, exit_status=0, signal=None, duration=1.0, counts={},
                          jit={"compiled": 5} if jit == "on" else None),)))
    return run.root

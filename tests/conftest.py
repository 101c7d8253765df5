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

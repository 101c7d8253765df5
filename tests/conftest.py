"""Shared helpers for the harness's own tests. Fixture test files under fixtures/ are run by the
harness in the tests, never collected directly.

Every test carries one of the marks `unit` (no process started: the fast slice, `nox -s unit`),
`integration` (real processes on this interpreter) or `e2e` (nox, CPython 3.14 + CinderX); a test
without one stops the session at collection, and a `unit` test that starts a process fails.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.configure.configurations import Configuration
from harness.configure.tiers import Tier
from harness.record.durations import NO_HISTORY, History
from harness.record.store import RunDirectory
from harness.run.runner import RunRequest, execute

collect_ignore_glob = ["fixtures/*"]
FIXTURES = Path(__file__).parent / "fixtures"

KINDS = ("unit", "integration", "e2e")
# Audit events (sys.addaudithook) of starting a process: a subprocess, a fork, an exec, a spawn.
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system",
                            "os.exec"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse a test that says neither how fast it is nor what it starts. (The fixture files the tests
    run in child pytest processes load this conftest too: they are not the harness's tests.)"""
    unmarked = [item.nodeid for item in items if FIXTURES not in item.path.parents
                and not any(item.get_closest_marker(kind) for kind in KINDS)]
    if unmarked:
        raise pytest.UsageError(f"{len(unmarked)} tests carry none of the marks {', '.join(KINDS)} "
                                f"(tests/conftest.py), the first: {unmarked[0]}")
    items.sort(key=_schedule_rank)


# pytest-xdist (`nox -s tests` runs a worker per core) hands out a module at a time, so a module's
# fixtures are built once; these modules run nox on the project's own environments (.nox/ under the
# root): the modules sharing a tier's environments are one unit of work, run one after another on one
# worker (the two units meet only in the `diff` session, locked: tests/e2e/test_cinderx_end_to_end.py).
SHARED_NOX = {
    **dict.fromkeys(("test_cinderx_end_to_end", "test_culprit_end_to_end", "test_interop_end_to_end"),
                    "the project's p0 nox environments"),
    **dict.fromkeys(("test_pytorch_suites", "test_p3_compile"), "the project's p1, p2 and p3 nox environments"),
}


def work_unit(nodeid: str) -> str:
    """What pytest-xdist hands a worker at once: the test's module, or the modules sharing environments."""
    module = nodeid.split("::", 1)[0]
    return SHARED_NOX.get(module.removeprefix("tests/e2e/").removesuffix(".py"), module) \
        if module.startswith("tests/e2e/") else module


@pytest.hookimpl(optionalhook=True)  # the fixture files' child pytest processes may run without pytest-xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """pytest-xdist's scope scheduling with `work_unit` as the scope. (Its `--dist loadgroup` marks do
    not group under pytest 9.2, whose node ids it can no longer rewrite: pytest-xdist issue 1386.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ModuleScheduling(config, log)


def _schedule_rank(item: pytest.Item) -> int:
    """Workers take the units in collection order (`--no-loadscope-reorder`): the shared modules first,
    as they are the longest unit and run on one worker, then the slower kinds first."""
    if work_unit(item.nodeid) in SHARED_NOX.values():
        return 0
    return next((rank for rank, kind in enumerate(reversed(KINDS), start=1)
                 if item.get_closest_marker(kind)), len(KINDS) + 1)  # last: a fixture file's test, run by a test


def pytest_configure(config: pytest.Config) -> None:
    """The processes the tests start see the environment a user's shell has, not a worker's variables."""
    if hasattr(config, "workerinput"):
        for name in [name for name in os.environ if name.startswith("PYTEST_XDIST_")]:
            del os.environ[name]


def run_fixtures(results: Path, targets: tuple[str, ...], *, timeout: int = 60, test_timeout: int = 60,
                 jit: str = "absent", env: dict[str, str] | None = None, jobs: int = 1,
                 tests_dir: Path = FIXTURES / "outcomes", entry: str = "pytest",
                 requires: str | None = None, restart: str = "warm", exit_grace: int = 30,
                 history: History = NO_HISTORY) -> RunDirectory:
    """Run fixture files through the real runner with this interpreter, as `stock` would."""
    configuration = Configuration(name="fixture", python=sys.executable, jit=jit, env=env or {})
    tier = Tier(name="fixture", source="pytorch", files=("*.py",), timeout=timeout, test_timeout=test_timeout,
                entry=entry, requires=requires, restart=restart, exit_grace=exit_grace)
    request = RunRequest(configuration=configuration, tier=tier, tests_dir=tests_dir, targets=targets,
                         results_root=results, python=sys.executable, jobs=jobs, history=history)
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


def markdown_report(argv: list[str], out: Path) -> tuple[int, str]:
    """`python -m harness ARGV --out OUT`: its exit status and report.md, the Markdown form (standard
    output gets the first screen, laid out as text)."""
    from harness.cli import main

    status = main([*argv, "--out", str(out)])
    return status, (out / "report.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class SmallDisk:
    """A real file system of a chosen size (tmpfs), mounted for one test: what a full disk does to
    the harness is seen, not imitated."""

    root: Path

    def fill(self) -> Path:
        """Take every free block, as another program writing beside the results would."""
        filler = self.root / "filler"
        try:
            with open(filler, "ab", buffering=0) as handle:
                while True:
                    handle.write(b"\0" * 4096)
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
        return filler

    def free(self) -> None:
        """What the user does when told the disk is full."""
        (self.root / "filler").unlink(missing_ok=True)

    def tree(self) -> dict[str, bytes]:
        """Every file on the disk but the filler, by path: what a failure must not change."""
        return {str(path.relative_to(self.root)): path.read_bytes() for path in sorted(self.root.rglob("*"))
                if path.is_file() and path.name != "filler"}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], SmallDisk]]:
    """`small_disk("80k")`: a tmpfs of that size, unmounted after the test. Mounting needs root:
    without it (or without the right to mount, as in some containers) the test is skipped, saying so."""
    if os.geteuid() != 0:
        pytest.skip("a full disk is tested on a real tmpfs, and mounting one needs root")
    mounted: list[Path] = []

    def mount(size: str) -> SmallDisk:
        point = tmp_path / f"disk{len(mounted)}"
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(point)],
                              capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here (root without the right to mount?): {done.stderr.strip()}")
        mounted.append(point)
        return SmallDisk(point)

    yield mount
    for point in mounted:
        subprocess.run(["umount", "--lazy", str(point)], check=False)

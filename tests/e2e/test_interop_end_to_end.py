"""The interop matrix, the JIT read-back and CinderX's variable names, on the real CinderX.

Runs single files or cells with the session environments that tests/e2e/test_cinderx_end_to_end.py
builds (made here if missing). The whole matrix under stock and cinderx-jit runs in that file's
main job (README command 1).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.junit import read_results
from harness.record.model import FileRecord
from harness.record.store import RunDirectory
from tests.e2e.test_cinderx_end_to_end import ROOT, harness, nox, only_run, session_python

pytestmark = pytest.mark.e2e
SMOKE = "harness/smoke/test_smoke.py"
JIT_FIXTURES = ROOT / "tests" / "fixtures" / "jit"


@pytest.fixture(scope="module")
def pythons(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The stock and cinderx-jit session interpreters (nox builds what is missing: the shared layer is cached)."""
    found = {}
    for session in ("stock-p0", "cinderx-jit-p0"):
        if not session_python(session).exists():
            done = nox("-s", session, "--", "--select", SMOKE, env={"HARNESS_RESULTS": str(tmp_path_factory.mktemp(session))})
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        found[session] = session_python(session)
    return found


def test_the_known_cinderx_variables_are_those_of_the_installed_cinderx(pythons):
    """Regenerated from the installed CinderX, the shipped list must not have drifted."""
    done = subprocess.run([sys.executable, "-m", "harness.configure.cinderx_variables", "--python",
                           str(pythons["cinderx-jit-p0"]), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def invalid_comparison(pythons: dict[str, Path], results: Path, fixture: str) -> tuple[list[str], FileRecord]:
    """`fixture` (tests/fixtures/jit) run under stock and cinderx-jit: the diff's problems (it must be
    invalid: exit 2) and the candidate's file record."""
    runs = {}
    for config, session in (("stock", "stock-p0"), ("cinderx-jit", "cinderx-jit-p0")):
        done = harness(pythons[session], "run", "--config", config, "--tier", "p0", "--tests-dir", str(JIT_FIXTURES),
                       "--select", fixture, "--results", str(results / config))
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        runs[config] = only_run(results / config)
    diff = harness(sys.executable, "diff", str(runs["stock"]), str(runs["cinderx-jit"]), "--format", "json")
    assert diff.returncode == 2, diff.stdout + diff.stderr
    [file] = RunDirectory(runs["cinderx-jit"]).read_record().files
    return json.loads(diff.stdout)["problems"], file


def test_a_test_that_changes_the_threshold_makes_the_comparison_invalid(pythons, tmp_path):
    problems, file = invalid_comparison(pythons, tmp_path, "test_changes_threshold.py")
    assert problems == ["candidate: test_changes_threshold.py: CinderX reported threshold 5 at the end (requested 1000)"]
    assert [p["applied"]["threshold"] for p in file.jit_processes] == [1000]


def test_a_test_that_starts_sys_monitoring_switches_cinderx_off_and_the_comparison_is_invalid(pythons, tmp_path):
    problems, file = invalid_comparison(pythons, tmp_path, "test_starts_monitoring.py")
    # CinderX stayed off; it dropped what it had compiled, but a background compile still in flight
    # when the tool started can land afterwards (seen on a loaded CI machine), so "vacuous" may be absent
    assert "candidate: test_starts_monitoring.py: the JIT was off at the end (requested: on)" in problems, problems
    assert set(problems) <= {"candidate: vacuous: the JIT was on but compiled 0 functions in 1 files",
                             "candidate: test_starts_monitoring.py: the JIT was off at the end (requested: on)"}, problems
    assert [p["applied"]["enabled"] for p in file.jit_processes] == [True]  # on when the harness switched it


def test_a_cell_whose_jit_state_is_out_of_reach_fails_or_skips_with_the_reason(pythons, tmp_path):
    """A JIT list that names none of the cells' functions: a cell claiming a JIT-compiled function
    fails; with background compilation off, a queued compile cannot happen: the cell says so."""
    jit_list = tmp_path / "jit-list.txt"
    jit_list.write_text("nowhere:nothing\n")
    user = tmp_path / "configurations.yaml"
    user.write_text("configurations:\n  jit-listed:\n    python: '3.14'\n    packages: [cinderx]\n    jit: 'on'\n"
                    f"    env: {{CINDERX_JIT_LIST_FILE: '{jit_list}', CINDERX_JIT_BACKGROUND_COMPILE: '0'}}\n")
    cells = [f"harness/interop/test_matrix.py::test_cell[{cell}-function-partial]" for cell in ("hot", "queued", "fresh")]
    done = harness(pythons["cinderx-jit-p0"], "run", "--config", "jit-listed", "--tier", "p0", "--select", *cells,
                   "--results", str(tmp_path / "results"), env={"HARNESS_CONFIGURATIONS": str(user)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run = RunDirectory(only_run(tmp_path / "results"))
    results = {r.name: r for r in read_results(run.junit("harness.interop.test_matrix"))}
    hot, queued, fresh = (results[f"test_cell[{cell}-function-partial]"] for cell in ("hot", "queued", "fresh"))
    assert hot.outcome == "failed" and "JIT state not reached (threshold 1000): cell_hot_function_partial should be " \
                                      "JIT-compiled" in hot.message, hot.message
    assert queued.outcome == "skipped" and "background compilation off" in queued.message, queued.message
    assert fresh.outcome == "passed"


def test_p3_interop_stage_runs_without_a_pytorch_checkout(pythons, tmp_path):
    cell = "harness/interop/test_backends.py::test_cell[fresh-function-aot_eager]"
    done = harness(pythons["cinderx-jit-p0"], "run", "--config", "cinderx-jit", "--tier", "p3", "--stage", "interop",
                   "--select", cell, "--results", str(tmp_path), env={"HARNESS_TESTS_DIR": ""})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    record = RunDirectory(only_run(tmp_path)).read_record()
    assert (record.tier, record.stages, record.tests_dir) == ("p3", ("interop",), str(ROOT))
    [file] = record.files
    assert file.counts == {"passed": 1} and file.jit["compiled"] > 0

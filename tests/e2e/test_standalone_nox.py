"""nox as its documentation installs it, on its own (pipx, uvx, a venv of its own), never in the
project's environment: from a fresh clone, a virtual environment holding nothing but nox lists the
sessions and runs the README's main job to a valid verdict. The noxfile brings its own imports (PEP
723 inline metadata, installed by nox into a script environment) and every session that runs the
harness has an environment of its own; nox's stays as it was.

P0 is narrowed to its smoke file (HARNESS_TIERS replaces the tier by name) to keep the cost small;
the session environments reuse the provisioned CPython 3.14 and the shared torch layer.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from harness.protocol import Setting
from tests.e2e.test_cinderx_end_to_end import ROOT

pytestmark = pytest.mark.e2e
SMOKE_P0 = "tiers:\n  p0:\n    source: harness\n    files: [harness/smoke/test_smoke.py]\n"
# What the nox running these tests leaves in the environment, which a user's shell does not have: its
# script mode (NOX_SCRIPT_MODE=none would stop the standalone nox from making its own), its venv.
INHERITED = ("NOX_SCRIPT_MODE", "NOX_OUTER_PYTHONPATH", "VIRTUAL_ENV", "PYTHONPATH", Setting.TIERS,
             Setting.CONFIGURATIONS, Setting.TESTS_DIR, Setting.RESULTS)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A venv with only nox in it (the version these tests run with), and a fresh clone of HEAD."""
    scratch = tmp_path_factory.mktemp("standalone")
    venv, clone = scratch / "nox", scratch / "clone"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                           f"nox=={version('nox')}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    return venv, clone


def user_shell(scratch: Path) -> dict[str, str]:
    """A user's environment: no trace of the tests' own nox and venv; results and tiers in `scratch`."""
    env = {key: value for key, value in os.environ.items() if key not in INHERITED}
    env["PATH"] = os.pathsep.join(part for part in env.get("PATH", "").split(os.pathsep)
                                  if Path(part) != Path(sys.executable).parent)
    tiers = scratch / "tiers.yaml"
    tiers.write_text(SMOKE_P0)
    return {**env, Setting.TIERS: str(tiers), Setting.RESULTS: str(scratch / "results")}


def standalone_nox(standalone: tuple[Path, Path], scratch: Path, *args: str) -> subprocess.CompletedProcess[str]:
    venv, clone = standalone
    return subprocess.run([str(venv / "bin" / "nox"), *args], capture_output=True, text=True, cwd=clone,
                          env=user_shell(scratch))


def test_a_nox_of_its_own_lists_the_sessions(standalone, tmp_path):
    done = standalone_nox(standalone, tmp_path, "-l")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    listed = done.stdout.splitlines()
    assert any(line.startswith("* stock-p0 ") for line in listed) and any(line.startswith("* diff ") for line in listed)


def test_a_nox_command_whose_script_environment_is_satisfied_says_nothing_about_it(standalone, tmp_path):
    standalone_nox(standalone, tmp_path, "-l")  # the first command may make the script environment
    again = standalone_nox(standalone, tmp_path, "-l")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "Requirement already satisfied" not in again.stdout + again.stderr, again.stdout[:2000]
    said = [line for line in (again.stderr + again.stdout).splitlines() if line and not line.startswith("nox > ")]
    assert said[0].startswith("nox sessions"), said[:5]  # nox's own lines, then straight to the list


def test_a_nox_of_its_own_runs_the_main_job_to_a_valid_verdict(standalone, tmp_path):
    done = standalone_nox(standalone, tmp_path, "-s", "stock-p0", "cinderx-jit-p0", "diff")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reports = tmp_path / "results" / "reports"
    report = json.loads((reports / "report.json").read_text())
    assert report["valid"] and report["problems"] == [] and report["summary"]["regressions"] == 0, report["problems"]
    [row] = report["modules"]
    assert row["module"] == "harness.smoke.test_smoke" and row["jit_compiled"] > 0
    assert (reports / "report.html").stat().st_size > 0  # the report extra, in the diff session's environment
    venv, _ = standalone
    untouched = subprocess.run([str(venv / "bin" / "python"), "-c", "import yaml"], capture_output=True)
    assert untouched.returncode != 0  # nox's own environment gained nothing


def test_a_second_nox_run_of_a_running_session_stops_with_one_line_and_leaves_it_alone(standalone, tmp_path):
    """While one nox run of stock-p0 holds its environment (this test holds it, as that run would), a
    second run must not reinstall the environment's packages under the first one's tests."""
    _, clone = standalone
    in_use = clone / ".nox" / "stock-p0.in-use"
    in_use.parent.mkdir(parents=True, exist_ok=True)
    with open(in_use, "w", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write(f"{os.getpid()}\n")
        held.flush()
        done = standalone_nox(standalone, tmp_path, "-s", "stock-p0")
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-3000:]
    [line] = [line for line in said.splitlines() if "another nox run of this session" in line]
    assert f"(pid {os.getpid()})" in line and "stock-p0" in line, line
    assert "environment ready" not in said and "harness run" not in said, said[-3000:]  # nothing installed, nothing run

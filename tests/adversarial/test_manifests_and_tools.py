"""Hostile manifests, data read by nox, an interpreter that is not Python, and the CI workflow.

Classes "hostile manifests", "bad data" (through nox) and "CI workflow" of docs/robustness.md. The
op-manifest loader's own hostile corpus (code in expressions, alias bombs, path traversal, pickle
payloads, huge shapes) is tests/op_manifests/test_opm_hostile.py; these are the encoding cases."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.configure.configurations import Configuration
from harness.configure.environments import ensure_interpreter
from harness.errors import HarnessError
from tests.adversarial.conftest import one_line

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "ci" / "github-actions.yml"

MANIFESTS = {  # file -> (bytes, the location and message of its one-line error)
    "latin.yaml": (b'model: latin\ndescription: "caf\xe9"\ncases: []\n', "latin.yaml:2:18: not UTF-8 text (byte 0xe9)"),
    "bell.yaml": (b'model: bell\ndescription: "ring\x07"\ncases: []\n',
                  "bell.yaml:2:19: invalid YAML: character 0x07 is not allowed"),
    "twice.yaml": (b"model: twice\ncases:\n  - name: a\n    op: torch.add\n    op: torch.sub\n",
                   "twice.yaml:5:5: case 'a': duplicate key 'op' in case"),
}


def test_manifests_with_bad_bytes_or_repeated_keys_are_one_line_each_naming_line_and_column(tmp_path):
    for name, (content, _) in MANIFESTS.items():
        (tmp_path / name).write_bytes(content)
    done = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "op_manifests"), "-p", "no:cacheprovider", "-q",
                           "--manifest-dir", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stdout
    lines = done.stdout.splitlines()
    for _, says in MANIFESTS.values():
        assert any(line.startswith(f"{tmp_path}/{says}") for line in lines), says


def test_nox_reads_bad_data_as_one_line(tmp_path):
    """`nox -l` loads the configurations to list the sessions: bad bytes are the harness's one line."""
    bad = tmp_path / "mine.yaml"
    bad.write_bytes(b'configurations:\n  mine:\n    python: "3.14"\n    description: "bell\x07"\n')
    done = subprocess.run([sys.executable, "-m", "nox", "-l"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "HARNESS_CONFIGURATIONS": str(bad)})
    assert done.returncode != 0 and done.stdout == ""
    assert one_line(done.stderr) == f"harness: error: {bad}:4: invalid YAML: character 0x07 is not allowed " \
                                    "(control characters are not allowed)"


def test_an_interpreter_that_is_not_python_is_one_line(tmp_path):
    true = shutil.which("true")
    with pytest.raises(HarnessError, match=f"'python': {true} is not a Python interpreter"):
        ensure_interpreter(Configuration(name="mine", python=true, origin="mine.yaml:3"))
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "p0",
                           "--python", true, "--results", tmp_path], capture_output=True, text=True)
    assert done.returncode == 3
    assert one_line(done.stderr) == (f"harness: error: interpreter {true} is not a Python the harness can use: "
                                     "asked to describe itself, it printed 'nothing'")
    assert list(tmp_path.iterdir()) == []


def tool(name: str) -> str:
    """A checker installed with the test extra, beside this interpreter (the nox tests session)."""
    found = shutil.which(name, path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert found, f"{name} is missing: install the test extra (pip install -e '.[test]')"
    return found


def test_the_ci_workflow_is_valid_against_the_github_workflow_schema():
    done = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "ok -- validation done" in done.stdout, done.stdout + done.stderr


def test_zizmor_finds_nothing_unsafe_in_the_ci_workflow():
    """Pinned actions, least permissions, no persisted credentials, no template injection (offline)."""
    done = subprocess.run([tool("zizmor"), "--offline", str(WORKFLOW)], capture_output=True, text=True)
    assert done.returncode == 0 and "No findings to report" in done.stdout + done.stderr, done.stdout + done.stderr

"""The harness as a user installs it: `pip install .` (not editable) into a fresh CPython 3.14
environment, the source copy deleted, then P0 from a folder that is not the repository. Every file
P0 runs (smoke, interop matrix, op manifests and their YAML data) must come from the installed package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.configure import environments
from harness.configure.configurations import load_catalog
from harness.protocol import Setting
from harness.record.store import RunDirectory
from tests.e2e.test_cinderx_end_to_end import ROOT, only_run

pytestmark = pytest.mark.e2e
IGNORED = shutil.ignore_patterns(".git", ".nox", ".venv", "results", "build", "*.egg-info", "__pycache__", ".pytest_cache")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of the stock configuration's interpreter, torch attached, the harness installed from a copy."""
    scratch = tmp_path_factory.mktemp("installed")
    catalog = load_catalog()
    python = environments.ensure_interpreter(catalog.get("stock"))
    venv = scratch / "venv"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True)
    environments.attach_layer(venv, environments.ensure_layer(python, (catalog.torch, *catalog.shared_packages)))
    source = scratch / "source"
    shutil.copytree(ROOT, source, ignore=IGNORED)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                           str(source)], capture_output=True, text=True, cwd=scratch)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shutil.rmtree(source)  # nothing may be read from the source tree from here on
    return venv / "bin" / "python"


def test_a_non_editable_install_runs_p0_from_the_installed_package(installed, tmp_path):
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", Setting.TIERS, Setting.CONFIGURATIONS, Setting.TESTS_DIR)}
    done = subprocess.run([str(installed), "-m", "harness", "run", "--config", "stock", "--tier", "p0",
                           "--results", str(tmp_path / "results")],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = subprocess.run([str(installed), "-c", "import harness, pathlib; print(pathlib.Path(harness.__file__).parent)"],
                          capture_output=True, text=True, check=True, cwd=tmp_path, env=env).stdout.strip()
    assert "site-packages" in site and not site.startswith(str(ROOT))
    record = RunDirectory(only_run(tmp_path / "results")).read_record()
    files = {file.module: file for file in record.files}
    assert set(files) == {"harness.interop.test_matrix", "op_manifests.test_model_ops",
                          "harness.smoke.test_compile_interop", "harness.smoke.test_python_patterns",
                          "harness.smoke.test_smoke"}
    assert all(file.exit_status == 0 and set(file.counts) == {"passed"} for file in files.values()), \
        {name: file.counts for name, file in files.items()}
    assert files["op_manifests.test_model_ops"].counts["passed"] >= 600  # every shipped manifest, data files too
    assert f"tests: {Path(site).parent}" in done.stdout

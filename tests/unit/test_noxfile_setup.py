"""What any nox needs to run the noxfile, and the README's commands that set it up.

The noxfile declares its own imports as PEP 723 inline metadata (nox installs them into a script
environment when the nox that reads the file lacks them); those requirements must be the project's
own, so a nox from pipx gets what `pip install -e .` would give. CI runs the README's test command.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from nox.project import load_toml
from packaging.requirements import Requirement

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def requirements(lines: list[str]) -> dict[str, str]:
    """Requirement name -> its version specifier."""
    return {(parsed := Requirement(line)).name.lower(): str(parsed.specifier) for line in lines}


def test_the_noxfile_declares_its_imports_as_the_project_pins_them():
    script = load_toml(str(ROOT / "noxfile.py"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = requirements(script["dependencies"])
    pinned = requirements(project["dependencies"] + project["optional-dependencies"]["drive"])
    assert declared["pyyaml"] == pinned["pyyaml"] and declared["nox"] == pinned["nox"]
    assert script["requires-python"] == project["requires-python"]


def readme_commands() -> list[str]:
    """The README's two commands: the code lines of its 'The two commands' section."""
    section = (ROOT / "README.md").read_text().split("## The two commands", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, "README: no bash block under 'The two commands'"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_ci_runs_the_readmes_test_command():
    main_job, tests = readme_commands()
    assert main_job.endswith("nox -s stock-p0 cinderx-jit-p0 diff") and tests.endswith("nox -s tests")
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == tests


def test_the_readmes_commands_install_nothing_into_the_python_that_runs_them():
    """A distribution's Python refuses installs (PEP 668): only a virtual environment of its own gets nox."""
    for command in readme_commands():
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install ")
        assert "python3 -m pip" not in command

"""`python -m harness` starts each command without the other commands' modules (start-up cost)."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

HEAVY = ("rich", "markdown_it", "junitparser", "yaml", "jinja2", "matplotlib", "harness.compare.diff", "harness.run.runner")


def loaded_after(statement: str) -> set[str]:
    """Modules loaded in a fresh interpreter after `statement`."""
    code = f"import sys\n{statement}\nprint(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_the_argument_parser_loads_no_command_machinery():
    loaded = loaded_after("from harness.cli import build_parser\nbuild_parser()")
    assert not {name for name in loaded if name.startswith(HEAVY)}


def test_run_loads_no_comparison_or_report_modules():
    loaded = loaded_after("from harness.cli import main\nmain(['run', '--config', 'nope', '--tier', 'p0'])")
    assert "harness.run.runner" in loaded
    assert not {name for name in loaded if name.startswith(("rich.markdown", "markdown_it", "harness.compare.diff",
                                                            "harness.report.output"))}

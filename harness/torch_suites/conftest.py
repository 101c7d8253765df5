"""A bundled module run by hand as a script (`python -bb FILE --use-pytest`): torch's `run_tests()`
passes `--use-main-module` (and `--junit-xml-reruns` when `CI` is set), which PyTorch's own
test/conftest.py defines; the harness's one definition of them applies here too."""

import pytest

from harness.run.script_mode import add_options, pytest_pycollect_makemodule  # noqa: F401 (a hook)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)

"""A bundled module run by hand as a script (`python -bb FILE --use-pytest`): torch's `run_tests()`
passes `--use-main-module`, which PyTorch's own test/conftest.py defines; the harness's one
definition of it applies here too."""

import pytest

from harness.run.main_module import add_option, pytest_pycollect_makemodule  # noqa: F401 (a hook)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_option(parser)

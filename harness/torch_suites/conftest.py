"""pytest options that torch's `run_tests()` passes when a bundled module runs as a script.

`python -bb FILE --use-pytest` makes `run_tests()` call pytest with `--use-main-module`, an option
that PyTorch's own test/conftest.py registers; this folder has no PyTorch conftest, so it is
accepted here, and pytest collects the file by importing it as it does under `python -m pytest`
(the same test ids and outcomes either way).
"""

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--use-main-module", action="store_true",
                     help="accepted from torch's run_tests(); collection imports the file as usual")

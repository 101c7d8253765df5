"""`--use-main-module`, which PyTorch's `run_tests()` passes to pytest when a test file runs as a
script (`python FILE --use-pytest`): collect the tests from the module already running as
`__main__` instead of importing the file a second time. PyTorch's own test/conftest.py defines the
option; this is the one definition for every folder that lacks it (the harness plugin adds it after
the conftests load; the bundled torch suites' conftest adds it for a by-hand run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

OPTION = "--use-main-module"


def add_option(parser: pytest.Parser) -> None:
    """Define the option unless a conftest (PyTorch's) already did: its meaning then applies."""
    try:
        parser.addoption(OPTION, action="store_true", help="collect the tests of the script running as __main__")
    except ValueError:
        pass


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    main = sys.modules.get("__main__")
    if not parent.config.getoption(OPTION, default=False) or getattr(main, "__file__", None) is None \
            or Path(main.__file__).resolve() != module_path.resolve():
        return None
    module = pytest.Module.from_parent(parent, path=module_path)
    module._getobj = lambda: main  # collect from the running script, not a second import
    return module

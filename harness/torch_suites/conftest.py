"""What PyTorch's own `test/conftest.py` gives a test file run as a script, for our suite modules.

PyTorch's CI runs `python test_x.py --use-pytest`: `run_tests()` starts pytest on the file with
`--use-main-module`, and PyTorch's conftest then collects the tests from the module already
running as `__main__`, instead of importing the file a second time. Our modules run the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--use-main-module", action="store_true",
                     help="collect the tests of the file running as __main__ (python FILE --use-pytest)")


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    main = sys.modules.get("__main__")
    if not parent.config.getoption("--use-main-module") or getattr(main, "__file__", None) is None \
            or Path(main.__file__).resolve() != module_path.resolve():
        return None
    module = pytest.Module.from_parent(parent, path=module_path)
    module._getobj = lambda: main  # the module object pytest collects from: the running script
    return module

"""The two options PyTorch's `run_tests()` passes to pytest when a test file runs as a script
(`python FILE --use-pytest`), which PyTorch's own test/conftest.py defines: `--use-main-module`
(collect the tests from the module already running as `__main__` instead of importing the file a
second time) and, when the `CI` variable is set, `--junit-xml-reruns=PATH` (the JUnit report
PyTorch's CI reads). Without them a script run dies in pytest's argument parser. This is the one
definition for every folder that lacks PyTorch's conftest (the harness plugin adds them after the
conftests load; the bundled torch suites' conftest adds them for a by-hand run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

USE_MAIN_MODULE = "--use-main-module"
JUNIT_XML_RERUNS = "--junit-xml-reruns"


def add_options(parser: pytest.Parser) -> None:
    """Define each option unless a conftest or plugin (PyTorch's) already did, in any group: its meaning
    then applies."""
    _add(parser, USE_MAIN_MODULE, action="store_true", help="collect the tests of the script running as __main__")
    # pytest's own --junitxml writes the report: the same destination, PyTorch's spelling.
    _add(parser, JUNIT_XML_RERUNS, action="store", dest="xmlpath", metavar="PATH", default=None,
         help="write a JUnit XML report to PATH (PyTorch's name for --junitxml)")


def _add(parser: pytest.Parser, name: str, **spec: object) -> None:
    if name not in defined_options(parser):
        parser.addoption(name, **spec)


def defined_options(parser: pytest.Parser) -> set[str]:
    """Every option name defined so far, in any group: pytest itself only refuses a name twice in one
    group, and argparse then dies on the clash when the command line is parsed (PyTorch's conftest
    puts its options in named groups, the harness in pytest's anonymous one)."""
    groups = [parser._anonymous, *parser._groups]  # pytest 8 keeps the unnamed group apart, pytest 9 lists it
    return {name for group in groups for option in group.options for name in option.names()}


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    main = sys.modules.get("__main__")
    if not parent.config.getoption(USE_MAIN_MODULE, default=False) or getattr(main, "__file__", None) is None \
            or Path(main.__file__).resolve() != module_path.resolve():
        return None
    module = pytest.Module.from_parent(parent, path=module_path)
    module._getobj = lambda: main  # collect from the running script, not a second import
    return module

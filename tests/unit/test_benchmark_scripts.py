"""The benchmark scripts are not run by the test suite (they time things), but they must keep up
with the code they import: each one loads, and a rename elsewhere fails here, not in a user's hands."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(path for path in BENCHMARKS.glob("*.py") if path.name != "measure.py")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_benchmark_script_loads(script: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"

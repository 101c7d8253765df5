"""The census in a real interpreter: the installed torch's definitions, counted in a child process,
and a census that cannot run makes a run say so instead of failing it."""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from harness.protocol import Setting
from harness.record.store import RunDirectory
from harness.run.coverage import definitions, record_coverage
from tests.conftest import write_run

pytestmark = pytest.mark.integration


def test_the_census_counts_the_installed_torch_once_then_reads_its_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(Setting.CACHE, str(tmp_path))
    import torch

    found = definitions(sys.executable, {}, torch.__version__, "test")
    counts = found.defined()
    assert sum(counts.values()) > 40_000 and counts["_dynamo"] > 3_000 and counts["nn"] > 1_000
    assert found.modules["nn/modules/linear.py"] == "torch.nn.modules.linear"
    assert definitions("/nonexistent/python", {}, torch.__version__, "test") == found  # cached: not run again


def test_a_census_replaced_on_disk_is_read_anew_not_served_from_an_earlier_read(tmp_path, monkeypatch):
    """Reports read the census once per process (it is megabytes of JSON); a file written again, as
    after deleting it to count again, must still be what the next read sees, and a broken one the
    usual one-line error."""
    import json

    from harness.errors import HarnessError
    from harness.run.coverage import census_path

    monkeypatch.setenv(Setting.CACHE, str(tmp_path))
    path = census_path("9.9.9", "test")
    path.parent.mkdir(parents=True)

    def census(*qualnames: str) -> str:
        definitions_ = [[line, name] for line, name in enumerate(qualnames, 1)]
        return json.dumps({"modules": {"torch.fake": {"file": "fake.py", "subpackage": "", "definitions": definitions_}}})

    path.write_text(census("f"), encoding="utf-8")
    assert definitions("/nonexistent/python", {}, "9.9.9", "test").defined() == {"": 1}
    path.write_text(census("f", "g", "h.<locals>.i"), encoding="utf-8")
    assert definitions("/nonexistent/python", {}, "9.9.9", "test").defined() == {"": 3}
    path.write_text("{", encoding="utf-8")
    with pytest.raises(HarnessError, match="not a census of torch's functions"):
        definitions("/nonexistent/python", {}, "9.9.9", "test")


def test_a_census_that_cannot_run_leaves_the_run_without_coverage_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv(Setting.CACHE, str(tmp_path / "cache"))
    run = RunDirectory(write_run(tmp_path / "results", "cinderx-jit", {"test_a": "passed"}, started="2026-11-01T00:00:00",
                                 threshold=1))
    record = replace(run.read_record(), python="/nonexistent/python")
    announced = record_coverage(run, record, {})
    assert announced.startswith("JIT coverage not recorded: ") and "/nonexistent/python" in announced
    assert not run.coverage.exists()

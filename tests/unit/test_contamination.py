"""Seed 000's falsifier: a `jit: absent` run in which CinderX is importable is contaminated."""

from harness.compare.diff import compare
from harness.compare.sides import load_side

import pytest

pytestmark = pytest.mark.integration


def test_importable_cinderx_marks_every_file_contaminated(run_outcomes, tmp_path):
    fake = tmp_path / "site"
    (fake / "cinderx").mkdir(parents=True)
    (fake / "cinderx" / "__init__.py").write_text("")
    run = run_outcomes("test_outcomes.py::test_passes", env={"PYTHONPATH": str(fake)})
    record = run.read_record()
    assert "cinderx importable from" in record.files[0].contamination
    comparison = compare(load_side(run.root), load_side(run.root))
    assert not comparison.valid
    assert any("contaminated" in problem for problem in comparison.problems)
    assert comparison.exit_status == 2


def test_clean_absent_run_is_not_contaminated(run_outcomes):
    run = run_outcomes("test_outcomes.py::test_passes")
    assert run.read_record().files[0].contamination is None

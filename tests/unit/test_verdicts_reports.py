"""Reports users read: the threshold sweep, the merged JUnit XML, relaxed checks said out loud."""

import json

from junitparser import JUnitXml

from harness.cli import main
from tests.conftest import markdown_report
from harness.record.junit import read_results
from tests.unit.test_verdicts_identity import make_run

import pytest

pytestmark = pytest.mark.unit

HEADER = "| Module | Baseline P/F/E/S/XF | Candidate P/F/E/S/XF | Compiled | Regressions |"
PASSING = {"test_ops": {"test_add": "passed", "test_mul": "passed"}}


def sweep_runs(root):
    make_run(root, "stock", None, PASSING)
    make_run(root, "cinderx-jit", 1000, PASSING, compiled=700)
    make_run(root, "cinderx-jit", 100, PASSING, compiled=2400)
    make_run(root, "cinderx-jit", 1, {"test_ops": {"test_add": "crashed", "test_mul": "passed"}}, compiled=7800)
    return sorted(root.iterdir(), key=lambda run: json.loads((run / "run.json").read_text())["started"])


def test_several_thresholds_get_a_sweep_table_one_column_each(tmp_path, capsys):
    stock, at_1000, at_100, at_1 = sweep_runs(tmp_path / "results")
    status, out = markdown_report(["diff", str(stock), str(at_1), str(at_100), str(at_1000)], tmp_path / "reports")
    assert status == 1
    assert "## Threshold sweep: cinderx-jit vs stock (tier p1)" in out
    assert "| Module | Baseline P/F/E/S/XF | threshold 1 | threshold 100 | threshold 1000 |" in out
    assert ("| test_ops | 2/0/0/0/0 | 1/0/0/0/0 (+1 crashed) · 7,800 · **1** | 2/0/0/0/0 · 2,400 · 0 | "
            "2/0/0/0/0 · 700 · 0 |") in out
    assert out.count(HEADER) == 3  # then each comparison in full


def test_diff_latest_sweeps_the_thresholds_found_under_the_results_root(tmp_path, capsys):
    sweep_runs(tmp_path / "results")
    assert main(["diff-latest", "--results", str(tmp_path / "results"), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(c["configuration"], c["threshold"], c["summary"]["regressions"]) for c in report] == [
        ("cinderx-jit", 1, 1), ("cinderx-jit", 100, 0), ("cinderx-jit", 1000, 0)]


def test_one_candidate_gets_no_sweep(tmp_path, capsys):
    stock, at_1000, _, _ = sweep_runs(tmp_path / "results")
    status, out = markdown_report(["diff", str(stock), str(at_1000)], tmp_path / "reports")
    assert status == 0
    assert "Threshold sweep" not in out and out.count(HEADER) == 1
    assert out.startswith("## cinderx-jit (threshold 1000) vs stock (tier p1)\n")


def test_merged_junit_holds_every_side_with_its_configuration(tmp_path, capsys):
    stock, at_1000, _, at_1 = sweep_runs(tmp_path / "results")
    merged = tmp_path / "merged.xml"
    assert main(["diff", str(stock), str(at_1), str(at_1000), "--merged-junit", str(merged)]) == 1
    suites = list(JUnitXml.fromfile(str(merged)))
    assert [s.name for s in suites] == ["stock: test_ops", "cinderx-jit (threshold 1): test_ops",
                                        "cinderx-jit (threshold 1000): test_ops"]
    assert [{p.name: p.value for p in s.properties()}["role"] for s in suites] == ["baseline", "candidate", "candidate"]
    assert suites[1].errors == 1 and suites[0].errors == 0
    assert [r.outcome for r in read_results(merged) if r.name == "test_add"] == ["passed", "crashed", "passed"]


def test_interpreter_mismatch_is_invalid_unless_allowed_and_then_said(tmp_path, capsys):
    stock = make_run(tmp_path / "r", "stock", None, PASSING)
    other = make_run(tmp_path / "r", "cinderx-jit", 1000, PASSING, python="3.14.1")
    assert main(["diff", str(stock), str(other)]) == 2
    assert "interpreter versions differ: baseline 3.14.0, candidate 3.14.1" in capsys.readouterr().out
    assert main(["diff", str(stock), str(other), "--allow-interpreter-mismatch"]) == 0
    assert "allowed by --allow-interpreter-mismatch" in capsys.readouterr().out

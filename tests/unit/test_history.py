"""History over runs: an injected flaky test's flip rate and Wilson bound, new since / recovered /
persistent failures, slower tests, and the flaky list that `diff --confirm` consults."""

import json
import math

import pytest

from harness.cli import main
from tests.conftest import markdown_report
from harness.compare.history import history, wilson_lower_bound
from harness.record.ingest import ingest
from tests.conftest import FIXTURES, run_fixtures, write_run


@pytest.mark.unit
def test_wilson_lower_bound():
    assert wilson_lower_bound(0, 0) == 0.0
    assert math.isclose(wilson_lower_bound(3, 3), 0.4385, abs_tol=1e-4)
    assert math.isclose(wilson_lower_bound(5, 10), 0.2366, abs_tol=1e-4)
    assert wilson_lower_bound(1, 29) < 0.01 < wilson_lower_bound(29, 29)


@pytest.mark.integration
def test_an_injected_flaky_test_shows_its_flip_rate_and_bound(tmp_path, capsys):
    """test_half_the_time fails on every other call, so in every other run: four real runs."""
    results = tmp_path / "results"
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "HARNESS_FAULT": "flaky", "HARNESS_FLAKY_STATE": str(tmp_path / "calls")}
    runs = [run_fixtures(results, ("test_flaky.py",), env=env, tests_dir=FIXTURES / "verdicts").root for _ in range(4)]
    assert main(["history", "--results", str(results), "--format", "json"]) == 0
    [series] = json.loads(capsys.readouterr().out)["series"]
    assert [run["directory"] for run in series["runs"]] == [str(run.resolve()) for run in runs]
    [flaky] = series["flaky"]
    assert (flaky["test"], flaky["outcomes"]) == ("test_flaky::test_half_the_time", ["failed", "passed"] * 2)
    assert (flaky["flips"], flaky["transitions"], flaky["flip_rate"]) == (3, 3, 1.0)
    assert math.isclose(flaky["lower_bound"], 0.4385, abs_tol=1e-4)
    assert [t["test"] for t in series["latest"]["recovered"]] == ["test_flaky::test_half_the_time"]
    assert main(["history", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert ("test_flaky::test_half_the_time: timeline F P F P · flips 3/3 · flip rate 1.00 · lower bound 0.44"
            in " ".join(out.split()))  # laid out by rich, one item per test: the id is never cut short
    assert "|" not in out and "`" not in out and "## " not in out  # no Markdown markup in a terminal or a log
    assert all(run.name in out for run in runs)


@pytest.mark.unit
def test_new_since_recovered_persistent_and_slower(tmp_path):
    results = tmp_path / "results"
    timeline = {  # per test, its outcome in four nightly runs
        "test_regressed": "PPFF", "test_recovered": "FFFP", "test_broken": "FFFF", "test_steady": "PPPP",
        "test_new": "SPPF", "test_slow": "PPPP",
    }
    durations = [{"test_slow": 0.5}, {"test_slow": 0.52}, {"test_slow": 0.49}, {"test_slow": 2.0}]
    runs = [write_run(results, "cinderx-jit", {test: {"P": "passed", "F": "failed", "S": "skipped"}[outcomes[night]]
                                               for test, outcomes in timeline.items()},
                      started=f"2026-11-0{night + 1}T00:00:00", threshold=1000, durations=durations[night])
            for night in range(4)]
    ingest(results / "harness.db", runs)
    [series] = history(results / "harness.db").series
    pair = series.latest
    assert (pair.earlier.name, pair.later.name) == (runs[2].name, runs[3].name)
    assert [(t.test.split("::")[1], t.failing_since) for t in pair.new_failures] == [
        ("test_new", runs[3].name)]
    assert [(t.test.split("::")[1], t.recovered_in) for t in pair.recovered] == [("test_recovered", runs[3].name)]
    assert [(t.test.split("::")[1], t.failing_since) for t in pair.persistent] == [
        ("test_broken", runs[0].name), ("test_regressed", runs[2].name)]
    [slow] = pair.slower
    assert (slow.test, slow.duration, slow.usual, slow.runs) == ("test_mod.TestX::test_slow", 2.0, 0.5, 3)
    assert series.flaky == ()  # one failure and one fix are changes, not flakiness
    assert [run.counts for run in series.runs][-1] == {"failed": 3, "passed": 3}
    assert [run.counts for run in series.runs][0] == {"failed": 2, "passed": 3, "skipped": 1}


@pytest.mark.unit
def test_confirm_labels_a_regression_that_is_flaky_in_history_with_its_evidence(tmp_path, capsys):
    results = tmp_path / "results"
    flips = ["passed", "failed", "passed", "failed", "passed"]
    for night, outcome in enumerate(flips):
        write_run(results, "cinderx-jit", {"test_flaky": outcome, "test_real": "passed"},
                  started=f"2026-11-0{night + 1}T00:00:00", threshold=1000)
    baseline = write_run(results, "stock", {"test_flaky": "passed", "test_real": "passed"}, started="2026-11-06T00:00:00")
    candidate = write_run(results, "cinderx-jit", {"test_flaky": "failed", "test_real": "failed"},
                          started="2026-11-06T00:00:01", threshold=1000)
    assert main(["db", "ingest", str(results), "--results", str(results)]) == 0
    capsys.readouterr()
    status, out = markdown_report(["diff", str(baseline), str(candidate), "--confirm", "1"], tmp_path / "reports")
    assert status == 1
    assert "Regressions: **1**" in out and "flaky: 1" in out and "`test_mod.TestX::test_real`: passed → **failed**" in out
    assert "Failing tests per run (run history), oldest first: 0 → 1 → 0 → 1 → 0 → 2" in out
    capsys.readouterr()  # the first screen
    assert main(["diff", str(baseline), str(candidate), "--confirm", "1", "--format", "json"]) == 1
    [flaky] = json.loads(capsys.readouterr().out)["flaky"]
    assert flaky["test"] == "test_mod.TestX::test_flaky"
    assert "flaky in history: cinderx-jit (threshold 1000) p1: 5 flips in 6 runs (flip rate 1.00, 95% lower bound 0.57): " \
           "passed failed passed failed passed failed" in json.dumps(flaky)

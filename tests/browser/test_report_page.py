"""report.html as a person uses it, in headless Chromium: the verdict, the heatmap and charts, the
counts, search and filters, copy buttons, paging; for each kind of report a real diff makes.

The reports come from real harness runs of the fixture files (a valid diff with confirmed, flaky
and order-dependent regressions; an invalid one, whose JIT could not start) and from the run and
pyperf data the other tests write (a threshold sweep; a diff with a perf comparison beside it).
Known regressions, culprits and run history are added as model parts, the way their producers
hand them to the report. A screenshot of each kind is saved under test-output/browser/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.compare import known
from harness.compare.diff import compare
from harness.compare.sides import load_side
from harness.report import html
from harness.record.culprits import Culprit, CulpritFunction, CulpritStatus
from harness.report.model import History, Since, Trend, TrendPoint, build
from tests.browser.conftest import harness
from tests.conftest import FIXTURES, run_fixtures
from tests.unit.test_perf_report import run_directory, suite_file
from tests.unit.test_verdicts_identity import make_run
from tests.unit.test_verdicts_reports import PASSING, sweep_runs

pytestmark = [pytest.mark.integration, pytest.mark.browser]

FILES = ("test_ops.py", "test_crash.py", "test_flaky.py", "test_order.py")
QUIET = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
FAULTS = "wrong_op,crash,flaky,pollute,skip,fixed"
FORMATS = ("--format", "md", "json", "html")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each kind of report: a folder with report.md, report.json and report.html."""
    root = tmp_path_factory.mktemp("reports")

    def run(name: str, env: dict[str, str], jit: str = "absent") -> Path:
        return run_fixtures(root / name, FILES, env={**QUIET, **env}, jit=jit, tests_dir=FIXTURES / "verdicts").root

    baseline = run("baseline", {})
    faulty = run("faulty", {"HARNESS_FAULT": FAULTS, "HARNESS_FLAKY_STATE": str(root / "flaky-calls")})
    assert harness("diff", baseline, faulty, "--confirm", "2", *FORMATS, "--out", root / "valid") == 1
    assert harness("diff", baseline, run("no-jit", {}, jit="on"), *FORMATS, "--out", root / "invalid") == 2
    stock, at_1000, at_100, at_1 = sweep_runs(root / "sweep-runs")
    assert harness("diff", stock, at_1, at_100, at_1000, *FORMATS, "--out", root / "sweep") == 1
    perf_root = root / "perf-runs"
    make_run(perf_root, "stock", None, PASSING)
    make_run(perf_root, "cinderx-jit", 1000, {"test_ops": {"test_add": "failed", "test_mul": "passed"}}, compiled=700)
    for name, factor, jit, threshold in (("stock", 1.0, "absent", None), ("cinderx-jit", 0.8, "on", 1000)):
        suite = suite_file(root / f"{name}.json", factor=factor, jit=jit, compiled=120 if threshold else 0,
                           threshold=threshold)
        run_directory(perf_root, f"perf-{name}", suite, configuration=name, jit=jit, threshold=threshold,
                      started=f"2026-11-22T01:00:0{len(name) % 10}")
    assert harness("diff-latest", "--results", perf_root, *FORMATS, "--out", root / "perf") == 1
    (root / "annotated").mkdir()
    (root / "annotated" / "report.html").write_text(html.render(annotated(baseline, faulty)), encoding="utf-8")
    return {kind: root / kind for kind in ("valid", "invalid", "sweep", "perf", "annotated")}


def annotated(baseline: Path, candidate: Path):
    """The valid diff with the optional parts other producers add: known regressions, a culprit, history."""
    comparison = compare(load_side(baseline), load_side(candidate))
    label = comparison.candidate
    entries = baseline.parent.parent / "known.yaml"
    entries.write_text("known_regressions:\n  fixture:\n"
                       "    - {test: 'test_ops::test_add_is_right', reason: 'wrong rounding in add, upstream bug',"
                       " link: 'https://example.org/1'}\n"
                       "    - {test: 'test_ops::test_mul_is_right', reason: fixed by the last release}\n")
    comparison = known.classify(comparison, known.load(entries), load_side(candidate).results)
    culprit = Culprit(CulpritStatus.FOUND, (CulpritFunction("test_crash:test_crashes", "test_crash.py", 7,
                                                            inlined=("test_crash:helper",)),),
                      passes=("InlineFunctionCalls",), jit_list="culprits/test_crashes.jitlist",
                      reproducer="env CINDERX_JIT_LIST_FILE=culprit.jitlist sh -c 'pytest test_crash.py::test_crashes'",
                      probes=9, reruns=18, seconds=12.0)
    trend = Trend(label, tuple(TrendPoint(f"run {n}", f"11-2{n}", regressions, flaky)
                               for n, (regressions, flaky) in enumerate(((0, 1), (2, 1), (4, 0)), 1)))
    history = History(trends=(trend,), new_since=(Since(label, "test_crash::test_crashes", "run 2"),),
                      recovered=(Since(label, "test_ops::test_mul_is_right", "run 3"),))
    return build([comparison], culprits={(label, "test_crash::test_crashes"): culprit}, history=history)


def data(folder: Path):
    return json.loads((folder / "report.json").read_text())


def rows(opened) -> list[str]:
    return opened.page.locator("#findings-body tr code[data-field=test]").all_inner_texts()


def shown_counts(opened) -> dict[str, int]:
    counts = {}
    for item in opened.page.locator("#verdict [data-count]").all():
        counts[item.get_attribute("data-count")] = int(item.locator("strong").inner_text())
    return counts


def test_valid_report_shows_the_verdict_counts_heatmap_and_every_finding(reports, open_report):
    report = data(reports["valid"])
    opened = open_report(reports["valid"] / "report.html")
    page = opened.page
    assert page.locator("#verdict").get_attribute("data-valid") == "true"
    assert page.locator("#verdict h1").inner_text() == "Valid comparison: 3 regressions, 3 confirmed"
    summary = report["summary"]
    assert shown_counts(opened) == {"regressions": summary["regressions"], "confirmed": summary["confirmed"],
                                    "fixes": summary["fixes"], "flaky": summary["flaky"], "new": summary["new"],
                                    "missing": summary["missing"], "known": summary["known_regressions"]} == {
        "regressions": 3, "confirmed": 3, "fixes": 0, "flaky": 1, "new": 0, "missing": 0, "known": 0}
    cells = page.locator("table.heatmap td.heat")
    assert cells.count() == len(report["modules"]) == 4
    regressions = {m["module"]: m["regressions"] for m in report["modules"]}
    heat = {cell.get_attribute("data-module"): int(cell.get_attribute("data-regressions")) for cell in cells.all()}
    assert heat == regressions
    assert page.locator("table.heatmap tbody th").first.inner_text() != "test_flaky"  # worst modules first
    assert sorted(rows(opened)) == sorted([r["test"] for r in report["regressions"]] + [f["test"] for f in report["flaky"]])
    assert page.locator("#findings-body tr").first.locator("[data-field=status]").inner_text() == "confirmed"
    for absent in ("#known", "#perf", "#sweep", "th:text('culprit')"):
        assert page.locator(absent).count() == 0, absent  # parts nobody produced are left out
    assert page.locator("#history svg").count() == 0  # one run per configuration in the database: no trend yet
    assert page.locator("details.changes summary").all_inner_texts() == ["skip changes (1)", "xfail drift (1)"]
    opened.screenshot("valid")
    markdown = (reports["valid"] / "report.md").read_text()
    assert "### Top regressions (3 of 3)" in markdown and "report.html" in markdown


def test_search_box_and_filters_leave_the_matching_rows(reports, open_report):
    opened = open_report(reports["valid"] / "report.html")
    page = opened.page
    page.fill("#search", "scalars are NOT close")
    assert rows(opened) == ["test_ops::test_add_is_right"]
    assert page.locator("#findings-shown").inner_text() == "1 of 4 shown"
    page.fill("#search", "")
    page.select_option("select[data-filter=status]", "flaky")
    assert rows(opened) == ["test_flaky::test_half_the_time"]
    page.select_option("select[data-filter=status]", "")
    page.select_option("select[data-filter=classification]", "crash (SIGABRT)")
    assert rows(opened) == ["test_crash::test_crashes"]
    page.select_option("select[data-filter=classification]", "")
    page.locator("table.heatmap td.heat[data-module=test_order]").click()  # a heatmap cell lists its module
    assert rows(opened) == ["test_order::test_victim"]
    assert page.locator("select[data-filter=module]").input_value() == "test_order"
    page.fill("#search", "no such test")
    assert rows(opened) == [] and page.locator("#findings-shown").inner_text() == "0 of 4 shown"


def test_copy_button_puts_the_replay_command_on_the_clipboard(reports, open_report):
    replays = {r["test"]: (r["replay"], r["baseline_replay"]) for r in data(reports["valid"])["regressions"]}
    opened = open_report(reports["valid"] / "report.html")
    page = opened.page
    page.fill("#search", "test_victim")
    row = page.locator("#findings-body tr").first
    row.locator("button[data-copy=replay]").click()
    page.wait_for_selector("#findings-body button[data-copy=replay][data-copied=yes]")
    assert page.evaluate("navigator.clipboard.readText()") == replays["test_order::test_victim"][0]
    row.locator("button[data-copy=baseline_replay]").click()
    page.wait_for_function("async (expected) => await navigator.clipboard.readText() === expected",
                           arg=replays["test_order::test_victim"][1])
    row.locator("summary").click()  # the failure message folds open on click
    assert "state left behind by an earlier test" in row.locator("pre[data-field=detail]").inner_text()
    assert row.locator("[data-field=polluters]").inner_text() == "fails only after: test_order.py::test_pollutes"


def test_invalid_report_lists_every_problem_and_no_verdict(reports, open_report):
    report = data(reports["invalid"])
    opened = open_report(reports["invalid"] / "report.html")
    page = opened.page
    assert page.locator("#verdict").get_attribute("data-valid") == "false"
    assert page.locator("#verdict h1").inner_text() == f"INVALID comparison: no verdict ({len(report['problems'])} problems)"
    assert page.locator("#problems li").all_inner_texts() == report["problems"]
    assert any("cannot import cinderx.jit" in p for p in report["problems"])
    assert page.locator("table.heatmap td.heat").count() == len(report["modules"]) == 4
    opened.screenshot("invalid")


def test_sweep_report_draws_the_sweep_chart_and_one_heatmap_column_per_threshold(reports, open_report):
    opened = open_report(reports["sweep"] / "report.html")
    page = opened.page
    assert page.locator("table.heatmap thead th").all_inner_texts() == [
        "module", "cinderx-jit (threshold 1)", "cinderx-jit (threshold 100)", "cinderx-jit (threshold 1000)"]
    assert [c.get_attribute("data-regressions") for c in page.locator("table.heatmap td.heat").all()] == ["1", "0", "0"]
    chart = page.locator("#sweep figure svg")
    assert chart.count() == 1 and chart.bounding_box()["height"] > 100
    assert "functions JIT-compiled" in chart.text_content() and "regressions" in chart.text_content()
    assert page.locator("#modules-body td").all_inner_texts()[1:4] == ["1/0/0/0/0 (+1 crashed)", "7,800", "1"]
    opened.screenshot("sweep")


def test_perf_report_draws_the_forest_plot_with_its_intervals(reports, open_report):
    perf = data(reports["perf"])["perf"]
    opened = open_report(reports["perf"] / "report.html")
    page = opened.page
    assert perf["candidates"] == ["cinderx-jit (threshold 1000)"] and perf["valid"]
    chart = page.locator("#perf figure svg")
    assert chart.count() == 1
    for benchmark in perf["benchmarks"]:
        assert benchmark["name"] in chart.text_content()
    table = page.locator("#perf table tbody tr")
    assert table.count() == len(perf["benchmarks"]) + len(perf["geometric_means"])
    mean = perf["geometric_means"]["all"][0]
    assert f"{mean['speedup']:.2f}x [" in table.last.inner_text() and mean["verdict"] == "faster"
    opened.screenshot("perf")


def test_known_culprit_and_history_parts_show_where_they_belong(reports, open_report):
    opened = open_report(reports["annotated"] / "report.html")
    page = opened.page
    assert shown_counts(opened)["known"] == 1
    page.select_option("select[data-filter=status]", "known")
    assert rows(opened) == ["test_ops::test_add_is_right"]
    assert page.locator("#findings-body .badge.known").inner_text() == "known: wrong rounding in add, upstream bug"
    page.select_option("select[data-filter=status]", "")
    page.fill("#search", "InlineFunctionCalls")  # culprits are searchable
    crash = page.locator("#findings-body tr").first
    assert crash.locator("code[data-field=culprit]").inner_text() == "test_crash:test_crashes (test_crash.py:7)"
    assert crash.locator("[data-field=culprit_inlined]").inner_text() == "inlined: test_crash:test_crashes ← test_crash:helper"
    assert crash.locator("[data-field=culprit_passes]").inner_text() == "HIR passes that matter: InlineFunctionCalls"
    assert crash.locator("[data-field=culprit_note]").inner_text() == "found: 0 candidates, 9 probes (18 reruns), 12 s"
    assert crash.locator("[data-field=culprit_jit_list]").inner_text() == "JIT list: culprits/test_crashes.jitlist"
    assert crash.locator("[data-field=new_since]").inner_text() == "new since run 2"
    crash.locator("button[data-copy=culprit_reproducer]").click()
    page.wait_for_function("async () => (await navigator.clipboard.readText()).includes('CINDERX_JIT_LIST_FILE=culprit.jitlist')")
    assert page.locator("#known-fixed + p + table tbody tr td code").all_inner_texts() == ["test_ops::test_mul_is_right"]
    assert page.locator("#history figure svg").count() == 1
    assert page.locator("#history table code").all_inner_texts() == ["test_ops::test_mul_is_right"]
    opened.screenshot("annotated")


def test_a_long_table_pages_fifty_rows_at_a_time(tmp_path, open_report):
    """120 regressions: never more than one page of rows in the document; search covers every page."""
    from tests.unit.test_report_model import result, side

    names = [f"test_{i:03d}" for i in range(120)]
    comparison = compare(side("stock", [result("test_big", name, "passed") for name in names]),
                         side("cinderx-jit", [result("test_big", name, "failed", f"AssertionError: {name}")
                                              for name in names], "on", 1000))
    (tmp_path / "report.html").write_text(html.render(build([comparison])), encoding="utf-8")
    opened = open_report(tmp_path / "report.html")
    page = opened.page
    assert page.locator("#findings-body tr").count() == html.PAGE_ROWS
    pager = page.locator('[data-pager="findings"]')
    assert pager.locator("span").inner_text() == "page 1 of 3"
    pager.locator("button", has_text="next").click()
    assert rows(opened)[0] == "test_big::test_050" and pager.locator("span").inner_text() == "page 2 of 3"
    pager.locator("button", has_text="next").click()
    assert len(rows(opened)) == 20 and pager.locator("button", has_text="next").is_disabled()
    page.fill("#search", "test_big::test_007")
    assert rows(opened) == ["test_big::test_007"] and pager.is_hidden()

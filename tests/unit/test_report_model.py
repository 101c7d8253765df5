"""The report model and its three renderers: one set of facts, each optional part shown only when
given, the JSON contract kept, the HTML page escaped and self-contained."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.compare import known
from harness.compare.diff import compare
from harness.record.model import FileRecord, RunRecord, TestResult
from harness.compare.sides import Side
from harness.report import html, json_report, markdown
from harness.record.culprits import Culprit, CulpritFunction, CulpritStatus
from harness.report.model import History, Since, Status, Trend, TrendPoint, build

pytestmark = pytest.mark.unit


def result(module: str, name: str, outcome: str, message: str = "") -> TestResult:
    return TestResult(module, name, outcome, module, message=message,
                      nodeid=f"{module}.py::T::{name}", replay=f"pytest {module}.py::T::{name}")


def side(label: str, results: list[TestResult], jit: str = "absent", threshold: int | None = None) -> Side:
    modules = sorted({r.module for r in results})
    files = tuple(FileRecord(f"{m}.py", m, 0, None, 1.0, {}, jit={"compiled": 40} if jit == "on" else None)
                  for m in modules)
    record = RunRecord(configuration={"name": label, "jit": jit}, tier="p1", threshold=threshold, interpreter={},
                       versions={"torch": "2.14.1", "python": "3.14.0"}, fingerprint={}, tests_dir="/t",
                       test_sources={"hash": "h"}, started="t", status="complete", files=files)
    return Side(Path(label), tuple(results), record)


BASE = [result("test_a", f"test_{i}", "passed") for i in range(4)] + \
       [result("test_b", f"test_{i}", "passed") for i in range(4)] + [result("test_c", "test_0", "failed")]


def candidate_results() -> list[TestResult]:
    return [result("test_a", "test_0", "failed", "AssertionError: Tensor-likes are not close!"),
               result("test_a", "test_1", "passed"), result("test_a", "test_2", "crashed", "died with SIGSEGV"),
               result("test_a", "test_3", "passed"),
               *[result("test_b", f"test_{i}", "passed") for i in range(3)],
               result("test_b", "test_3", "failed", "TypeError: <script>alert(1)</script>"),
               result("test_c", "test_0", "passed")]


def candidate(threshold: int = 1000):
    return compare(side("stock", BASE), side("cinderx-jit", candidate_results(), "on", threshold))


def with_known(comparison, tmp_path: Path, entries: str):
    """The comparison as the diff gives it with a known-regressions file (compare/known.py)."""
    path = tmp_path / "known.yaml"
    path.write_text(f"known_regressions:\n  cinderx-jit:\n{entries}")
    return known.classify(comparison, known.load(path), candidate_results())


def test_heatmap_puts_the_worst_module_first_with_pass_rates_and_compiled_counts():
    report = build([candidate()])
    rows = report.heatmap.rows
    assert [row.module for row in rows] == ["test_a", "test_b", "test_c"]
    cell = rows[0].cells[0]
    assert (cell.regressions, cell.compiled, cell.pass_rate) == (2, 40, 0.5)
    assert report.heatmap.columns == ("cinderx-jit (threshold 1000)",)


def test_findings_come_crashes_first_and_the_totals_add_up():
    report = build([candidate()])
    assert [f.test for f in report.findings] == ["test_a::test_2", "test_a::test_0", "test_b::test_3"]
    assert {f.status for f in report.findings} == {Status.UNCONFIRMED}
    totals = report.totals
    assert (totals.regressions, totals.fixes, totals.known) == (3, 1, 0)


def test_known_regressions_are_shown_apart_and_the_ones_that_no_longer_fail_are_listed(tmp_path):
    comparison = with_known(candidate(), tmp_path, "    - {test: 'test_a::test_0', reason: upstream numerics bug}\n"
                                                   "    - {test: 'test_b::test_0', reason: fixed since}\n")
    report = build([comparison])
    marked = {f.test: f.known.reason for f in report.findings if f.known}
    assert marked == {"test_a::test_0": "upstream numerics bug"}
    assert [k.test for s in report.sections for k in s.known_fixed] == ["test_b::test_0"]
    assert report.findings[-1].test == "test_a::test_0"  # known ones sort after the unknown, never hidden
    assert (report.totals.regressions, report.totals.known) == (2, 1)
    assert report.known_source.endswith("known.yaml")


def parts(label: str):
    """The optional parts producers add beside the comparison: a culprit and run history."""
    culprit = Culprit(CulpritStatus.FOUND, (CulpritFunction("torch.nn.modules.linear:Linear.forward", "linear.py", 125,
                                                            inlined=("torch.nn.functional:linear",)),),
                      passes=("Simplify",), reproducer="repro", jit_list="run/culprits/x.jitlist", candidates=40,
                      probes=7, reruns=14, seconds=3.0)
    history = History(trends=(Trend(label, (TrendPoint("r1", "11-20", 0, 1), TrendPoint("r2", "11-21", 3, 0))),),
                      new_since=(Since(label, "test_a::test_2", "r2"),), recovered=(Since(label, "test_b::test_1", "r2"),))
    return {"culprits": {(label, "test_a::test_2"): culprit}, "history": history}


KNOWN = ("    - {test: 'test_b::test_3', reason: a known TypeError, link: 'https://example.org/9'}\n"
         "    - {pattern: 'test_c::*', reason: <i>fixed</i> upstream}\n")


def test_json_keeps_the_contract_and_adds_optional_parts_only_when_given(tmp_path):
    comparison = candidate()
    plain = json_report.to_json(build([comparison]))
    assert {"valid", "problems", "summary", "modules", "regressions"} <= set(plain)
    assert {"regressions", "fixes", "flaky", "new", "missing"} <= set(plain["summary"])
    assert set(plain["modules"][0]) == {"module", "baseline", "candidate", "jit_compiled", "regressions",
                                        "known_regressions", "vacuous"}
    regression = plain["regressions"][0]
    assert {"test", "baseline", "candidate", "detail", "confirmed", "classification"} <= set(regression)
    assert (regression["known"], regression["culprit"], regression["new_since"]) == (None, None, None)
    assert not {"trend", "perf"} & set(plain) and plain["known_regressions_file"] is None
    annotated = with_known(comparison, tmp_path, KNOWN)
    full = json_report.to_json(build([annotated], **parts(comparison.candidate)))
    by_test = {r["test"]: r for r in full["regressions"]}
    culprit = by_test["test_a::test_2"]["culprit"]
    assert culprit["status"] == "found" and culprit["passes"] == ["Simplify"] and culprit["probes"] == 7
    assert culprit["functions"] == [{"name": "torch.nn.modules.linear:Linear.forward", "file": "linear.py", "line": 125,
                                     "inlined": ["torch.nn.functional:linear"], "origin": ""}]
    assert (culprit["reproducer"], culprit["jit_list"], culprit["seconds"]) == ("repro", "run/culprits/x.jitlist", 3.0)
    assert by_test["test_a::test_2"]["new_since"] == "r2"
    [known_one] = full["known_regressions"]
    assert known_one["test"] == "test_b::test_3" and known_one["known"]["reason"] == "a known TypeError"
    assert "test_b::test_3" not in by_test  # not a new regression: its own list
    assert full["summary"]["known_regressions"] == 1 and [k["test"] for k in full["known_fixed"]] == ["test_c::test_0"]
    assert [p["failing"] for p in full["trend"]] == [0, 3]


def test_several_comparisons_give_a_list_of_documents_and_a_sweep():
    documents = json_report.to_json(build([candidate(1), candidate(1000)]))
    assert [d["threshold"] for d in documents] == [1, 1000]
    report = build([candidate(1), candidate(1000)])
    assert [p.threshold for p in report.sweeps[0].points] == [1, 1000]
    assert report.sweeps[0].points[0].compiled == 120


def test_markdown_is_short_top_regressions_then_a_pointer_to_the_page(tmp_path):
    many = compare(side("stock", [result("test_m", f"test_{i:02d}", "passed") for i in range(30)]),
                   side("cinderx-jit", [result("test_m", f"test_{i:02d}", "failed", "AssertionError") for i in range(30)],
                        "on", 1000))
    text = markdown.render(build([many]))
    assert "### Top regressions (10 of 30)" in text
    assert text.count("\n- `test_m::") == markdown.TOP_REGRESSIONS
    assert text.rstrip().endswith(markdown.HTML_POINTER)
    annotated = markdown.render(build([with_known(candidate(), tmp_path, KNOWN)], **parts(candidate().candidate)))
    assert ("  - culprit: `torch.nn.modules.linear:Linear.forward (linear.py:125)` (found: 40 candidates, 7 probes "
            "(14 reruns), 3 s)") in annotated
    assert "  - inlined into it: torch.nn.modules.linear:Linear.forward ← torch.nn.functional:linear" in annotated
    assert "  - HIR passes that matter: Simplify" in annotated
    assert "  - reproducer (JIT list `run/culprits/x.jitlist`): `repro`" in annotated
    assert "· new since r2" in annotated and "Regressions: **2** (+1 known)" in annotated
    assert "Known regressions: 1, from " in annotated and "known, now fixed: 1 (remove their entries)" in annotated


def test_html_escapes_test_text_and_embeds_nothing_from_outside():
    page = html.render(build([candidate()]))
    assert "<script>alert(1)</script>" not in page  # the failure message travels escaped
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no CDN, no remote asset
    assert page.count("<svg") == 0  # one comparison: no sweep, perf or history chart
    assert 'id="known"' not in page and 'id="history"' not in page and "<th>culprit</th>" not in page
    data = json.loads(re.search(r'<script id="findings-data" type="application/json">(.*?)</script>', page).group(1))
    assert [row["test"] for row in data] == ["test_a::test_2", "test_a::test_0", "test_b::test_3"]


def test_html_shows_each_optional_part_when_given(tmp_path):
    comparison = candidate()
    page = html.render(build([with_known(comparison, tmp_path, KNOWN), candidate(1)], **parts(comparison.candidate)))
    assert 'id="known"' in page and 'id="history"' in page and "<th>culprit</th>" in page and 'id="sweep"' in page
    assert page.count("<svg") == 2  # the sweep and one history trend
    assert "&lt;i&gt;fixed&lt;/i&gt; upstream" in page and "<i>fixed</i>" not in page  # templates escape

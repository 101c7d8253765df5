"""The first screen: what the main job (`nox -s diff`, reports written to a folder) and `python -m
harness diff` into a terminal or a pipe leave on standard output for a person to read. The verdict
first; text, not Markdown markup; known regressions one line per entry of the known-regressions
file, with their count and file; the JIT coverage as the few subpackages compiled most; the whole
at most about 30 lines for a clean run. report.md, beside it, stays Markdown for job summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.configure.tiers import HARNESS_ROOT
from harness.record.coverage import Coverage
from harness.report.html import render
from harness.report.model import CoverageSide, History, Report, Trend, TrendPoint, build, in_repository
from harness.report.output import deliver
from tests.unit.test_report_model import candidate, with_known

pytestmark = pytest.mark.unit

# test_a has two regressions (a failure and a crash), test_b one: two entries, three tests.
KNOWN = ("    - {pattern: 'test_a::*', reason: the JIT bypasses dynamo, link: 'https://example.org/7'}\n"
         "    - {test: 'test_b::test_3', reason: a known TypeError}\n")
HISTORY_LINE = "Failing tests per run (run history), oldest first"


def report(tmp_path: Path, runs: int) -> Report:
    comparison = with_known(candidate(), tmp_path, KNOWN)
    points = tuple(TrendPoint(f"r{i}", f"11-2{i}", 3, 0) for i in range(runs))
    return build([comparison], history=History(trends=(Trend(comparison.candidate, points),)))


def first_screen(report: Report, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                 monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # a log as CI keeps it: no terminal, no colour codes
    deliver(report, ["md", "json"], tmp_path / "reports")
    return capsys.readouterr().out


def test_the_verdict_comes_first_then_the_counts(tmp_path, capsys, monkeypatch):
    lines = first_screen(report(tmp_path, runs=1), tmp_path, capsys, monkeypatch).splitlines()
    assert lines[0] == "Valid comparison: no new regressions, 3 known"
    assert next(i for i, line in enumerate(lines) if line.startswith("Regressions: 0 (+3 known) · fixes: ")) < 5


def test_known_regressions_are_one_line_per_entry_with_their_count_and_file(tmp_path, capsys, monkeypatch):
    screen = first_screen(report(tmp_path, runs=1), tmp_path, capsys, monkeypatch)
    entries = [line.strip() for line in screen.splitlines() if line.strip().startswith("• ")]
    known = tmp_path / "known.yaml"  # outside the repository: named as given
    assert entries == [f"• 2 × {known}:3: the JIT bypasses dynamo", f"• 1 × {known}:4: a known TypeError"]
    assert "test_a::test_0" not in screen and "test_a::test_2" not in screen  # tests are in the HTML and JSON


def test_a_long_reason_is_shortened_to_keep_its_entry_on_one_line(tmp_path, capsys, monkeypatch):
    reason = "a function that is JIT-compiled when torch.compile's callable calls it " * 3
    comparison = with_known(candidate(), tmp_path, f"    - {{pattern: 'test_a::*', reason: \"{reason}\"}}\n")
    screen = first_screen(build([comparison]), tmp_path, capsys, monkeypatch)
    [entry] = [line for line in screen.splitlines() if " × " in line]
    assert entry.rstrip().endswith("…") and len(entry) <= 120


def test_the_shipped_known_regressions_file_is_named_as_in_the_repository():
    shipped = HARNESS_ROOT / "harness" / "configure" / "data" / "known_regressions.yaml"
    assert in_repository(f"{shipped}:18") == "harness/configure/data/known_regressions.yaml:18"
    assert in_repository("/elsewhere/known.yaml:3") == "/elsewhere/known.yaml:3"


def test_the_screen_is_text_without_markdown_markup(tmp_path, capsys, monkeypatch):
    screen = first_screen(report(tmp_path, runs=1), tmp_path, capsys, monkeypatch)
    assert "**" not in screen and "`" not in screen and "|---" not in screen and "## " not in screen
    assert "reports written to " in screen
    table = next(line for line in screen.splitlines() if "Module" in line)
    assert "Baseline P/F/E/S/XF" in table and "|" not in table  # a drawn table, not Markdown's pipes
    written = (tmp_path / "reports" / "report.md").read_text(encoding="utf-8")
    assert "Regressions: **0** (+3 known)" in written and "| Module | Baseline P/F/E/S/XF |" in written


def test_a_clean_run_with_coverage_fits_one_screen_and_names_the_subpackages_compiled_most(tmp_path, capsys, monkeypatch):
    comparison = with_known(candidate(), tmp_path, KNOWN)
    defined = {f"sub{i}": 100 + i for i in range(20)}
    compiled = {f"sub{i}": tuple(f"torch.sub{i}.m:f:{j}" for j in range(i)) for i in range(20)}
    coverage = Coverage("2.14.1", defined, compiled, (), (), 1, ("r",))
    screen = first_screen(build([comparison], coverage=[CoverageSide(comparison.candidate, coverage)]),
                          tmp_path, capsys, monkeypatch)
    assert len(screen.splitlines()) <= 30, screen
    flat = " ".join(screen.split())
    assert "Most in: sub19 19 of 119, sub18 18 of 118, sub17 17 of 117, sub16 16 of 116." in flat
    assert "sub15" not in flat and "Every subpackage (20): report.md" in flat
    assert "| sub15 |" in (tmp_path / "reports" / "report.md").read_text(encoding="utf-8")  # the full table stays there


def test_diff_into_a_pipe_lays_out_the_screen_and_json_stays_data(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    deliver(report(tmp_path, runs=1), ["md"], None)  # capsys: standard output is no terminal
    piped = capsys.readouterr().out
    assert piped.startswith("Valid comparison") and "**" not in piped and "|---" not in piped
    deliver(report(tmp_path, runs=1), ["json"], None)
    assert json.loads(capsys.readouterr().out)["valid"] is True


def test_the_history_line_needs_two_runs_to_compare(tmp_path, capsys, monkeypatch):
    assert HISTORY_LINE not in first_screen(report(tmp_path, runs=1), tmp_path, capsys, monkeypatch)
    two = first_screen(report(tmp_path, runs=2), tmp_path, capsys, monkeypatch)
    assert f"{HISTORY_LINE}: 3 → 3" in two


def test_the_html_page_draws_a_trend_only_with_two_runs_to_compare(tmp_path):
    assert 'class="chart trend"' not in render(report(tmp_path, runs=1))
    assert 'class="chart trend"' in render(report(tmp_path, runs=2))


def test_a_failure_message_that_looks_like_a_tag_stays_on_the_screen(tmp_path, capsys, monkeypatch):
    screen = first_screen(build([candidate()]), tmp_path, capsys, monkeypatch)
    assert "TypeError: <script>alert(1)</script>" in screen  # rich would drop it as inline HTML


def test_a_run_that_compiled_nothing_names_no_subpackage_as_compiled_most(tmp_path, capsys, monkeypatch):
    comparison = with_known(candidate(), tmp_path, KNOWN)
    coverage = Coverage("2.14.1", {"sub0": 100, "sub1": 50}, {}, (), (), 1, ("r",))
    screen = first_screen(build([comparison], coverage=[CoverageSide(comparison.candidate, coverage)]),
                          tmp_path, capsys, monkeypatch)
    flat = " ".join(screen.split())
    assert "0 of 150 functions compiled (0.0%). Every subpackage (2): report.md" in flat, screen
    assert "Most in" not in flat

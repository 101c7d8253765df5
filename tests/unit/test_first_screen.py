"""The first screen: what the main job (`nox -s diff`, reports written to a folder) leaves on standard
output for a person to read. Text, not Markdown markup; known regressions one line per entry of the
known-regressions file, with their count; the run-history line only when there are runs to compare.
report.md, beside it, stays Markdown for job summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.report.html import render
from harness.report.model import History, Report, Trend, TrendPoint, build
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


def test_known_regressions_are_one_line_per_entry_with_their_count(tmp_path, capsys, monkeypatch):
    screen = first_screen(report(tmp_path, runs=1), tmp_path, capsys, monkeypatch)
    entries = " ".join(screen.split()).split("• ")[1:]  # one bullet per entry (a long one wraps)
    assert [entry.split(" · ")[0] for entry in entries] == [
        "2 × the JIT bypasses dynamo (https://example.org/7)", "1 × a known TypeError"]
    assert [entry.split(" · ")[1].split()[0] for entry in entries] == ["known.yaml:3", "known.yaml:4"]
    assert "test_a::test_0" not in screen and "test_a::test_2" not in screen  # tests are in the HTML and JSON
    assert "Regressions: 0 (+3 known)" in screen


def test_the_screen_is_text_without_markdown_markup(tmp_path, capsys, monkeypatch):
    screen = first_screen(report(tmp_path, runs=1), tmp_path, capsys, monkeypatch)
    assert "**" not in screen and "`" not in screen and "|---" not in screen and "## " not in screen
    assert "Valid comparison." in screen and "reports written to " in screen
    table = next(line for line in screen.splitlines() if "Module" in line)
    assert "Baseline P/F/E/S/XF" in table and "|" not in table  # a drawn table, not Markdown's pipes
    written = (tmp_path / "reports" / "report.md").read_text(encoding="utf-8")
    assert "Regressions: **0** (+3 known)" in written and "| Module | Baseline P/F/E/S/XF |" in written


def test_the_history_line_needs_two_runs_to_compare(tmp_path, capsys, monkeypatch):
    assert HISTORY_LINE not in first_screen(report(tmp_path, runs=1), tmp_path, capsys, monkeypatch)
    two = first_screen(report(tmp_path, runs=2), tmp_path, capsys, monkeypatch)
    assert f"{HISTORY_LINE}: 3 → 3" in two


def test_the_html_page_draws_a_trend_only_with_two_runs_to_compare(tmp_path):
    assert 'class="chart trend"' not in render(report(tmp_path, runs=1))
    assert 'class="chart trend"' in render(report(tmp_path, runs=2))

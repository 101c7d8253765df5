"""History as Markdown, laid out as text for a terminal or a log (`harness history`): per series, the trend of its runs, what changed in the newest run (new
failures with the run they fail since, recovered tests, persistent failures, slower tests) and the
flaky list with each test's flip rate and its Wilson lower bound."""

from __future__ import annotations

from collections.abc import Callable

from harness.compare.history import CONFIDENCE, FLAKY_BOUND, FLAKY_FLIPS, History, SeriesHistory, Timeline
from harness.protocol import Outcome
from harness.report.markdown import counts

LISTED = 50  # tests listed per table; the JSON form has them all
LETTERS = {Outcome.PASSED: "P", Outcome.FAILED: "F", Outcome.ERROR: "E", Outcome.CRASHED: "C", Outcome.TIMEOUT: "T",
           Outcome.SKIPPED: "S", Outcome.XFAILED: "x", Outcome.XPASSED: "X"}


def render(history: History) -> str:
    if not history.series:
        return f"## History\n\nNo runs in {history.database} yet.\n"
    return "\n".join(render_series(series) for series in history.series)


def render_series(entry: SeriesHistory) -> str:
    lines = [f"## History: {entry.series.label}", "",
             f"Last {len(entry.runs)} run{'s' if len(entry.runs) != 1 else ''}, oldest first "
             "(P/F/E/S/XF: passed, failed, error, skipped, xfailed).", "",
             "| Run | Started | Status | P/F/E/S/XF | Compiled |", "|---|---|---|---|---|"]
    for run in entry.runs:
        compiled = "—" if run.compiled is None else f"{run.compiled:,}"
        lines.append(f"| {run.name} | {run.started[:19].replace('T', ' ')} | {run.status} | {counts(run.counts)} | "
                     f"{compiled} |")
    pair = entry.latest
    if pair is not None:
        lines += ["", f"Newest run against the one before: new failures **{len(pair.new_failures)}** · "
                      f"recovered {len(pair.recovered)} · persistent failures {len(pair.persistent)} · "
                      f"slower {len(pair.slower)}"]
        lines += _timelines("New failures", pair.new_failures, "failing since", lambda t: t.failing_since)
        lines += _timelines("Recovered", pair.recovered, "recovered in", lambda t: t.recovered_in)
        lines += _timelines("Persistent failures", pair.persistent, "failing since", lambda t: t.failing_since)
        lines += _table("Slower than their own history", ["Test", "Seconds", "Usual", "Spread", "Earlier runs"],
                        [[f"`{s.test}`", f"{s.duration:.2f}", f"{s.usual:.2f}", f"{s.spread:.2f}", str(s.runs)]
                         for s in pair.slower])
    else:
        lines += _timelines("Failing", entry.failing, "failing since", lambda t: t.failing_since)
    lines += _table(f"Flaky (at least {FLAKY_FLIPS} flips, {CONFIDENCE:.0%} lower bound of the flip rate "
                    f">= {FLAKY_BOUND})", ["Test", "Timeline", "Flips", "Flip rate", "Lower bound"],
                    [[f"`{t.test}`", timeline(t), f"{t.flips}/{t.transitions}", f"{t.flip_rate:.2f}",
                      f"{t.lower_bound:.2f}"] for t in entry.flaky])
    lines += _table("Tests asked for", ["Test", "Timeline", "Flips", "Flip rate", "Lower bound"],
                    [[f"`{t.test}`", timeline(t), f"{t.flips}/{t.transitions}", f"{t.flip_rate:.2f}",
                      f"{t.lower_bound:.2f}"] for t in entry.tests])
    return "\n".join(lines) + "\n"


def timeline(t: Timeline) -> str:
    """`P P F P`: one letter per run it ran in, oldest first."""
    return " ".join(LETTERS.get(outcome, "?") for outcome in t.outcomes)


def _timelines(title: str, timelines: tuple[Timeline, ...], what: str, when: Callable[[Timeline], str | None]
               ) -> list[str]:
    return _table(title, ["Test", "Timeline", what.capitalize(), "Message"],
                  [[f"`{t.test}`", timeline(t), f"`{when(t)}`" if when(t) else "—",
                    (t.message.strip().splitlines() or [""])[0][:120].replace("<", "\\<")] for t in timelines])


def _table(title: str, header: list[str], rows: list[list[str]]) -> list[str]:
    """One item per test, its figures named after it: a test id is too long to share a terminal's
    width with a timeline and a message in table columns (rich would cut it short)."""
    if not rows:
        return []
    lines = ["", f"### {title} ({len(rows)})", ""]
    lines += [f"- {row[0]}: " + " · ".join(f"{name.lower()} {value}" for name, value in zip(header[1:], row[1:]) if value)
              for row in rows[:LISTED]]
    if len(rows) > LISTED:
        lines.append(f"\n… and {len(rows) - LISTED} more (`python -m harness history --format json`)")
    return lines

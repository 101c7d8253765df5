"""The comparison as Markdown: seed 001's per-module table, then each regression with its replays,
then the other categories; and the threshold-sweep table, one column per threshold."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from harness.compare.diff import Change, Comparison, Flaky, KnownFixed, ModuleRow, Regression
from harness.compare.sweep import Sweep, column_label

_LISTED = 50  # tests listed by name per category up to this many; counts are always complete
T = TypeVar("T")
_CORE = ("passed", "failed", "error", "skipped", "xfailed")


def render(comparison: Comparison) -> str:
    lines = [f"## {comparison.candidate} vs {comparison.baseline}", ""]
    if comparison.valid:
        lines.append("**Valid comparison.**")
    else:
        lines.append("**INVALID comparison: no verdict.**")
        lines.extend(f"- {problem}" for problem in comparison.problems)
    lines.extend(f"- note: {note}" for note in comparison.notes)
    known = f" (+{len(comparison.known)} known)" if comparison.known else ""
    lines += ["", (f"Regressions: **{len(comparison.regressions)}**{known} · fixes: {len(comparison.fixes)} · "
                   f"new: {len(comparison.new)} · missing: {len(comparison.missing)} · flaky: {len(comparison.flaky)}"), ""]
    lines += _module_table(comparison.modules)
    if comparison.regressions:
        lines += ["", "### Regressions", ""]
        for regression in comparison.regressions:
            lines += _regression(regression)
    lines += _known_sections(comparison)
    lines += _section("Flaky", comparison.flaky, _flaky)
    lines += _section("Skip changes", comparison.skip_changes, _change)
    lines += _section("Xfail drift", comparison.xfail_drift, _change)
    lines += _section("Failures that changed", comparison.failure_changes, _change)
    for title, tests in (("Fixes", comparison.fixes), ("New tests", comparison.new), ("Missing tests", comparison.missing)):
        lines += _section(title, tests, lambda test: [f"- `{test}`"])
    return "\n".join(lines) + "\n"


def _regression(r: Regression) -> list[str]:
    status = {True: " · confirmed", False: " · not confirmed", None: ""}[r.confirmed]
    lines = [f"- `{r.test}`: {r.baseline} → **{r.candidate}** ({r.classification}){status}"]
    if r.detail:
        lines.append(f"  - {r.detail.splitlines()[0]}")
    if r.polluters:
        lines.append(f"  - fails only after: {', '.join(f'`{p}`' for p in r.polluters)}")
    if r.confirmation:
        lines.append(f"  - reruns: {r.confirmation}")
    if r.baseline_replay:
        lines.append(f"  - baseline replay: `{r.baseline_replay}`")
    if r.replay:
        lines.append(f"  - candidate replay: `{r.replay}`")
    return lines


def _known_sections(comparison: Comparison) -> list[str]:
    """Known regressions by entry of the known-regressions file, each test on a line (never hidden;
    the JSON report has their replays), then the known ones that passed this time."""
    lines: list[str] = []
    by_entry: dict[str, list[Regression]] = {}
    for regression in comparison.known:
        by_entry.setdefault(regression.known.entry if regression.known else "", []).append(regression)
    if by_entry:
        lines += ["", f"### Known regressions ({len(comparison.known)}, from {comparison.known_source})", ""]
    for entry, regressions in by_entry.items():
        known = regressions[0].known
        assert known is not None
        link = f" ({known.link})" if known.link else ""
        lines.append(f"- `{known.pattern}` ({entry}): {known.reason}{link}")
        lines += [f"  - `{r.test}`: {r.baseline} → **{r.candidate}** ({r.classification})" for r in regressions]
    fixed: dict[str, list[KnownFixed]] = {}
    for item in comparison.known_fixed:
        fixed.setdefault(item.known.entry, []).append(item)
    if fixed:
        lines += ["", f"### Known, now fixed ({len(comparison.known_fixed)})", ""]
    for entry, items in fixed.items():
        lines.append(f"- `{items[0].known.pattern}` ({entry}) passed this time: remove the entry")
        lines += [f"  - `{item.test}`" for item in items]
    return lines


def _flaky(f: Flaky) -> list[str]:
    lines = [f"- `{f.test}`: {f.baseline} → {f.candidate}: {f.reason}"]
    return lines + ([f"  - candidate replay: `{f.replay}`"] if f.replay else [])


def _change(c: Change) -> list[str]:
    return [f"- `{c.test}`: {c.baseline} → {c.candidate}" + (f" ({c.detail})" if c.detail else "")]


def _section(title: str, items: Sequence[T], lines_of: Callable[[T], list[str]]) -> list[str]:
    if not items:
        return []
    lines = ["", f"### {title} ({len(items)})", ""]
    for item in items[:_LISTED]:
        lines += lines_of(item)
    if len(items) > _LISTED:
        lines.append(f"- … and {len(items) - _LISTED} more (see the JSON report)")
    return lines


def _module_table(rows: tuple[ModuleRow, ...]) -> list[str]:
    lines = ["| Module | Baseline P/F/E/S/XF | Candidate P/F/E/S/XF | Compiled | Regressions |",
             "|---|---|---|---|---|"]
    for row in rows:
        regressions = _regressions_cell(row)
        lines.append(f"| {row.module} | {counts(row.baseline)} | {counts(row.candidate)} | {_compiled(row)} | {regressions} |")
    known = sum(r.known for r in rows)
    lines.append(f"| **TOTAL** | {counts(_sum(r.baseline for r in rows))} | {counts(_sum(r.candidate for r in rows))} | "
                 f"{_compiled_total(rows)} | {sum(r.regressions for r in rows)}{f' (+{known} known)' if known else ''} |")
    return lines


def render_sweep(sweep: Sweep) -> str:
    """One row per module, one column per threshold: candidate counts · compiled · regressions."""
    columns = [column_label(c) for c in sweep.comparisons]
    tier = f" (tier {sweep.tier})" if sweep.tier else ""
    lines = [f"## Threshold sweep: {sweep.configuration} vs {sweep.baseline}{tier}", "",
             "Each threshold cell: candidate P/F/E/S/XF · functions compiled · regressions.", "",
             "| Module | Baseline P/F/E/S/XF | " + " | ".join(columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    tables = [{row.module: row for row in c.modules} for c in sweep.comparisons]
    for module in sweep.modules:
        rows = [table.get(module) for table in tables]
        baseline = next((row.baseline for row in rows if row is not None), {})
        lines.append(f"| {module} | {counts(baseline)} | " + " | ".join(_cell(row) for row in rows) + " |")
    totals = [f"{counts(_sum(r.candidate for r in c.modules))} · {_compiled_total(c.modules)} · {len(c.regressions)}"
              + (f" (+{len(c.known)} known)" if c.known else "") for c in sweep.comparisons]
    baseline_total = counts(_sum(r.baseline for r in sweep.comparisons[0].modules))
    lines.append(f"| **TOTAL** | {baseline_total} | " + " | ".join(totals) + " |")
    return "\n".join(lines) + "\n"


def _cell(row: ModuleRow | None) -> str:
    if row is None:
        return "absent"
    return f"{counts(row.candidate)} · {_compiled(row)} · {_regressions_cell(row)}"


def _regressions_cell(row: ModuleRow) -> str:
    """New regressions in bold, known ones beside them."""
    new = f"**{row.regressions}**" if row.regressions else "0"
    return new + (f" (+{row.known} known)" if row.known else "")


def _compiled(row: ModuleRow) -> str:
    return "—" if row.jit_compiled is None else f"{row.jit_compiled:,}" + (" (vacuous)" if row.vacuous else "")


def _compiled_total(rows: Iterable[ModuleRow]) -> str:
    values = [r.jit_compiled for r in rows if r.jit_compiled is not None]
    return f"{sum(values):,}" if values else "—"


def counts(outcomes: dict[str, int]) -> str:
    """`P/F/E/S/XF`, with crashed, timeout and xpassed added when there are any."""
    if not outcomes:
        return "absent"
    core = "/".join(str(outcomes.get(k, 0)) for k in _CORE)
    extra = [f"{outcomes[k]} {k}" for k in ("crashed", "timeout", "xpassed") if outcomes.get(k)]
    return core + (f" (+{', '.join(extra)})" if extra else "")


def _sum(entries: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for entry in entries:
        for key, value in entry.items():
            total[key] = total.get(key, 0) + value
    return total

"""The comparison as Markdown: seed 001's per-module table, then each regression with its replay."""

from __future__ import annotations

from harness.compare.diff import Comparison, ModuleRow

_LISTED = 50  # fixes/new/missing listed by name up to this many; counts are always complete


def render(comparison: Comparison) -> str:
    lines = [f"## {comparison.candidate} vs {comparison.baseline}", ""]
    if comparison.valid:
        lines.append("**Valid comparison.**")
    else:
        lines.append("**INVALID comparison: no verdict.**")
        lines.extend(f"- {problem}" for problem in comparison.problems)
    lines.extend(f"- note: {note}" for note in comparison.notes)
    lines += ["", (f"Regressions: **{len(comparison.regressions)}** · fixes: {len(comparison.fixes)} · "
                   f"new: {len(comparison.new)} · missing: {len(comparison.missing)} · flaky: {len(comparison.flaky)}"), ""]
    lines += _module_table(comparison.modules)
    if comparison.regressions:
        lines += ["", "### Regressions", ""]
        for r in comparison.regressions:
            lines.append(f"- `{r.test}`: {r.baseline} → **{r.candidate}** ({r.classification})")
            if r.detail:
                lines.append(f"  - {r.detail.splitlines()[0]}")
            if r.replay:
                lines.append(f"  - replay: `{r.replay}`")
    for title, tests in (("Fixes", comparison.fixes), ("New tests", comparison.new), ("Missing tests", comparison.missing)):
        if tests:
            lines += ["", f"### {title} ({len(tests)})", ""]
            lines += [f"- `{t}`" for t in tests[:_LISTED]]
            if len(tests) > _LISTED:
                lines.append(f"- … and {len(tests) - _LISTED} more (see the JSON report)")
    return "\n".join(lines) + "\n"


def _module_table(rows: tuple[ModuleRow, ...]) -> list[str]:
    lines = ["| Module | Baseline P/F/E/S/XF | Candidate P/F/E/S/XF | Compiled | Regressions |",
             "|---|---|---|---|---|"]
    for row in rows:
        compiled = "—" if row.jit_compiled is None else f"{row.jit_compiled:,}" + (" (vacuous)" if row.vacuous else "")
        regressions = f"**{row.regressions}**" if row.regressions else "0"
        lines.append(f"| {row.module} | {_counts(row.baseline)} | {_counts(row.candidate)} | {compiled} | {regressions} |")
    total = ModuleRow("**TOTAL**", _sum(r.baseline for r in rows), _sum(r.candidate for r in rows),
                      None, sum(r.regressions for r in rows))
    compiled_values = [r.jit_compiled for r in rows if r.jit_compiled is not None]
    compiled_total = f"{sum(compiled_values):,}" if compiled_values else "—"
    lines.append(f"| {total.module} | {_counts(total.baseline)} | {_counts(total.candidate)} | {compiled_total} | {total.regressions} |")
    return lines


def _counts(counts: dict[str, int]) -> str:
    if not counts:
        return "absent"
    core = "/".join(str(counts.get(k, 0)) for k in ("passed", "failed", "error", "skipped", "xfailed"))
    extra = [f"{counts[k]} {k}" for k in ("crashed", "timeout", "xpassed") if counts.get(k)]
    return core + (f" (+{', '.join(extra)})" if extra else "")


def _sum(counts) -> dict[str, int]:
    total: dict[str, int] = {}
    for entry in counts:
        for key, value in entry.items():
            total[key] = total.get(key, 0) + value
    return total

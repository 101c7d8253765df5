"""The performance comparison as Markdown and JSON: one column per candidate, the method stated.

Written beside the test diff's reports: `perf-report.md` and `perf-report.json` in the output folder.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from harness.perf.compare import Candidate, Cell, JitFacts, PerfComparison, SpeedUp, Stats

METHOD = ("Speed-up = baseline time / candidate time (> 1: the candidate is faster): the ratio of the geometric "
          "means of the worker processes' mean times. 95% CI: Welch's t interval on log process means (t from "
          "pyperf's table); *not significant* when the interval contains 1. Geometric means pool the "
          "benchmarks' intervals. JIT: functions compiled and compile time per worker process after its "
          "warm-up (median over workers; min-max in brackets).")


def format_seconds(value: float) -> str:
    """A time with 3 significant digits in the unit that suits it."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(value) >= scale * 0.9995:  # 0.9999 ms is "1 ms", not "1e+03 us"
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def format_stats(stats: Stats | None) -> str:
    if stats is None:
        return "-"
    if stats.unit != "second":
        return f"{stats.mean:.4g} ± {stats.stdev:.2g} {stats.unit}"
    return f"{format_seconds(stats.mean)} ± {format_seconds(stats.stdev)}"


def format_speedup(speedup: SpeedUp, verdict: str | None = None) -> str:
    text = f"**{speedup.ratio:.2f}x** [{speedup.low:.2f}, {speedup.high:.2f}]"
    return f"{text} {verdict}" if verdict else text


def format_cell(cell: Cell) -> str:
    if cell.speedup is None:
        return f"{format_stats(cell.stats)}: **{cell.verdict}** ({cell.reason})"
    return f"{format_stats(cell.stats)}: {format_speedup(cell.speedup, cell.verdict)}"


def format_jit(jit: JitFacts | None) -> str:
    if jit is None or jit.mode != "on":
        return "-" if jit is None else f"JIT {jit.mode}"
    if not jit.compiled:
        return "no count recorded"
    compiled = f"{jit.compiled_median:,.0f} [{min(jit.compiled):,}-{max(jit.compiled):,}]"
    time = f"{jit.compile_ms_median / 1000:.2f} s" if jit.compile_ms_median is not None else "?"
    return f"{compiled} in {time}"


def _title(comparison: PerfComparison) -> str:
    return f"## Performance: {', '.join(c.label for c in comparison.candidates)} vs {comparison.baseline_label}"


def _validity(comparison: PerfComparison) -> list[str]:
    notes = [f"- note: {note}" for note in _notes(comparison)]
    if comparison.valid:
        return ["**Valid comparison.**", *notes]
    lines = ["**Not a valid comparison for every candidate: speed-ups withheld where marked.**"]
    lines += [f"- {problem}" for problem in comparison.problems]
    lines += [f"- {problem}" for c in comparison.candidates for problem in c.problems]
    return lines + notes


def _notes(comparison: PerfComparison) -> list[str]:
    return [*comparison.notes, *(note for c in comparison.candidates for note in c.notes)]


def _geometric_rows(candidates: tuple[Candidate, ...]) -> list[str]:
    tags = list(dict.fromkeys(tag for c in candidates for tag in c.geometric_means))
    rows = []
    for tag in sorted(tags, key=lambda t: (t == "all", t)):
        cells = [format_speedup(c.geometric_means[tag], c.geometric_means[tag].verdict) if tag in c.geometric_means
                 else "-" for c in candidates]
        rows.append(f"| **geometric mean ({tag})** | | {' | '.join(cells)} |")
    return rows


def render_markdown(comparison: PerfComparison) -> str:
    candidates = comparison.candidates
    lines = [_title(comparison), "", *_validity(comparison), "", METHOD, ""]
    lines.append(f"| Benchmark | {comparison.baseline_label} | {' | '.join(c.label for c in candidates)} |")
    lines.append("|---" * (2 + len(candidates)) + "|")
    for row in comparison.rows:
        lines.append(f"| {row.name} | {format_stats(row.baseline)} | {' | '.join(format_cell(c) for c in row.cells)} |")
    lines += _geometric_rows(candidates)
    if any(c.jit_mode == "on" for c in candidates):
        lines += ["", "JIT compiled functions per worker process [min-max] and compile time (medians):", ""]
        lines.append(f"| Benchmark | {' | '.join(c.label for c in candidates)} |")
        lines.append("|---" * (1 + len(candidates)) + "|")
        for row in comparison.rows:
            lines.append(f"| {row.name} | {' | '.join(format_jit(cell.jit) for cell in row.cells)} |")
    lines += ["", "Benchmarks:", ""]
    lines += [f"- `{row.name}` ({row.tag}): {row.description}" for row in comparison.rows]
    lines += ["", _sampling(comparison), f"Baseline: `{comparison.baseline_path}`; candidates: "
              + ", ".join(f"`{c.path}`" for c in candidates)]
    return "\n".join(lines) + "\n"


def _sampling(comparison: PerfComparison) -> str:
    sides = [row.baseline for row in comparison.rows if row.baseline] + \
            [cell.stats for row in comparison.rows for cell in row.cells if cell.stats]
    processes = sorted({s.processes for s in sides})
    values = sorted({s.values for s in sides})
    disagree = sum(1 for row in comparison.rows for cell in row.cells
                   if cell.speedup is not None and cell.pyperf_significant is not None
                   and cell.pyperf_significant != cell.speedup.significant)
    return (f"Worker processes per benchmark and side: {_span(processes)}; values: {_span(values)}. "
            f"pyperf's all-values t-test disagrees with the per-process verdict on {disagree} cell(s).")


def _span(numbers: list[int]) -> str:
    if not numbers:
        return "-"
    return str(numbers[0]) if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}"


def _speedup_json(speedup: SpeedUp | None) -> dict[str, Any] | None:
    if speedup is None:
        return None
    return {"speedup": speedup.ratio, "ci95": [speedup.low, speedup.high], "significant": speedup.significant,
            "verdict": speedup.verdict, "log_ratio": speedup.log_ratio, "standard_error": speedup.standard_error,
            "df": speedup.df}


def _jit_json(jit: JitFacts | None) -> dict[str, Any] | None:
    if jit is None:
        return None
    return {"mode": jit.mode, "threshold": jit.threshold, "compiled": list(jit.compiled),
            "compiled_median": jit.compiled_median, "compile_ms": list(jit.compile_ms),
            "compile_ms_median": jit.compile_ms_median, "vacuous": jit.vacuous, "errors": list(jit.errors)}


def _cell_json(label: str, cell: Cell) -> dict[str, Any]:
    return {"candidate": label, "stats": asdict(cell.stats) if cell.stats else None, "verdict": cell.verdict,
            "reason": cell.reason or None, **(_speedup_json(cell.speedup) or {"speedup": None}),
            "pyperf_significant": cell.pyperf_significant, "jit": _jit_json(cell.jit)}


def to_json(comparison: PerfComparison) -> dict[str, Any]:
    labels = [c.label for c in comparison.candidates]
    return {
        "valid": comparison.valid,
        "problems": [*comparison.problems, *(p for c in comparison.candidates for p in c.problems)],
        "notes": _notes(comparison),
        "method": METHOD,
        "baseline": {"label": comparison.baseline_label, "path": comparison.baseline_path},
        "candidates": [{"label": c.label, "path": c.path, "valid": c.valid, "problems": list(c.problems),
                        "jit": c.jit_mode, "threshold": c.threshold, "notes": list(c.notes),
                        "geometric_mean": {tag: _speedup_json(s) for tag, s in c.geometric_means.items()}}
                       for c in comparison.candidates],
        "benchmarks": [{"name": row.name, "description": row.description, "tag": row.tag,
                        "baseline": asdict(row.baseline) if row.baseline else None,
                        "candidates": [_cell_json(label, cell) for label, cell in zip(labels, row.cells, strict=True)]}
                       for row in comparison.rows],
    }


def render(comparison: PerfComparison, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(to_json(comparison), indent=2) + "\n"
    return render_markdown(comparison)

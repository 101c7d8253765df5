"""The report's pictures, drawn by matplotlib as SVG to inline in the HTML page (no network, no script).

Figures are made with matplotlib's object API (no pyplot: no global state, no GUI backend). Text
stays text in the SVG (`svg.fonttype: none`), so the page's search finds it and it scales; each
figure gets its own hash salt, so the ids of several figures in one page never collide.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import matplotlib
from matplotlib import colors, ticker
from matplotlib.figure import Figure

from harness.record.coverage import Coverage
from harness.report.model import Forest, Interval, SweepLine, Trend

INK, MUTED, REGRESSION, COMPILED, FLAKY = "#1f2328", "#656d76", "#cf222e", "#0969da", "#bf8700"
SERIES = ("#0969da", "#8250df", "#1a7f37", "#bc4c00", "#cf222e", "#57606a")  # one per perf candidate
HEAT = matplotlib.colormaps["OrRd"]
WIDTH = 7.5  # inches: fits a laptop screen and a printed page
COVERAGE_BARS = 25  # subpackages drawn, the biggest first; the table below the chart holds them all


def heat_colour(regressions: int, worst: int) -> tuple[str, str]:
    """Background and text colour of a heatmap cell: white at 0, darkest at the worst cell's count."""
    if regressions == 0 or worst == 0:
        return "#ffffff", INK
    shade = HEAT(0.25 + 0.75 * math.log1p(regressions) / math.log1p(worst))
    red, green, blue, _ = shade
    return colors.to_hex(shade), "#ffffff" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.55 else INK


@contextmanager
def _figure(name: str, height: float) -> Iterator[tuple[Figure, list[str]]]:
    """A figure whose SVG text lands in the yielded list once the block ends."""
    out: list[str] = []
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name, "font.size": 9,
                                "axes.edgecolor": MUTED, "axes.labelcolor": INK, "xtick.color": MUTED,
                                "ytick.color": MUTED, "axes.spines.top": False, "axes.spines.right": False}):
        figure = Figure(figsize=(WIDTH, height), layout="constrained")
        yield figure, out
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    out.append(text[text.index("<svg"):])


def sweep_chart(line: SweepLine, name: str) -> str:
    """Regressions (left axis) and JIT-compiled functions (right axis) against the compile threshold."""
    thresholds = [p.threshold for p in line.points]
    with _figure(name, 2.8) as (figure, out):
        axes = figure.add_subplot()
        axes.plot(thresholds, [p.regressions for p in line.points], marker="o", color=REGRESSION, label="regressions")
        invalid = [p for p in line.points if not p.valid]
        if invalid:
            axes.scatter([p.threshold for p in invalid], [p.regressions for p in invalid], marker="x", s=80,
                         color=INK, zorder=3, label="invalid comparison")
        axes.set_xscale("symlog", linthresh=1)
        axes.set_xticks(thresholds, [str(t) for t in thresholds])
        axes.set_xlabel("JIT compile threshold (calls before a function is compiled)")
        axes.set_ylabel("regressions", color=REGRESSION)
        axes.set_ylim(bottom=0, top=max(1, *(p.regressions for p in line.points)) * 1.15)
        axes.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        compiled = [(p.threshold, p.compiled) for p in line.points if p.compiled is not None]
        handles, labels = axes.get_legend_handles_labels()
        if compiled:
            right = axes.twinx()
            right.spines["right"].set_visible(True)
            right.plot([t for t, _ in compiled], [c for _, c in compiled], marker="s", linestyle="--", color=COMPILED,
                       label="functions JIT-compiled")
            right.set_ylabel("functions JIT-compiled", color=COMPILED)
            right.set_ylim(bottom=0)
            more_handles, more_labels = right.get_legend_handles_labels()
            handles, labels = handles + more_handles, labels + more_labels
        axes.legend(handles, labels, loc="upper right", frameon=False)
    return out[0]


def forest_chart(forest: Forest, name: str) -> str:
    """Speed-up per benchmark with its 95% interval, one colour per candidate; geometric means at the bottom."""
    labels = [row.benchmark for row in forest.rows] + [f"geometric mean ({tag})" for tag, _ in forest.means]
    series = [row.intervals for row in forest.rows] + [intervals for _, intervals in forest.means]
    count = len(forest.candidates)
    with _figure(name, 0.9 + 0.28 * len(labels) * max(1, count) ** 0.5) as (figure, out):
        axes = figure.add_subplot()
        axes.axvline(1.0, color=MUTED, linewidth=1)
        for index, candidate in enumerate(forest.candidates):
            offset = (index - (count - 1) / 2) * 0.6 / max(count, 1)
            points = [(y + offset, intervals[index]) for y, intervals in enumerate(series) if intervals[index]]
            _intervals(axes, points, SERIES[index % len(SERIES)], candidate)
        axes.set_xscale("log")
        axes.xaxis.set_major_locator(ticker.MaxNLocator(nbins=7))
        axes.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:.3g}x"))
        axes.xaxis.set_minor_locator(ticker.NullLocator())
        axes.set_yticks(range(len(labels)), labels)
        for tick in axes.get_yticklabels()[len(forest.rows):]:
            tick.set_fontweight("bold")
        if forest.means:
            axes.axhline(len(forest.rows) - 0.5, color=MUTED, linewidth=0.5, linestyle=":")
        axes.invert_yaxis()
        axes.set_xlabel(f"speed-up over {forest.baseline} (> 1: faster), 95% confidence interval, log scale")
        figure.legend(loc="outside upper center", ncols=min(count, 4), frameon=False, fontsize=8)
    return out[0]


def _intervals(axes, points: Sequence[tuple[float, Interval | None]], colour: str, label: str) -> None:
    shown = [(y, i) for y, i in points if i is not None]
    if not shown:
        return
    ys = [y for y, _ in shown]
    ratios = [i.ratio for _, i in shown]
    errors = [[i.ratio - i.low for _, i in shown], [i.high - i.ratio for _, i in shown]]
    axes.errorbar(ratios, ys, xerr=errors, fmt="none", ecolor=colour, elinewidth=1.5, capsize=3)
    filled = [colour if i.verdict != "not significant" else "#ffffff" for _, i in shown]
    axes.scatter(ratios, ys, marker="D", s=28, color=filled, edgecolors=colour, zorder=3, label=label)


def trend_chart(trend: Trend, name: str) -> str:
    """Failing and flaky tests per run of one configuration (run history), oldest run on the left."""
    runs = range(len(trend.points))
    with _figure(name, 1.6) as (figure, out):
        axes = figure.add_subplot()
        axes.plot(runs, [p.failing for p in trend.points], marker="o", markersize=3, color=REGRESSION,
                  label="failing")
        axes.plot(runs, [p.flaky for p in trend.points], marker="o", markersize=3, color=FLAKY, label="flaky")
        axes.set_xticks(list(runs), [p.started for p in trend.points], rotation=30, ha="right", fontsize=7)
        axes.set_ylim(bottom=0, top=max(1, *(max(p.failing, p.flaky) for p in trend.points)) * 1.2)
        axes.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        axes.legend(loc="upper left", frameon=False, fontsize=8, ncols=2)
    return out[0]


def coverage_chart(coverage: Coverage, name: str) -> str:
    """Per subpackage (the biggest first), the share of its functions the JIT compiled, each bar
    labelled with compiled / defined."""
    rows = coverage.rows[:COVERAGE_BARS]
    with _figure(name, 0.8 + 0.22 * len(rows)) as (figure, out):
        axes = figure.add_subplot()
        positions = range(len(rows))
        axes.barh(positions, [100.0] * len(rows), color="#eaeef2", height=0.7)
        axes.barh(positions, [100 * (row.share or 0.0) for row in rows], color=COMPILED, height=0.7)
        for position, row in zip(positions, rows):
            axes.text(101, position, f"{row.compiled:,} / {row.defined:,}", va="center", fontsize=7, color=MUTED)
        axes.set_yticks(list(positions), [row.name for row in rows], fontsize=8)
        axes.invert_yaxis()
        axes.set_xlim(0, 125)
        axes.set_xticks([0, 25, 50, 75, 100], ["0%", "25%", "50%", "75%", "100%"])
        axes.set_xlabel("functions the JIT compiled at least once, of those the subpackage defines")
    return out[0]

"""Compare pyperf results: speed-ups with 95% confidence intervals, significance, geometric means.

The unit of evidence is the worker process, not the value. pyperf's values within one process
share that process's memory layout, hash seed and the machine's load at that moment; treating
them as independent (as pyperf's own `is_significant` does on all values) makes small
between-process differences look significant. So, per benchmark and side:

    m_i   = mean of the values of worker process i          (pyperf runs with values)
    d     = mean(ln m_baseline) - mean(ln m_candidate)      speed-up = exp(d), > 1 is faster
    se    = sqrt(var_b / n_b + var_c / n_c)                 Welch, on the log scale
    df    = Welch-Satterthwaite
    CI95  = exp(d -+ t(df) * se)                            t from pyperf's own table
    significant  <=>  |d| >= t(df) * se  <=>  the CI excludes 1

The speed-up is a ratio of geometric means of process means; on the log scale the interval is
symmetric, so it never crosses zero and a 2x speed-up and a 2x slow-down weigh the same. pyperf's
all-values verdict is kept beside it (`pyperf_significant`) for reference.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyperf
from pyperf._utils import is_significant, tdist95conf_level

from harness.exits import ExitStatus
from harness.perf.record import PerfSide

FASTER, SLOWER, SAME, WITHHELD, MISSING = "faster", "slower", "not significant", "withheld", "missing"
MIN_PROCESSES = 2  # a variance needs two processes per side


@dataclass(frozen=True)
class SpeedUp:
    """Baseline time / candidate time with its 95% interval (log-scale facts kept for pooling)."""

    ratio: float
    low: float
    high: float
    log_ratio: float
    standard_error: float
    df: float

    @property
    def significant(self) -> bool:
        return self.low > 1.0 or self.high < 1.0

    @property
    def verdict(self) -> str:
        return SAME if not self.significant else FASTER if self.ratio > 1.0 else SLOWER


def _interval(log_ratio: float, standard_error: float, df: float) -> SpeedUp:
    half = tdist95conf_level(max(df, 1.0)) * standard_error
    return SpeedUp(ratio=math.exp(log_ratio), low=math.exp(log_ratio - half), high=math.exp(log_ratio + half),
                   log_ratio=log_ratio, standard_error=standard_error, df=df)


def welch_speedup(baseline: Sequence[float], candidate: Sequence[float]) -> SpeedUp:
    """Speed-up of `candidate` over `baseline` from per-process mean times (Welch on log times)."""
    if len(baseline) < MIN_PROCESSES or len(candidate) < MIN_PROCESSES:
        raise ValueError(f"need at least {MIN_PROCESSES} worker processes per side, "
                         f"got {len(baseline)} and {len(candidate)}")
    x = [math.log(value) for value in baseline]
    y = [math.log(value) for value in candidate]
    var_x, var_y = statistics.variance(x) / len(x), statistics.variance(y) / len(y)
    standard_error = math.sqrt(var_x + var_y)
    if standard_error == 0.0:
        df = float(len(x) + len(y) - 2)
    else:
        df = (var_x + var_y) ** 2 / (var_x ** 2 / (len(x) - 1) + var_y ** 2 / (len(y) - 1))
    return _interval(statistics.fmean(x) - statistics.fmean(y), standard_error, df)


def geometric_mean(speedups: Sequence[SpeedUp]) -> SpeedUp:
    """Geometric mean of speed-ups; its interval pools the benchmarks' errors (independent processes)."""
    if not speedups:
        raise ValueError("no speed-ups to average")
    count = len(speedups)
    variances = [s.standard_error ** 2 for s in speedups]
    total = sum(variances)
    denominator = sum(v ** 2 / s.df for v, s in zip(variances, speedups, strict=True) if s.df > 0)
    df = total ** 2 / denominator if denominator > 0 else float(sum(s.df for s in speedups))
    return _interval(statistics.fmean(s.log_ratio for s in speedups), math.sqrt(total) / count, df)


def process_means(benchmark: pyperf.Benchmark) -> list[float]:
    """One mean per worker process that measured values (pyperf's calibration runs have none)."""
    return [statistics.fmean(run.values) for run in benchmark.get_runs() if run.values]


def pyperf_verdict(baseline: pyperf.Benchmark, candidate: pyperf.Benchmark) -> bool | None:
    """pyperf's own t-test on all values (None when the value counts differ: it cannot test those)."""
    values_b, values_c = baseline.get_values(), candidate.get_values()
    if len(values_b) != len(values_c) or len(values_b) < 2:
        return None
    return bool(is_significant(values_b, values_c)[0])


@dataclass(frozen=True)
class Stats:
    """pyperf's summary of one benchmark on one side, over all values."""

    mean: float
    stdev: float
    unit: str
    processes: int
    values: int


def stats_of(benchmark: pyperf.Benchmark) -> Stats:
    values = benchmark.get_values()
    return Stats(mean=benchmark.mean(), stdev=benchmark.stdev() if len(values) > 1 else 0.0,
                 unit=benchmark.get_unit(), processes=len(process_means(benchmark)), values=len(values))


@dataclass(frozen=True)
class JitFacts:
    """What the JIT did in one benchmark's worker processes (read back after background compiles)."""

    mode: str
    threshold: int | None
    compiled: tuple[int, ...]  # per measuring worker process (pyperf's calibration run left out)
    compile_ms: tuple[int, ...]
    errors: tuple[str, ...]

    @property
    def compiled_median(self) -> float | None:
        return statistics.median(self.compiled) if self.compiled else None

    @property
    def compile_ms_median(self) -> float | None:
        return statistics.median(self.compile_ms) if self.compile_ms else None

    @property
    def vacuous(self) -> bool:
        """The JIT was asked to run, and some worker compiled nothing: its numbers prove nothing."""
        return self.mode == "on" and (not self.compiled or min(self.compiled) == 0)


def jit_facts(benchmark: pyperf.Benchmark) -> JitFacts:
    runs = [run.get_metadata() for run in benchmark.get_runs() if run.values]
    modes = {str(m.get("harness_jit", "unknown")) for m in runs}
    thresholds = {m["harness_threshold"] for m in runs if "harness_threshold" in m}
    return JitFacts(
        mode=modes.pop() if len(modes) == 1 else "mixed",
        threshold=thresholds.pop() if len(thresholds) == 1 else None,
        compiled=tuple(int(m["harness_jit_compiled"]) for m in runs if "harness_jit_compiled" in m),
        compile_ms=tuple(int(m["harness_jit_compile_ms"]) for m in runs if "harness_jit_compile_ms" in m),
        errors=tuple(sorted({str(m["harness_jit_error"]) for m in runs if "harness_jit_error" in m})),
    )


@dataclass(frozen=True)
class Cell:
    """One benchmark under one candidate."""

    stats: Stats | None
    speedup: SpeedUp | None
    verdict: str
    jit: JitFacts | None
    pyperf_significant: bool | None = None
    reason: str = ""  # why the speed-up is withheld or missing


@dataclass(frozen=True)
class Row:
    name: str
    description: str
    tag: str
    baseline: Stats | None
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Candidate:
    """One candidate side: its validity and its geometric means by tag (and over all: "all")."""

    label: str
    path: str
    valid: bool
    problems: tuple[str, ...]
    geometric_means: dict[str, SpeedUp]
    jit_mode: str
    threshold: int | None
    notes: tuple[str, ...] = ()  # worker failures that were run again


@dataclass(frozen=True)
class PerfComparison:
    baseline_label: str
    baseline_path: str
    candidates: tuple[Candidate, ...]
    rows: tuple[Row, ...]
    problems: tuple[str, ...]  # problems with the baseline: every candidate is invalid then
    notes: tuple[str, ...] = ()  # the baseline's worker failures that were run again

    @property
    def valid(self) -> bool:
        return not self.problems and all(candidate.valid for candidate in self.candidates)

    @property
    def exit_status(self) -> int:
        return ExitStatus.OK if self.valid else ExitStatus.INVALID


def _metadata_values(suite: pyperf.BenchmarkSuite, key: str) -> set[str]:
    return {str(run.get_metadata()[key]) for bench in suite.get_benchmarks() for run in bench.get_runs()
            if key in run.get_metadata()}


def baseline_problems(side: PerfSide) -> list[str]:
    """A baseline that could import CinderX is no baseline (a falsifier, docs/background.md §1)."""
    origins = _metadata_values(side.suite, "harness_cinderx_origin")
    if side.record and side.record.jit == "absent" and side.record.interpreter.get("cinderx_origin"):
        origins.add(str(side.record.interpreter["cinderx_origin"]))
    return [f"baseline {side.label} could import CinderX ({origin}): not a clean baseline"
            for origin in sorted(origins)]


def pairing_problems(baseline: PerfSide, candidate: PerfSide) -> list[str]:
    """Differences that make a speed-up meaningless: machine, torch, Python version."""
    problems = []
    if baseline.record and candidate.record:
        for key, what in (("torch", "torch"), ("python", "Python")):
            b, c = baseline.record.versions.get(key), candidate.record.versions.get(key)
            if b != c:
                problems.append(f"{what} versions differ: {b} (baseline) vs {c} ({candidate.label})")
        for key in ("machine", "cpu", "cpu_count"):
            b, c = baseline.record.fingerprint.get(key), candidate.record.fingerprint.get(key)
            if b != c:
                problems.append(f"measured on different machines: {key} {b} vs {c}")
    else:
        b, c = _metadata_values(baseline.suite, "python_version"), _metadata_values(candidate.suite, "python_version")
        if b and c and b != c:
            problems.append(f"Python versions differ: {', '.join(sorted(b))} vs {', '.join(sorted(c))}")
    b, c = _metadata_values(baseline.suite, "harness_clock"), _metadata_values(candidate.suite, "harness_clock")
    if b != c:
        problems.append(f"measured with different clocks: {', '.join(sorted(b)) or '?'} (baseline) vs "
                        f"{', '.join(sorted(c)) or '?'} ({candidate.label})")
    errors = _metadata_values(candidate.suite, "harness_jit_error")
    problems += [f"{candidate.label}: JIT error in a worker: {error}" for error in sorted(errors)]
    return problems


def compare_cell(baseline: pyperf.Benchmark | None, candidate: pyperf.Benchmark | None,
                 candidate_invalid: bool) -> Cell:
    """One benchmark: the speed-up, or why there is none."""
    if candidate is None:
        return Cell(None, None, MISSING, None, reason="not measured by the candidate")
    stats, jit = stats_of(candidate), jit_facts(candidate)
    if baseline is None:
        return Cell(stats, None, MISSING, jit, reason="not measured by the baseline")
    if jit.vacuous:
        zero = sum(1 for count in jit.compiled if count == 0)
        return Cell(stats, None, WITHHELD, jit,
                    reason=f"the JIT compiled nothing in {zero} of {len(jit.compiled)} worker processes")
    if candidate_invalid:
        return Cell(stats, None, WITHHELD, jit, reason="the comparison is not valid (see problems)")
    try:
        speedup = welch_speedup(process_means(baseline), process_means(candidate))
    except ValueError as error:
        return Cell(stats, None, WITHHELD, jit, reason=str(error))
    return Cell(stats, speedup, speedup.verdict, jit, pyperf_verdict(baseline, candidate))


def _tag(benchmark: pyperf.Benchmark) -> str:
    tags = benchmark.get_metadata().get("tags") or ["untagged"]
    return str(tags[0])


def _unique(labels: Iterable[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return unique


def compare(baseline: PerfSide, candidates: Sequence[PerfSide]) -> PerfComparison:
    """Every benchmark of either side, under every candidate, against the baseline."""
    base = {bench.get_name(): bench for bench in baseline.suite.get_benchmarks()}
    sides = [{bench.get_name(): bench for bench in side.suite.get_benchmarks()} for side in candidates]
    names = list(base) + [name for side in sides for name in side if name not in base]
    names = list(dict.fromkeys(names))
    global_problems = baseline_problems(baseline)
    side_problems = [pairing_problems(baseline, side) for side in candidates]
    rows = []
    for name in names:
        reference = base.get(name) or next(side[name] for side in sides if name in side)
        cells = tuple(compare_cell(base.get(name), side.get(name), bool(global_problems or problems))
                      for side, problems in zip(sides, side_problems, strict=True))
        rows.append(Row(name=name, description=str(reference.get_metadata().get("description", "")),
                        tag=_tag(reference), baseline=stats_of(base[name]) if name in base else None, cells=cells))
    summaries = []
    for index, (side, label) in enumerate(zip(candidates, _unique(side.label for side in candidates), strict=True)):
        summaries.append(_candidate(side, label, rows, index, side_problems[index], global_problems))
    return PerfComparison(baseline.label, str(baseline.path), tuple(summaries), tuple(rows), tuple(global_problems),
                          failure_notes(baseline))


def failure_notes(side: PerfSide) -> tuple[str, ...]:
    """Failed suite invocations of a perf run that were run again: a crash is news even when retried."""
    failures = side.record.failures if side.record else ()
    return tuple(f"{side.label}: worker failure, run again: {failure}" for failure in failures)


def _candidate(side: PerfSide, label: str, rows: list[Row], index: int, problems: list[str],
               global_problems: list[str]) -> Candidate:
    cells = [(row, row.cells[index]) for row in rows]
    jits = [cell.jit for _, cell in cells if cell.jit is not None]
    modes = {jit.mode for jit in jits}
    mode = side.record.jit if side.record else (modes.pop() if len(modes) == 1 else "unknown")
    problems = list(problems)
    vacuous = [row.name for row, cell in cells if cell.jit is not None and cell.jit.vacuous]
    if mode == "on" and jits and len(vacuous) == len(jits):
        problems.append(f"{label}: the JIT compiled nothing in any benchmark: no JIT speed-up can be reported")
    measured = [(row.tag, cell.speedup) for row, cell in cells if cell.speedup is not None]
    means = {}
    for tag in sorted({tag for tag, _ in measured}):
        means[tag] = geometric_mean([s for t, s in measured if t == tag])
    if measured:
        means["all"] = geometric_mean([s for _, s in measured])
    threshold = side.record.threshold if side.record else next((j.threshold for j in jits if j.threshold), None)
    return Candidate(label=label, path=str(side.path), valid=not problems and not global_problems,
                     problems=tuple(problems), geometric_means=means, jit_mode=mode, threshold=threshold,
                     notes=failure_notes(side))


"""A/A check of the performance comparison: one configuration measured twice, back to back, must
come out "not significant" for at least 90% of the benchmarks (issue 7's acceptance criterion).

    python benchmarks/perf_aa.py [--python PATH] [--config stock] [--pairs N] [--first RUN_DIR]
                                 [--results DIR] [-- PERF RUN OPTIONS]

Runs `python -m harness perf run --config CONFIG` with PATH (default: the stock-perf nox
environment) until there are PAIRS+1 runs (`--first` reuses an existing run as the first one),
compares each run with the next (`python -m harness perf compare`), and prints per pair every
benchmark's speed-up, interval and verdict beside pyperf's own all-values verdict, then the share
"not significant" of both. Exit status 0 when every pair reaches the target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.90
DEFAULT_PYTHON = ROOT / ".nox" / "stock-perf" / "bin" / "python"


def perf_run(python: str, config: str, results: Path, options: list[str]) -> Path:
    """One perf run; its directory, read from the harness's last line."""
    command = [python, "-m", "harness", "perf", "run", "--config", config, "--results", str(results), *options]
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"perf run failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    last = done.stdout.strip().splitlines()[-1]
    return Path(last.split(": ", 1)[1])


def compare(python: str, baseline: Path, candidate: Path) -> dict:
    done = subprocess.run([python, "-m", "harness", "perf", "compare", str(baseline), str(candidate), "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 2):
        sys.exit(f"perf compare failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


def pyperf_word(value: bool | None) -> str:
    return {True: "significant", False: "not significant", None: "n/a"}[value]


def report_pair(index: int, report: dict) -> tuple[int, int, int]:
    """Print one pair's table; (benchmarks, not significant, not significant by pyperf's test)."""
    print(f"\n### A/A pair {index}: {report['baseline']['path']} vs {report['candidates'][0]['path']}\n")
    print("| Benchmark | speed-up [95% CI] | verdict | pyperf all-values t-test |")
    print("|---|---|---|---|")
    total = same = pyperf_same = 0
    for bench in report["benchmarks"]:
        cell = bench["candidates"][0]
        if cell["speedup"] is None:
            print(f"| {bench['name']} | - | {cell['verdict']}: {cell['reason']} | - |")
            continue
        total += 1
        same += cell["verdict"] == "not significant"
        pyperf_same += cell["pyperf_significant"] is False
        low, high = cell["ci95"]
        print(f"| {bench['name']} | {cell['speedup']:.3f} [{low:.3f}, {high:.3f}] | {cell['verdict']} | "
              f"{pyperf_word(cell['pyperf_significant'])} |")
    overall = report["candidates"][0]["geometric_mean"].get("all")
    if overall:
        print(f"| **geometric mean** | {overall['speedup']:.3f} [{overall['ci95'][0]:.3f}, {overall['ci95'][1]:.3f}] "
              f"| {overall['verdict']} | |")
    return total, same, pyperf_same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=str(DEFAULT_PYTHON), help="interpreter with torch and pyperf")
    parser.add_argument("--config", default="stock")
    parser.add_argument("--pairs", type=int, default=1, help="consecutive pairs of runs to compare (default 1)")
    parser.add_argument("--first", type=Path, help="an existing perf run directory to use as the first run")
    parser.add_argument("--results", type=Path, default=ROOT / "results" / "perf-aa")
    parser.add_argument("options", nargs="*", help="options for `harness perf run` (after --)")
    args = parser.parse_args()
    runs = [args.first.resolve()] if args.first else []
    while len(runs) < args.pairs + 1:
        runs.append(perf_run(args.python, args.config, args.results, args.options))
    totals = []
    for index, (baseline, candidate) in enumerate(zip(runs, runs[1:]), start=1):
        totals.append(report_pair(index, compare(args.python, baseline, candidate)))
    print("\n## A/A summary\n")
    reached = True
    for index, (total, same, pyperf_same) in enumerate(totals, start=1):
        share = same / total if total else 0.0
        reached &= share >= TARGET
        print(f"- pair {index}: {same}/{total} not significant ({share:.0%}; target {TARGET:.0%}); "
              f"pyperf's all-values t-test: {pyperf_same}/{total} ({pyperf_same / total if total else 0:.0%})")
    print(f"\nA/A target {'reached' if reached else 'MISSED'}")
    return 0 if reached else 1


if __name__ == "__main__":
    sys.exit(main())

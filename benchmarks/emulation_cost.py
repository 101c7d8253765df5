"""What emulating aarch64 costs (docs/aarch64.md): one tier (or a selection of its files) under stock
and cinderx-jit natively and under their aarch64 twins in qemu-user, in interleaved rounds.

Prints, per configuration, the median wall time of a run, its tests and compiled functions, the
seconds per test and per compiled function; then the emulated-to-native ratio of stock and of
cinderx-jit (the median of the per-round ratios): what an aarch64 tier costs on this machine, and
what it buys in JIT-compiled functions per emulated CPU-minute.

Each configuration runs in its nox environment (`nox -s <configuration>-<tier>` builds it):

    python benchmarks/emulation_cost.py [--tier p0] [--select FILE ...] [--threshold N] [--rounds N] [--jobs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from measure import timed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.record.store import find_runs  # noqa: E402

PAIRS = {"stock": "stock-aarch64", "cinderx-jit": "cinderx-jit-aarch64"}  # native -> emulated twin


def environment(configuration: str, tier: str) -> Path:
    """The interpreter of the configuration's nox environment for the tier."""
    python = ROOT / ".nox" / f"{configuration}-{tier}" / "bin" / "python"
    if not python.exists():
        sys.exit(f"no nox environment of {configuration}: run `nox -s {configuration}-{tier}` first")
    return python


def one_run(python: Path, configuration: str, args: argparse.Namespace, results: Path) -> dict[str, float]:
    command = [str(python), "-m", "harness", "run", "--config", configuration, "--tier", args.tier,
               "--results", str(results), "--jobs", str(args.jobs)]
    command += ["--select", *args.select] if args.select else []
    command += ["--threshold", str(args.threshold)] if args.threshold is not None and "jit" in configuration else []
    before = {path for path, _ in find_runs(results)}
    seconds = timed(command, env={}, cwd=ROOT)
    record = next(record for path, record in find_runs(results) if path not in before)
    tests = sum(sum(file.counts.values()) for file in record.files)
    return {"seconds": seconds, "tests": tests, "compiled": record.compiled, "emulated": record.emulated}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="p0")
    parser.add_argument("--select", nargs="+", metavar="FILE", help="these files of the tier only")
    parser.add_argument("--threshold", type=int, help="JIT threshold of the cinderx-jit runs")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    configurations = [name for pair in PAIRS.items() for name in pair]
    pythons = {name: environment(name, args.tier) for name in configurations}
    measured: dict[str, list[dict[str, float]]] = {name: [] for name in configurations}
    with tempfile.TemporaryDirectory(prefix="emulation-cost-") as scratch:
        for index in range(args.rounds):  # interleaved: each round starts with the next configuration
            order = configurations[index % len(configurations):] + configurations[:index % len(configurations)]
            for name in order:
                measured[name].append(one_run(pythons[name], name, args, Path(scratch) / name))
                last = measured[name][-1]
                print(f"round {index + 1}: {name}: {last['seconds']:.1f} s", file=sys.stderr, flush=True)
    what = f"tier {args.tier}" + (f" ({' '.join(args.select)})" if args.select else "")
    print(f"emulation cost of {what}, {args.rounds} rounds, --jobs {args.jobs}"
          + (f", threshold {args.threshold}" if args.threshold is not None else ""))
    print(f"{'configuration':<22} {'emulated':>8} {'run s':>8} {'tests':>6} {'s/test':>8} {'compiled':>9} "
          f"{'s/compiled':>10} {'compiled/CPU-min':>16}")
    for name in configurations:
        runs = measured[name]
        seconds = statistics.median(r["seconds"] for r in runs)
        tests, compiled = runs[-1]["tests"], runs[-1]["compiled"]
        per_compiled = f"{seconds / compiled:.3f}" if compiled else "-"
        per_minute = f"{compiled / (seconds * args.jobs / 60):.1f}" if compiled else "-"
        print(f"{name:<22} {str(bool(runs[-1]['emulated'])):>8} {seconds:>8.1f} {tests:>6} "
              f"{seconds / max(tests, 1):>8.2f} {compiled:>9} {per_compiled:>10} {per_minute:>16}")
    for native, emulated in PAIRS.items():
        ratios = sorted(e["seconds"] / n["seconds"] for n, e in zip(measured[native], measured[emulated]))
        print(f"{emulated} / {native}: median of {len(ratios)} rounds {statistics.median(ratios):.1f}x "
              f"(rounds {ratios[0]:.1f}-{ratios[-1]:.1f}x)")


if __name__ == "__main__":
    main()

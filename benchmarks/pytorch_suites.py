"""The harness on PyTorch's own suites against pytest alone: overhead and agreement, in one run.

For every file of a tier's bundled suites (P1 by default: PyTorch's generic tests over the
databases inside torch, harness/torch_suites/p1/), both ways, back to back in alternating order:
- the harness: `python -m harness run --config stock --tier p1 --select FILE` (script mode, the
  harness plugin, warm restarts, the run record and JUnit XML);
- pytest alone, started the way the tier starts a file (`entry: script`, as PyTorch's CI does:
  `python -bb FILE --use-pytest --junitxml=...`; `entry: pytest`: `python -bb -m pytest FILE ...`),
  with the same environment. The entry matters more than the harness: test_ops_out.py takes about
  25 s as a script and 42 s under `python -m pytest` (same 1,403 outcomes), so comparing the
  harness's script run against `-m pytest` would credit the harness with PyTorch's speed-up.
It prints each file's wall times, their ratio, and whether the two records agree test by test
(same test ids, same outcomes: harness/compare/identity.py `disagreements`), then the total ratio
(target: at most 1.03) and the median of the per-round total ratios when --rounds > 1.

    python benchmarks/pytorch_suites.py [--python PATH] [--tier p1] [--select FILE ...] [--rounds N]

The interpreter needs torch (default: the stock-p1 nox environment, else stock-p0's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from measure import timed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.compare.identity import disagreements  # noqa: E402
from harness.configure.configurations import load_catalog  # noqa: E402
from harness.configure.tiers import get_tier  # noqa: E402
from harness.compare.sides import load_side  # noqa: E402
from harness.record.store import find_runs  # noqa: E402
from harness.run.runner import interpreter_environment  # noqa: E402

TARGET = 1.03


def default_python() -> str:
    for session in ("stock-p1", "stock-p0"):
        python = ROOT / ".nox" / session / "bin" / "python"
        if python.exists():
            return str(python)
    return sys.executable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=default_python())
    parser.add_argument("--tier", default="p1")
    parser.add_argument("--select", nargs="+", metavar="FILE", help="only these files of the tier")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    tier, tests_dir = get_tier(args.tier).located(None)
    files = args.select or tier.discover(tests_dir)
    env = interpreter_environment(load_catalog().get("stock"), tier.env)
    totals: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as scratch:
        for number in range(args.rounds):
            harness_total = pytest_total = 0.0
            print(f"round {number + 1}: file, tests, harness s, pytest s, ratio, agreement", flush=True)
            for index, file in enumerate(files):
                results = Path(scratch) / f"r{number}-{index}"
                junit = Path(scratch) / f"j{number}-{index}"
                harness = [args.python, "-m", "harness", "run", "--config", "stock", "--tier", args.tier,
                           "--select", file, "--results", str(results)]
                entry = [file, "--use-pytest"] if tier.entry == "script" else ["-m", "pytest", file]
                plain = [args.python, "-bb", *entry, "-q", f"--junitxml={junit / 'junit.xml'}"]
                order = [("harness", harness), ("pytest", plain)]
                times = {}
                for name, command in (order if (number + index) % 2 == 0 else order[::-1]):
                    times[name] = timed(command, env, ROOT, ok=(0, 1))  # pytest exits 1 when a test fails
                ours = load_side(find_runs(results)[0][0]).results
                found = disagreements(ours, load_side(junit).results)
                harness_total += times["harness"]
                pytest_total += times["pytest"]
                agreement = "agree" if not found else f"{len(found)} DISAGREE: {'; '.join(found[:3])}"
                tests = sum(1 for _ in ours)  # a run's results are streamed from its JUnit files
                print(f"  {file}, {tests}, {times['harness']:.1f}, {times['pytest']:.1f}, "
                      f"{times['harness'] / times['pytest']:.3f}, {agreement}", flush=True)
            totals.append((harness_total, pytest_total))
            print(f"round {number + 1} total: harness {harness_total:.1f} s, pytest {pytest_total:.1f} s, "
                  f"ratio {harness_total / pytest_total:.3f}", flush=True)
    ratio = statistics.median(h / p for h, p in totals)
    print(f"{tier.name} ({len(files)} files, {os.cpu_count()} cores): harness / pytest alone = {ratio:.3f} "
          f"(median of {len(totals)} rounds; {'meets' if ratio <= TARGET else 'MISSES'} target <= {TARGET})")


if __name__ == "__main__":
    main()

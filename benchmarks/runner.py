"""Runner benchmarks: three ratios, each measured in this one run (shared machines are noisy, so
each side is timed REPEATS times, interleaved, and the best time of each side is compared).

1. harness overhead: `python -m harness run` on a file vs plain `pytest FILE --junitxml` (target <= 1.05)
2. crash cost: a 1000-test file that crashes at test 10 vs the same file crash-free (target <= 1.2)
3. parallelism: a CPU-bound tier of 4 files with `--jobs 2` vs `--jobs 1` on 2 cores (target <= 0.6)

    python benchmarks/runner.py [--python PATH] [--repeats N]

The test interpreter needs torch (default: the stock-p0 nox environment if it exists).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TEST_FILE = '''
import ctypes
import pytest
import torch

torch.set_num_threads(1)
CRASH_AT = {crash_at}
WORK = torch.randn(96, 96)


@pytest.mark.parametrize("index", range({count}))
def test_cpu_bound(index):
    if index == CRASH_AT:
        ctypes.string_at(0)
    x = WORK
    for _ in range({rounds}):
        x = torch.tanh(x @ WORK) * 0.5
    assert torch.isfinite(x).all()
'''


def write_corpus(folder: Path) -> None:
    (folder / "single").mkdir()
    (folder / "tier").mkdir()
    (folder / "single" / "test_clean.py").write_text(TEST_FILE.format(crash_at=-1, count=1000, rounds=40))
    (folder / "single" / "test_crash_at_10.py").write_text(TEST_FILE.format(crash_at=10, count=1000, rounds=40))
    for name in "abcd":
        (folder / "tier" / f"test_part_{name}.py").write_text(TEST_FILE.format(crash_at=-1, count=250, rounds=60))
    (folder / "tiers.yaml").write_text("tiers:\n  bench:\n    files: ['test_*.py']\n    timeout: 3600\n")


def timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"benchmark command failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-2000:]}")
    return elapsed


def best_pair(first: list[str], second: list[str], env: dict[str, str], cwd: Path, repeats: int) -> tuple[float, float]:
    """Best of `repeats` for each command, interleaved so drifting load hits both sides alike."""
    a, b = [], []
    for _ in range(repeats):
        a.append(timed(first, env, cwd))
        b.append(timed(second, env, cwd))
    return min(a), min(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_python = ROOT / ".nox" / "stock-p0" / "bin" / "python"
    parser.add_argument("--python", default=str(default_python if default_python.exists() else sys.executable))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_corpus(folder)
        env = {**os.environ, "HARNESS_TIERS": str(folder / "tiers.yaml"), "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(ROOT)}
        harness = [sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "bench",
                   "--python", args.python, "--results", str(folder / "results")]
        single = folder / "single"

        plain, ours = best_pair(
            [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_clean.py", f"--junitxml={folder / 'plain.xml'}"],
            [*harness, "--tests-dir", str(single), "--select", "test_clean.py"], env, single, args.repeats)
        report("harness overhead vs plain pytest --junitxml", ours, plain, 1.05)

        clean, crashed = best_pair([*harness, "--tests-dir", str(single), "--select", "test_clean.py"],
                                   [*harness, "--tests-dir", str(single), "--select", "test_crash_at_10.py"],
                                   env, single, args.repeats)
        report("crash at test 10 of 1000 vs crash-free", crashed, clean, 1.2)

        tier = folder / "tier"
        one, two = best_pair([*harness, "--tests-dir", str(tier), "--jobs", "1"],
                             [*harness, "--tests-dir", str(tier), "--jobs", "2"], env, tier, max(1, args.repeats - 1))
        report(f"--jobs 2 vs --jobs 1 on {os.cpu_count()} cores (4 CPU-bound files)", two, one, 0.6)


def report(what: str, measured: float, reference: float, target: float) -> None:
    ratio = measured / reference
    verdict = "meets" if ratio <= target else "MISSES"
    print(f"{what}: {measured:.2f} s / {reference:.2f} s = {ratio:.3f} ({verdict} target <= {target})", flush=True)


if __name__ == "__main__":
    main()

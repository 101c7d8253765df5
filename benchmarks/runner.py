"""Runner benchmarks: three ratios, each measured in this one run. Shared machines are noisy (the
same command varies by 20% here), so the commands of a comparison run in rounds, back to back in
rotating order, and the verdict is on the median of the per-round ratios, which slow load drifts
hit alike; the ratio of the best times is printed beside it.

1. harness overhead: `python -m harness run` on a file vs plain `pytest FILE --junitxml` (target <= 1.05)
2. crash cost: a 1000-test file that crashes at test 10 vs the same file crash-free (target <= 1.2),
   resuming warm (a fork of the collected process, the default); the same with `restart: fresh`
   (a new interpreter) is printed for reference
3. parallelism: a CPU-bound tier of 4 files with `--jobs 2` vs `--jobs 1` on 2 cores (target <= 0.6)

    python benchmarks/runner.py [--python PATH] [--repeats ROUNDS]

The test interpreter needs torch (default: the stock-p0 nox environment if it exists).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from measure import report, rounds

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from harness.protocol import Setting  # noqa: E402

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
    bench = {"files": ["test_*.py"], "timeout": 3600}
    (folder / "tiers.yaml").write_text(yaml.safe_dump({"tiers": {"bench": bench, "bench-fresh": {**bench, "restart": "fresh"}}}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_python = ROOT / ".nox" / "stock-p0" / "bin" / "python"
    parser.add_argument("--python", default=str(default_python if default_python.exists() else sys.executable))
    parser.add_argument("--repeats", type=int, default=5, help="rounds per comparison (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_corpus(folder)
        # One thread per test process, as P0 runs: CPU-bound files measure file parallelism, and
        # no OpenMP/BLAS pool is alive after collection, so a crash resumes warm.
        env = {**os.environ, Setting.TIERS: str(folder / "tiers.yaml"), "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(ROOT)}
        harness = [sys.executable, "-m", "harness", "run", "--config", "stock", "--tier", "bench",
                   "--python", args.python, "--results", str(folder / "results")]
        single = folder / "single"

        plain = [args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_clean.py",
                 f"--junitxml={folder / 'plain.xml'}"]
        times = rounds({"plain": plain, "harness": [*harness, "--tests-dir", str(single), "--select", "test_clean.py"]},
                       env, single, args.repeats)
        report("harness overhead vs plain pytest --junitxml", times["harness"], times["plain"], 1.05)

        fresh = ["bench-fresh" if arg == "bench" else arg for arg in harness]
        times = rounds({"clean": [*harness, "--tests-dir", str(single), "--select", "test_clean.py"],
                        "warm": [*harness, "--tests-dir", str(single), "--select", "test_crash_at_10.py"],
                        "fresh": [*fresh, "--tests-dir", str(single), "--select", "test_crash_at_10.py"]},
                       env, single, args.repeats)
        report("crash at test 10 of 1000 vs crash-free (warm restart)", times["warm"], times["clean"], 1.2)
        report("crash at test 10 of 1000 vs crash-free (fresh restart, reference)", times["fresh"], times["clean"], None)

        tier = folder / "tier"
        times = rounds({"one": [*harness, "--tests-dir", str(tier), "--jobs", "1"],
                        "two": [*harness, "--tests-dir", str(tier), "--jobs", "2"]}, env, tier, max(2, args.repeats - 1))
        report(f"--jobs 2 vs --jobs 1 on {os.cpu_count()} cores (4 CPU-bound files)", times["two"], times["one"], 0.6)


if __name__ == "__main__":
    main()

"""Confirmation at real cost: `diff --confirm K` with reruns in fresh processes against reruns in
forks of one collected process per configuration and file (the default), measured in one run.

The test file is built the way PyTorch's generic tests are: one `@ops(op_db)` template
instantiated for CPU over OpInfos from the database inside torch, so a fresh rerun pays what a
real one pays (interpreter start, `import torch`, importing op_db, collection). The candidate
configuration makes REGRESSIONS of its tests fail; `diff --confirm K` then reruns each of them K
times alone in both configurations. Prints the seconds per regression each way, and the ratio.

    python benchmarks/confirm.py [--python PATH] [--confirm K] [--rounds N]

With `--runs BASELINE CANDIDATE` (two run directories, e.g. PyTorch's real test_custom_ops.py run
through `--tests-dir` under stock and under cinderx-jit at threshold 1) it times `diff --confirm K`
of those runs instead, and with `--before DIR` (a folder holding an earlier `harness` package, e.g.
`git archive REV harness | tar -x -C DIR`) the same confirmation by that code too, in the same
rounds: confirmation that learns its polluters (this code) against one that bisects every
order-dependent regression (before it). Prints seconds per regression each way (target <= 10 s on 2
cores) and how many regressions each confirmed order-dependent, with which polluters.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from measure import rounds, timed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from harness.protocol import Setting  # noqa: E402

REGRESSIONS = 20
OPS = 120  # OpInfos instantiated: the collection a rerun must repeat

TEST_FILE = '''
import os

import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests

FAILING = set(filter(None, os.environ.get("BENCH_FAILING", "").split(",")))
OPS = [op for op in op_db if not op.variant_test_name and torch.float32 in op.dtypes][:{ops}]


class TestConfirm(TestCase):
    @ops(OPS, allowed_dtypes=(torch.float32,))
    def test_first_sample(self, device, dtype, op):
        sample = next(iter(op.sample_inputs(device, dtype)))
        op(sample.input, *sample.args, **sample.kwargs)
        self.assertNotIn(op.name, FAILING)


instantiate_device_type_tests(TestConfirm, globals(), only_for="cpu")

if __name__ == "__main__":
    run_tests()
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = ROOT / ".nox" / "stock-p0" / "bin" / "python"
    parser.add_argument("--python", default=str(default if default.exists() else sys.executable))
    parser.add_argument("--confirm", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--runs", nargs=2, type=Path, metavar=("BASELINE", "CANDIDATE"),
                        help="time the confirmation of these two run directories instead")
    parser.add_argument("--before", type=Path, help="with --runs: a folder with an earlier harness package, timed too")
    args = parser.parse_args()
    if args.runs:
        real_runs(args.runs, args.confirm, args.rounds, args.before)
        return
    with tempfile.TemporaryDirectory(prefix="harness-confirm-") as scratch:
        folder = Path(scratch)
        (folder / "tests").mkdir()
        (folder / "tests" / "test_confirm.py").write_text(TEST_FILE.format(ops=OPS))
        failing = _failing_ops(args.python)
        tiers = {"tiers": {"bench": {"files": ["test_*.py"], "entry": "script", "env": {"OMP_NUM_THREADS": "1"}}}}
        faulty = {"python": args.python, "venv": False, "jit": "absent", "env": {"BENCH_FAILING": ",".join(failing)}}
        (folder / "tiers.yaml").write_text(yaml.safe_dump(tiers))
        (folder / "configurations.yaml").write_text(yaml.safe_dump({"configurations": {"faulty": faulty}}))
        env = {**os.environ, Setting.TIERS: str(folder / "tiers.yaml"),
               Setting.CONFIGURATIONS: str(folder / "configurations.yaml"), "PYTHONPATH": str(ROOT)}
        runs = {}
        for config in ("stock", "faulty"):
            runs[config] = folder / config
            timed([sys.executable, "-m", "harness", "run", "--config", config, "--tier", "bench", "--tests-dir",
                   str(folder / "tests"), "--python", args.python, "--results", str(runs[config])], env, ROOT)
        sides = [str(next(path.parent for path in runs[c].glob("*/run.json"))) for c in ("stock", "faulty")]
        diff = [sys.executable, "-m", "harness", "diff", *sides, "--confirm", str(args.confirm), "--format", "json"]
        times = rounds({"fresh": [*diff, "--confirm-restart", "fresh"], "warm": [*diff, "--confirm-restart", "warm"]},
                       env, ROOT, args.rounds, ok=(1,))
    reruns = REGRESSIONS * args.confirm * 2
    for name in ("fresh", "warm"):
        seconds = statistics.median(times[name])
        print(f"{name}: {seconds:.1f} s for {REGRESSIONS} regressions x {args.confirm} reruns x 2 configurations "
              f"({reruns} reruns) = {seconds / REGRESSIONS:.2f} s per regression, {seconds / reruns:.2f} s per rerun")
    print(f"warm / fresh: {statistics.median(w / f for w, f in zip(times['warm'], times['fresh'])):.3f}")


def real_runs(runs: list[Path], confirm: int, count: int, before: Path | None) -> None:
    """`diff --confirm K` of two existing run directories, with this harness and (`before`) an earlier one."""
    import json

    with tempfile.TemporaryDirectory(prefix="harness-confirm-") as scratch:
        commands, envs = {}, {}
        for name, tree in (("after", ROOT), *((("before", before),) if before else ())):
            out = Path(scratch) / name
            commands[name] = [sys.executable, "-m", "harness", "diff", *map(str, runs), "--confirm", str(confirm),
                              "--format", "json", "--out", str(out)]
            envs[name] = {**os.environ, "PYTHONPATH": str(tree)}
        times: dict[str, list[float]] = {name: [] for name in commands}
        found: dict[str, dict] = {}
        for index in range(count):
            names = list(commands)[index % len(commands):] + list(commands)[:index % len(commands)]
            for name in names:
                times[name].append(timed(commands[name], envs[name], Path(scratch), ok=(0, 1)))
                found[name] = json.loads((Path(scratch) / name / "report.json").read_text())
                print(f"round {index + 1}, {name}: {times[name][-1]:.1f} s", flush=True)
    for name, seconds in times.items():
        regressions = found[name]["regressions"]
        ordered = [r for r in regressions if r["polluters"]]
        polluters = sorted({" then ".join(r["polluters"]) for r in ordered})
        median = statistics.median(seconds)
        print(f"{name}: {median:.1f} s for {len(regressions)} regressions ({len(ordered)} order-dependent, after "
              f"{'; '.join(polluters) or 'none'}) = {median / max(len(regressions), 1):.1f} s per regression "
              f"(target <= 10 s)")
    if "before" in times:
        print(f"after / before: {statistics.median(a / b for a, b in zip(times['after'], times['before'])):.3f}")


def _failing_ops(python: str) -> list[str]:
    """The names of REGRESSIONS of the instantiated ops, spread over the file."""
    import subprocess

    code = ("import torch; from torch.testing._internal.common_methods_invocations import op_db; "
            f"ops = [op.name for op in op_db if not op.variant_test_name and torch.float32 in op.dtypes][:{OPS}]; "
            f"print(','.join(ops[::{OPS // REGRESSIONS}][:{REGRESSIONS}]))")
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip().split(",")


if __name__ == "__main__":
    main()

"""CPU time of P3's database stages per backend, measured on a spread sample of entries and projected
to the whole stage: how many shards a nightly job needs.

For every P3 module (harness/torch_suites/p3/) and backend, the tests of that backend (its compile
test and its hot states; functorch's transforms as one group) run under `pytest` in the configuration's interpreter, narrowed by
HARNESS_ENTRIES to every K-th entry of the database (a spread: the databases are sorted by name, not
by cost). The children's CPU time (user + system, from the kernel) is divided by the entries sampled
and multiplied by the database's entries. CPU time, not wall time: the machine is shared.

    python benchmarks/p3_cost.py [--python PATH] [--config stock] [--threshold N] [--every K]
                                 [--shard-minutes M] [--module ops_eager ...]

Prints one row per module and backend: entries sampled, CPU seconds, seconds per entry, projected CPU
minutes for the whole database, then the total per backend and the shards of M CPU minutes
(default 90: a nightly job of 45 minutes on 2 cores) that `--shard I/N` needs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.configure.configurations import load_catalog  # noqa: E402
from harness.configure.tiers import get_tier  # noqa: E402
from harness.protocol import Env  # noqa: E402
from harness.run.runner import interpreter_environment  # noqa: E402

P3 = "harness/torch_suites/p3/test_{}.py"
# pytest -k expressions that pick one backend's tests out of a module (test names: compilechecks.py);
# functorch's transforms (transformchecks.py) are one group: eager transforms and their compiled twins.
BACKENDS: dict[str, str | None] = {"eager": "eager and not aot_eager", "aot_eager": "aot",
                                   "inductor": "inductor or comprehensive or correctness", "functorch": None}
COMPILE = ("eager", "aot_eager", "inductor")
# --module name -> (the module's file stem, the backends its tests use)
MODULES = {"ops_eager": ("compile_ops_eager", ("eager",)), "ops_aot_eager": ("compile_ops_aot_eager", ("aot_eager",)),
           "ops_inductor": ("compile_ops_inductor", ("inductor",)), "modules": ("compile_modules", COMPILE),
           "optimizers": ("compile_optimizers", COMPILE), "hops": ("compile_hops", COMPILE),
           "transforms": ("functorch_ops", ("functorch",))}
NAMES = """import json, os, importlib
os.environ["{entries}"] = "<none>"
module = importlib.import_module("harness.torch_suites.p3.test_{module}")
print(json.dumps([module.ENTRIES.full_name(item) for item in module.ENTRIES.items]))"""


def entry_names(python: str, env: dict[str, str], module: str) -> list[str]:
    script = NAMES.format(entries=Env.ENTRIES, module=module)
    done = subprocess.run([python, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def cpu_seconds(command: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of `command` and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1, 5):  # failed tests are outcomes here, not a broken benchmark
        sys.exit(f"benchmark command failed ({done.returncode}): {' '.join(command)}\n{done.stdout[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=str(ROOT / ".nox" / "stock-p3" / "bin" / "python"))
    parser.add_argument("--config", default="stock")
    parser.add_argument("--threshold", type=int)
    parser.add_argument("--every", type=int, default=40, help="sample every K-th entry (default 40)")
    parser.add_argument("--shard-minutes", type=float, default=90.0)
    parser.add_argument("--module", nargs="*", choices=sorted(MODULES), default=sorted(MODULES))
    args = parser.parse_args()
    configuration = load_catalog().get(args.config).with_threshold(args.threshold)
    env = interpreter_environment(configuration, get_tier("p3").env)
    totals: dict[str, float] = defaultdict(float)
    print(f"{'module':<15} {'backend':<10} {'sampled':>7} {'of':>5} {'CPU s':>8} {'s/entry':>8} {'whole, CPU min':>15}")
    for module in args.module:
        stem, backends = MODULES[module]
        names = entry_names(args.python, env, stem)
        sample = names[::args.every]
        for backend in backends:
            chosen = BACKENDS[backend]
            command = [args.python, "-m", "pytest", "-p", "harness.run.plugin", "-p", "no:cacheprovider", "-q",
                       *(("-k", chosen) if chosen else ()), P3.format(stem)]
            seconds = cpu_seconds(command, {**env, Env.ENTRIES: ",".join(sample)})
            whole = seconds / len(sample) * len(names) / 60
            totals[backend] += whole
            print(f"{module:<15} {backend:<10} {len(sample):>7} {len(names):>5} {seconds:>8.0f} "
                  f"{seconds / len(sample):>8.1f} {whole:>15.0f}", flush=True)
    for backend, minutes in totals.items():
        print(f"{backend}: {minutes:.0f} CPU minutes for the whole stage ({args.config}); "
              f"{math.ceil(minutes / args.shard_minutes)} shards of {args.shard_minutes:.0f} CPU minutes")
    print(f"all backends: {sum(totals.values()):.0f} CPU minutes; "
          f"{math.ceil(sum(totals.values()) / args.shard_minutes)} shards of {args.shard_minutes:.0f}")


if __name__ == "__main__":
    os.environ.pop("CI", None)
    main()

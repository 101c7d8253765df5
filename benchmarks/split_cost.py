"""What one more worker on a split file costs: forked from the process that imported torch and
collected the file, against a fresh process that imports and collects it again (seconds and MB).

In the configuration's interpreter (--python), one host process imports torch and collects FILE with
pytest (in process), then in each round forks a worker that runs a small torch function and
exits; the host times fork to exit, and the worker reports its private memory (Private_Clean +
Private_Dirty of /proc/self/smaps_rollup: what it does not share with the host) and its RSS. Each
round also starts a fresh process that imports torch and collects FILE the same way, timed from
start to exit, with its peak RSS (ru_maxrss). Rounds interleave fresh and forked; medians printed.

    python benchmarks/split_cost.py [--python PATH] [--rounds 5] [--jit THRESHOLD] [FILE]

Every worker, fresh or forked, then calls a Python function around F.relu CALLS (2,000) times: the
same work with and without a JIT. `--jit N` (an interpreter with CinderX, N < CALLS): cinderx is
imported before torch, and every worker switches the JIT on after collection at threshold N (as the
harness's `after-collection` activation does; a warm host forks before the JIT is on) and reports
the JIT's state read back: enabled, and the functions it compiled.

FILE defaults to a breadth module (harness/torch_suites/breadth/test_ops_tags.py). The forked
seconds are what harness/run/split.py's FORK_SECONDS plans with; the fresh seconds are a file's
start, which the plan takes from the run history.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILE = "harness/torch_suites/breadth/test_ops_tags.py"
CALLS = 2000

# Runs inside the measured interpreter: standard library, torch and pytest only.
PROBE = r"""
import contextlib, json, os, resource, sys, time
threshold = int(sys.argv[4])
if threshold:
    import cinderx.jit
import pytest, torch

def step(x):
    return torch.nn.functional.relu(x).sum().item()  # F.relu is Python: a function for the JIT to compile

def engage():
    # the JIT on after collection (with --jit), the op run CALLS times; the JIT's state read back
    if threshold:
        cinderx.jit.enable()
        cinderx.jit.compile_after_n_calls(threshold)
    for _ in range(int(sys.argv[5])):
        step(torch.ones(64))
    if not threshold:
        return {}
    cinderx.jit.wait_for_background_compiles()
    return {"jit_enabled": cinderx.jit.is_enabled(), "compiled": len(cinderx.jit.get_compiled_functions())}

def private_mb():
    fields = {}
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[name] = int(rest.split()[0])
    return (fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)) / 1024, fields.get("Rss", 0) / 1024

class Quiet:
    def pytest_collection_finish(self, session):
        self.count = len(session.items)

quiet = Quiet()
with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
    pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", sys.argv[2]], plugins=[quiet])
if sys.argv[1] == "fresh":
    state = engage()
    print(json.dumps({"tests": quiet.count, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      **state}))
    os._exit(0)
for _ in range(int(sys.argv[3])):
    read, write = os.pipe()
    began = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        state = engage()
        private, rss = private_mb()
        os.write(write, json.dumps({"private_mb": private, "rss_mb": rss, **state}).encode())
        os._exit(0)
    os.close(write)
    found = json.loads(os.read(read, 4096))
    os.waitpid(pid, 0)
    found["seconds"] = time.perf_counter() - began
    host_private, host_rss = private_mb()
    print(json.dumps({**found, "host_rss_mb": host_rss}), flush=True)
    sys.stdin.readline()  # the driver says when to fork again: rounds interleave with fresh starts
"""


def fresh(python: str, file: str, jit: int, env: dict[str, str]) -> dict[str, float]:
    began = time.perf_counter()
    done = subprocess.run([python, "-c", PROBE, "fresh", file, "0", str(jit), str(CALLS)], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "seconds": time.perf_counter() - began}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=DEFAULT_FILE)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jit", type=int, default=0, metavar="THRESHOLD",
                        help="switch CinderX's JIT on in every worker after collection (default: no JIT)")
    args = parser.parse_args()
    if not 0 <= args.jit < CALLS:
        parser.error(f"--jit must be below the {CALLS} calls, for the JIT to compile")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    host = subprocess.Popen([args.python, "-c", PROBE, "forked", args.file, str(args.rounds), str(args.jit), str(CALLS)],
                            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    forked, started = [], []
    assert host.stdout is not None and host.stdin is not None
    for _ in range(args.rounds):
        started.append(fresh(args.python, args.file, args.jit, env))
        forked.append(json.loads(host.stdout.readline()))
        host.stdin.write("\n")
        host.stdin.flush()
    host.wait()

    def median(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    print(f"{args.file}: {started[0]['tests']} tests collected; {args.rounds} interleaved rounds, medians "
          f"({args.python})")
    print(f"fresh worker:  {median(started, 'seconds'):8.3f} s to start, import torch, collect and make {CALLS:,} calls; "
          f"peak RSS {median(started, 'peak_mb'):,.0f} MB")
    print(f"forked worker: {median(forked, 'seconds'):8.3f} s from fork to exit after {CALLS:,} calls; "
          f"{median(forked, 'private_mb'):,.1f} MB of its own (RSS {median(forked, 'rss_mb'):,.0f} MB, "
          f"shared with its host of {median(forked, 'host_rss_mb'):,.0f} MB)")
    if args.jit:
        for name, rows in (("fresh", started), ("forked", forked)):
            if not all(row.get("jit_enabled") and row.get("compiled", 0) > 0 for row in rows):
                sys.exit(f"the JIT did not engage in every {name} worker: {rows}")
        print(f"JIT on in every worker (threshold {args.jit}), functions compiled per worker: fresh "
              f"{median(started, 'compiled'):,.0f}, forked {median(forked, 'compiled'):,.0f}")
    print(f"a split across K workers saves (K - 1) x {median(started, 'seconds') - median(forked, 'seconds'):.2f} s "
          f"and about (K - 1) x {median(started, 'peak_mb') - median(forked, 'private_mb'):,.0f} MB when forked")


if __name__ == "__main__":
    main()

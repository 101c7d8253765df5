"""Benchmark: the harness diff of two 500,000-test runs against a bare ElementTree iterparse of them.

    python benchmarks/diff_vs_iterparse.py [--files 500] [--cases 1000] [--keep DIR]

Generates two sides of FILES x CASES harness-style JUnit files (outcome, node id and replay
properties on every test, as the runner writes them; the candidate has a regression every 1,000
tests) in a temporary folder, then times, each in a fresh process:
- bare: `xml.etree.ElementTree.iterparse` over every file of both sides, doing nothing else;
- harness: `load_side` of both sides + `compare` + the JSON report, in process.
Prints both times, their ratio (target <= 2.0) and each process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import shlex
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.compare.diff import compare  # noqa: E402
from harness.record.junit import write_suite  # noqa: E402
from harness.record.model import TestResult  # noqa: E402
from harness.record.store import load_side  # noqa: E402
from harness.report.json_report import to_json  # noqa: E402
from harness.report.model import build  # noqa: E402

PREFIX = ("cd /work/pytorch/test && env -u CI HARNESS_JIT=on HARNESS_THRESHOLD=1000 PYTHONPATH=/opt/harness "
          "/opt/python3.14/bin/python3.14 -bb -X faulthandler -m pytest -p harness.run.plugin")
TEMPLATE_MODULE = "test_bench_template"


def template(path: Path, cases: int, regression_every: int | None) -> None:
    """One file of `cases` tests, written by the harness's own writer."""
    results = []
    for i in range(cases):
        failed = i % 50 == 0 or (regression_every is not None and i % regression_every == 7)
        results.append(TestResult(
            classname=f"{TEMPLATE_MODULE}.TestOpsCPU", name=f"test_op_{i}_cpu_float32", module=TEMPLATE_MODULE,
            outcome="failed" if failed else "passed", duration=0.01,
            message="AssertionError: Tensor-likes are not close!" if failed else "",
            text="Mismatched elements: 1 / 4 (25.0%)\nGreatest absolute difference: 0.1\n" if failed else "",
            nodeid=f"{TEMPLATE_MODULE}.py::TestOpsCPU::test_op_{i}_cpu_float32"))
    write_suite(path, TEMPLATE_MODULE, results, {"configuration": "bench", "tier": "p1",
                                                  "file": f"{TEMPLATE_MODULE}.py", "replay_prefix": PREFIX},
                {r.nodeid: f"{PREFIX} {shlex.quote(r.nodeid)}" for r in results})


def generate(root: Path, files: int, cases: int) -> None:
    for side, regression_every in (("baseline", None), ("candidate", 1000)):
        template(root / "template.xml", cases, regression_every)
        text = (root / "template.xml").read_text(encoding="utf-8")
        (root / side).mkdir()
        for number in range(files):
            (root / side / f"test_bench_{number}.xml").write_text(
                text.replace(TEMPLATE_MODULE, f"test_bench_{number}"), encoding="utf-8")
    (root / "template.xml").unlink()


def bare(root: Path) -> int:
    elements = 0
    for path in sorted(root.glob("*/*.xml")):
        for _ in ElementTree.iterparse(path):
            elements += 1
    return elements


def harness(root: Path) -> int:
    comparison = compare(load_side(root / "baseline"), load_side(root / "candidate"))
    return len(json.dumps(to_json(build([comparison]))))


def measure(phase: str, root: str, queue: multiprocessing.Queue) -> None:
    began = time.perf_counter()
    size = {"bare": bare, "harness": harness}[phase](Path(root))
    queue.put((time.perf_counter() - began, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, size))


def in_fresh_process(phase: str, root: Path) -> tuple[float, float, int]:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=measure, args=(phase, str(root), queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="generate into this (empty) folder and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as temporary:
        root = args.keep or Path(temporary)
        root.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        generate(root, args.files, args.cases)
        size = sum(p.stat().st_size for p in root.glob("*/*.xml")) / 2**20
        print(f"generated 2 x {args.files * args.cases:,} tests ({size:,.0f} MiB of JUnit XML) "
              f"in {time.perf_counter() - began:.1f} s")
        bare_seconds, bare_peak, elements = in_fresh_process("bare", root)
        diff_seconds, diff_peak, report = in_fresh_process("harness", root)
    print(f"bare iterparse, both sides:  {bare_seconds:7.2f} s  peak RSS {bare_peak:7.0f} MiB  ({elements:,} elements)")
    print(f"harness diff + JSON report:  {diff_seconds:7.2f} s  peak RSS {diff_peak:7.0f} MiB  ({report:,} bytes of JSON)")
    print(f"ratio: {diff_seconds / bare_seconds:.2f} (target <= 2.0)")


if __name__ == "__main__":
    main()

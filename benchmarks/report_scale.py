"""Benchmark: the reports of a 500,000-test comparison with 5,000 regressions (issue 17, item 4).

    python benchmarks/report_scale.py [--modules 1000] [--tests 500] [--regressions 5000] [--out DIR]

Builds two sides of MODULES x TESTS test results in memory (the candidate fails REGRESSIONS of
them, with a failure message and replay commands as long as real ones; a few crash), compares
them with the harness's `compare`, then builds the report model and renders Markdown, JSON and
HTML, each timed on its own. Prints each time and file size, against the targets: the HTML page
renders in under 10 s and stays under 15 MB. With --out the files are kept there, to open the page
in a browser (its regressions table pages, 50 rows at a time).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.compare.diff import compare  # noqa: E402
from harness.protocol import Env  # noqa: E402
from harness.record.model import RunRecord, TestResult  # noqa: E402
from harness.compare.sides import Side  # noqa: E402
from harness.report.model import build  # noqa: E402
from harness.report.output import render  # noqa: E402

TARGET_SECONDS, TARGET_MB = 10.0, 15.0
PREFIX = (f"cd /work/pytorch/test && env -u CI {Env.JIT}={{jit}} {Env.THRESHOLD}=1000 PYTHONPATH=/opt/harness "
          "/opt/python3.14/bin/python3.14 -bb -X faulthandler -m pytest -p harness.run.plugin")
MESSAGE = ("AssertionError: Tensor-likes are not close!\n\nMismatched elements: 3 / 64 (4.7%)\n"
           "Greatest absolute difference: 0.0018 at index (2, 7) (up to 1e-05 allowed)\n"
           "Greatest relative difference: 0.0041 at index (2, 7) (up to 1.3e-06 allowed)\n") * 2


def side(name: str, modules: int, tests: int, failing: set[tuple[int, int]], jit: str) -> Side:
    results = []
    for m in range(modules):
        module = f"test_module_{m:04d}"
        for t in range(tests):
            test = f"test_op_{t:04d}_cpu_float32"
            nodeid = f"{module}.py::TestOpsCPU::{test}"
            crashed = (m, t) in failing and t % 97 == 0
            outcome = "crashed" if crashed else "failed" if (m, t) in failing else "passed"
            message = "process died with SIGSEGV while running " + nodeid if crashed else \
                MESSAGE if outcome == "failed" else ""
            results.append(TestResult(f"{module}.TestOpsCPU", test, outcome, module, 0.01, message, "",
                                      nodeid, f"{PREFIX.format(jit=jit)} {nodeid}"))
    record = RunRecord(configuration={"name": name, "jit": jit}, tier="p2", threshold=1000 if jit == "on" else None,
                       interpreter={}, versions={"torch": "2.14.1", "python": "3.14.0"}, fingerprint={},
                       tests_dir="/work/pytorch/test", test_sources={"hash": "h"}, started="2026-11-22T00:00:00",
                       status="complete")
    return Side(Path(name), tuple(results), record)


def timed(what: str, action):
    began = time.perf_counter()
    value = action()
    seconds = time.perf_counter() - began
    print(f"{what:<28} {seconds:7.2f} s")
    return value, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=1000)
    parser.add_argument("--tests", type=int, default=500, help="tests per module")
    parser.add_argument("--regressions", type=int, default=5000)
    parser.add_argument("--out", type=Path, help="keep report.{md,json,html} here")
    args = parser.parse_args()
    total = args.modules * args.tests
    step = max(1, total // args.regressions)
    failing = {divmod(index, args.tests) for index in range(0, total, step)}
    failing = set(sorted(failing)[:args.regressions])
    print(f"{total:,} tests per side, {len(failing):,} regressions, {args.modules:,} modules")
    baseline = side("stock", args.modules, args.tests, set(), "absent")
    candidate = side("cinderx-jit", args.modules, args.tests, failing, "on")
    comparison, _ = timed("compare", lambda: compare(baseline, candidate))
    report, model_seconds = timed("report model", lambda: build([comparison]))
    out = args.out or Path(tempfile.mkdtemp(prefix="report-scale-"))
    out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for fmt in ("md", "json", "html"):
        text, seconds = timed(f"render {fmt}", lambda: render(report, fmt))
        path = out / f"report.{fmt}"
        path.write_text(text, encoding="utf-8")
        sizes[fmt] = (seconds, path.stat().st_size / 1e6)
        print(f"{'':<28} {sizes[fmt][1]:7.2f} MB  {path}")
    html_seconds = model_seconds + sizes["html"][0]
    ok = html_seconds < TARGET_SECONDS and sizes["html"][1] < TARGET_MB
    print(f"HTML report: {html_seconds:.2f} s (model + page; target < {TARGET_SECONDS:g} s), "
          f"{sizes['html'][1]:.2f} MB (target < {TARGET_MB:g} MB): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

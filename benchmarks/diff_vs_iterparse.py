"""Benchmark: the harness diff of two 500,000-test sides against a bare ElementTree iterparse of them.

    python benchmarks/diff_vs_iterparse.py [--files 500] [--cases 1000] [--style harness|pytest|pytorch]
                                           [--rounds 3] [--keep DIR] [--before DIR]

Generates two sides of FILES x CASES tests (the candidate has a regression every 1,000 tests).
`--style harness` writes run directories of the harness's own JUnit (outcome, node id and replay
properties on every test, as the runner writes them); `--style pytest` run directories of what
plain `pytest --junitxml` writes (no properties); `--style pytorch` two folders laid out as
PyTorch's CI lays out its test reports (5 shard artifacts a side, one XML per test file, a tenth
of the tests skipped, captured output on some, and in the candidate `<rerun>` attempts before a
pass every 500 tests). Then, in rounds, each phase in a fresh process, in rotating order:
- bare: `xml.etree.ElementTree.iterparse` over every file of both sides, doing nothing else;
- diff: `load_side` of both sides + `compare` + the JSON report, with no results database: both
  sides are streamed into SQLite (the ingest the diff needs is included);
- re-diff (run directories only): the same, once both runs are in the results database
  (`db ingest` of each side, timed once).
- diff-before (with `--before DIR`, a folder holding an earlier `harness` package, e.g. `git archive
  REV harness | tar -x -C DIR`): the diff phase with that code, in the same rounds, so a change's
  cost is measured against the code before it in one run (prints the ratio diff / diff-before).
Prints the median of each phase, the median of the per-round ratios diff/bare (target <= 1.2),
the re-diff time (target < 3 s) and peak memory (target <= 300 MB): each process's peak RSS (the
diff's worker process, which streams one side, beside the main one; RSS counts the pages they
share in both) and the peak of their proportional set sizes summed, sampled, which is the
diff's real footprint; and checks the diff's outcomes
(every category, count and module row of its JSON report) against the expectation committed
below for the default size: the harness and pytest styles' digests were taken from the diff as it
was before the fast reader, the pytorch style's (whose reruns the diff did not read before) from
the fast reader itself.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from queue import Empty

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from junitparser import JUnitXml, TestCase, TestSuite  # noqa: E402
from junitparser import Failure as JUnitFailure  # noqa: E402

from harness.compare.diff import compare  # noqa: E402
from harness.protocol import Env, Setting  # noqa: E402
from harness.record.ingest import ingest  # noqa: E402
from harness.record.junit import write_suite  # noqa: E402
from harness.record.model import FileRecord, RunRecord, TestResult  # noqa: E402
from harness.compare.sides import load_side  # noqa: E402
from harness.record.store import RunDirectory  # noqa: E402
from harness.report.json_report import to_json  # noqa: E402
from harness.report.model import build  # noqa: E402

PREFIX = (f"cd /work/pytorch/test && env -u CI {Env.JIT}=on {Env.THRESHOLD}=1000 PYTHONPATH=/opt/harness "
          "/opt/python3.14/bin/python3.14 -bb -X faulthandler -m pytest -p harness.run.plugin")
TEMPLATE_MODULE = "test_bench_template"
SIDES = {"baseline": ("stock", None), "candidate": ("cinderx-jit", 1000)}
SAMPLE = 0.05  # seconds between samples of the diff's memory, in a run of its own after the timed rounds
SHARDS = 5  # report artifacts a side of the pytorch style is split into
# sha256 of `outcomes()` for the default --files and --cases, per style (pytorch: 500 regressions, 1,000 flaky).
EXPECTED = {"harness": "4c2173c00f2bb4b30e5cde723b7621bb579bc2d7f86bc041e98d7a119b66b0ed",
            "pytest": "f6279e9e59f269935604d9545787ce2970057006d38b7c45e5d82c8de7d75844",
            "pytorch": "2218f0cbc59a32d180622f529237128fbfb1cc1e9e0294a05eb9cc6d527cc321"}


def template(path: Path, cases: int, regression_every: int | None, style: str) -> None:
    """One file of `cases` tests, as the harness's writer or plain pytest writes it."""
    results = []
    for i in range(cases):
        failed = i % 50 == 0 or (regression_every is not None and i % regression_every == 7)
        results.append(TestResult(
            classname=f"{TEMPLATE_MODULE}.TestOpsCPU", name=f"test_op_{i}_cpu_float32", module=TEMPLATE_MODULE,
            outcome="failed" if failed else "passed", duration=0.01,
            message="AssertionError: Tensor-likes are not close!" if failed else "",
            text="Mismatched elements: 1 / 4 (25.0%)\nGreatest absolute difference: 0.1\n" if failed else "",
            nodeid=f"{TEMPLATE_MODULE}.py::TestOpsCPU::test_op_{i}_cpu_float32"))
    if style == "harness":
        write_suite(path, TEMPLATE_MODULE, results, {"configuration": "bench", "tier": "p1",
                                                      "file": f"{TEMPLATE_MODULE}.py", "replay_prefix": PREFIX},
                    {r.nodeid: f"{PREFIX} {shlex.quote(r.nodeid)}" for r in results})
        return
    suite = TestSuite("pytest")
    for result in results:
        case = TestCase(result.name, result.classname, result.duration)
        if result.outcome == "failed":
            failure = JUnitFailure(result.message)
            failure.text = result.text
            case.result = [failure]
        suite.append(case)
    document = JUnitXml()
    document.add_testsuite(suite)
    document.write(str(path))


def generate(root: Path, files: int, cases: int, style: str) -> dict[str, Path]:
    """Two sides: run directories (run record and one JUnit XML per file), or PyTorch CI's folders."""
    if style == "pytorch":
        return {side: pytorch_side(root / side, files, cases, side == "candidate") for side in SIDES}
    runs = {}
    for number, (side, (config, threshold)) in enumerate(SIDES.items()):
        template(root / "template.xml", cases, None if side == "baseline" else 1000, style)
        text = (root / "template.xml").read_text(encoding="utf-8")
        run = RunDirectory(root / f"{config}-p1-2026112{number}T000000000000")
        run.create()
        records = []
        for index in range(files):
            module = f"test_bench_{index}"
            run.junit(module).write_text(text.replace(TEMPLATE_MODULE, module), encoding="utf-8")
            records.append(FileRecord(file=f"{module}.py", module=module, exit_status=1, signal=None, duration=10.0,
                                      counts={}, jit={"compiled": 5} if threshold else None))
        run.write_record(RunRecord(
            configuration={"name": config, "jit": "on" if threshold else "absent"}, tier="p1", threshold=threshold,
            interpreter={}, versions={"torch": "2.14.1", "python": "3.14.0"}, fingerprint={"hash": "bench"},
            tests_dir="/t", test_sources={"hash": "bench"}, started=f"2026-11-2{number}T00:00:00", status="complete",
            files=tuple(records)))
        runs[side] = run.root
    (root / "template.xml").unlink()
    return runs


def pytorch_side(folder: Path, files: int, cases: int, candidate: bool) -> Path:
    """One side as PyTorch's CI uploads it: per shard `test-reports-test-default-I-N-RUNNER_JOB/
    test/test-reports/python-pytest/FILE/FILE-HEX.xml`, pytest's xunit2 with PyTorch's <rerun>."""
    text = pytorch_template(cases, candidate)
    for index in range(files):
        shard = index * SHARDS // files + 1
        module = f"test_bench_{index}"
        report = (folder / f"test-reports-test-default-{shard}-{SHARDS}-linux.2xlarge_{int(candidate) * 1000 + shard}"
                  / "test" / "test-reports" / "python-pytest" / module / f"{module}-{index:016x}.xml")
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(text.replace(TEMPLATE_MODULE, module), encoding="utf-8")
    return folder


def pytorch_template(cases: int, candidate: bool) -> str:
    """One test file's report, written as pytest writes it (no junitparser: PyTorch's conftest adds
    elements junitparser does not know)."""
    lines = ['<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" '
             'errors="0" failures="0" skipped="0" tests="0" time="1.0" timestamp="2026-11-20T00:00:00" hostname="h">']
    for i in range(cases):
        inside = ""
        if i % 10 == 3:
            inside = (f'<skipped type="pytest.skip" message="not on CPU">test/{TEMPLATE_MODULE}.py:{i}: '
                      'not on CPU</skipped>')
        elif i % 50 == 0 or (candidate and i % 1000 == 7):
            inside = ('<failure message="AssertionError: Tensor-likes are not close!">Mismatched elements: 1 / 4 '
                      '(25.0%)</failure>')
        elif candidate and i % 500 == 11:
            inside = '<rerun message="RuntimeError: flaky">Traceback (most recent call last):</rerun>'
        if i % 20 == 1:
            inside += "<system-out>captured output of the test</system-out>"
        lines.append(f'<testcase classname="{TEMPLATE_MODULE}.TestOpsCPU" name="test_op_{i}_cpu_float32" '
                     f'time="0.010">{inside}</testcase>' if inside else
                     f'<testcase classname="{TEMPLATE_MODULE}.TestOpsCPU" name="test_op_{i}_cpu_float32" time="0.010" />')
    return "".join(lines) + "</testsuite></testsuites>"


def xml_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.xml"))


def bare(root: Path) -> int:
    elements = 0
    for path in xml_files(root):
        for _ in ElementTree.iterparse(path):
            elements += 1
    return elements


def sides(root: Path) -> list[Path]:
    runs = [next(root.glob(f"{SIDES[side][0]}-p1-*"), None) for side in SIDES]
    return [root / side for side in SIDES] if None in runs else runs


def report(root: Path) -> dict:
    return to_json(build([compare(*(load_side(side) for side in sides(root)))]))


def diff(root: Path) -> int:
    return len(json.dumps(report(root)))


# Fields the JSON report gained after the digests in EXPECTED were taken (the generated sides have
# nothing to put in them: no confirmation runs here), left out so the digests still check the rest.
LATER_FIELDS = ("order_dependence",)


def outcomes(found: dict) -> str:
    """A digest of everything the report says about outcomes (where the sides were generated aside)."""
    kept = {key: value for key, value in found.items() if key not in LATER_FIELDS}
    return hashlib.sha256(json.dumps({**kept, "candidate_runs": [Path(p).name for p in found["candidate_runs"]]},
                                     sort_keys=True).encode()).hexdigest()


def measure(phase: str, root: str, database: str, queue: multiprocessing.Queue) -> None:
    os.environ[Setting.DATABASE] = database
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    began = time.perf_counter()
    size = {"bare": bare, "diff": diff}[phase](Path(root))
    seconds = time.perf_counter() - began
    after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, usage))
    queue.put((seconds, *(a.ru_maxrss / 1024 for a in after), size, cpu))


def in_fresh_process(phase: str, root: Path, database: Path,
                     sample: float | None = None) -> tuple[float, float, float, int, float, float]:
    """(seconds, peak RSS of the process, peak RSS of its largest child, output size, CPU seconds of
    the process and its children, peak memory of the process and its children together in MiB).
    The last is the honest total: RSS counts a page a forked worker shares with its parent in both,
    so it is their proportional set size (each shared page split among its sharers), summed over the
    process tree every `sample` seconds; not in timed rounds (reading /proc takes the CPU the diff's
    two processes use), so 0 without `sample`."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=measure, args=(phase, str(root), str(database), queue))
    process.start()
    peak = 0
    while sample is not None:
        peak = max(peak, tree_pss(process.pid))
        try:
            result = queue.get(timeout=sample)
            break
        except Empty:
            continue
    else:
        result = queue.get()
    process.join()
    return (*result, peak / 1024)


BEFORE = """
import json, resource, sys, time
from pathlib import Path
from harness.compare.diff import compare
from harness.compare.sides import load_side
from harness.report.json_report import to_json
from harness.report.model import build
root, sides = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
cpu = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
began = time.perf_counter()
size = len(json.dumps(to_json(build([compare(*(load_side(side) for side in sides))]))))
seconds = time.perf_counter() - began
usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
print(json.dumps([seconds, *(u.ru_maxrss / 1024 for u in usage), size,
                  sum(u.ru_utime + u.ru_stime - c.ru_utime - c.ru_stime for u, c in zip(usage, cpu)), 0]))
"""


def before_diff(before: Path, root: Path, database: Path) -> tuple[float, float, float, int, float, float]:
    """The diff phase run by the harness package in `before`, in a fresh interpreter (its own imports)."""
    done = subprocess.run([sys.executable, "-c", BEFORE, str(root), *map(str, sides(root))],
                          capture_output=True, text=True, check=True, cwd=before,
                          env={**os.environ, "PYTHONPATH": str(before), Setting.DATABASE: str(database)})
    return tuple(json.loads(done.stdout.splitlines()[-1]))  # type: ignore[return-value]


def tree_pss(pid: int) -> int:
    """Proportional set size (KiB) of a process and its descendants, from /proc."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            rollup = Path(f"/proc/{current}/smaps_rollup").read_text()
            total += int(re.search(r"^Pss:\s+(\d+) kB", rollup, re.MULTILINE).group(1))  # type: ignore[union-attr]
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += map(int, (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError, AttributeError):
            continue  # it ended meanwhile
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--style", choices=tuple(EXPECTED), default="harness")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="generate into this (empty) folder and keep it")
    parser.add_argument("--before", type=Path, help="a folder with an earlier harness package: its diff is timed too")
    args = parser.parse_args()
    if args.before is not None and not (args.before / "harness" / "__init__.py").is_file():
        parser.error(f"--before {args.before}: no harness package in it")
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as temporary:
        root = args.keep or Path(temporary)
        root.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        runs = generate(root, args.files, args.cases, args.style)
        size = sum(p.stat().st_size for p in xml_files(root)) / 2**20
        print(f"generated 2 x {args.files * args.cases:,} tests, {args.style} style ({size:,.0f} MiB of JUnit XML) "
              f"in {time.perf_counter() - began:.1f} s")
        database = root / "harness.db"
        absent = root / "absent" / "harness.db"  # no results database: the diff streams both sides
        os.environ[Setting.DATABASE] = str(absent)
        digest = outcomes(report(root))
        expected = EXPECTED[args.style] if (args.files, args.cases) == (500, 1000) else digest
        if digest != expected:
            sys.exit(f"the diff's outcomes differ from the expectation: {digest}, expected {expected}")
        print(f"outcomes: as expected ({digest[:16]})", flush=True)
        phases = {"bare": ("bare", absent), "diff": ("diff", absent)}
        if args.before is not None:
            phases["diff-before"] = ("diff-before", absent)
        ingested: dict[str, float] = {}
        if args.style != "pytorch":  # run directories: the results database can hold them
            for side, run in runs.items():
                began = time.perf_counter()
                ingest(database, [run])
                ingested[side] = time.perf_counter() - began
            phases["re-diff"] = ("diff", database)
        seen: dict[str, list[tuple[float, float, float, int, float, float]]] = {name: [] for name in phases}
        for number in range(args.rounds):
            names = list(phases)[number % len(phases):] + list(phases)[:number % len(phases)]
            for name in names:
                seen[name].append(before_diff(args.before, root, phases[name][1]) if name == "diff-before" else
                                  in_fresh_process(phases[name][0], root, phases[name][1]))
            print(f"round {number + 1}: " + ", ".join(f"{name} {seen[name][-1][0]:.2f} s" for name in phases),
                  flush=True)
        footprint = in_fresh_process("diff", root, absent, SAMPLE)[5]
    ratios = [d[0] / b[0] for d, b in zip(seen["diff"], seen["bare"])]
    cpu_ratios = [d[4] / b[4] for d, b in zip(seen["diff"], seen["bare"])]
    median = {name: statistics.median(r[0] for r in rounds) for name, rounds in seen.items()}
    cpu = {name: statistics.median(r[4] for r in rounds) for name, rounds in seen.items()}
    peak = {name: (max(r[1] for r in rounds), max(r[2] for r in rounds)) for name, rounds in seen.items()}
    print(f"bare iterparse, both sides:   {median['bare']:7.2f} s  CPU {cpu['bare']:6.2f} s  "
          f"peak RSS {peak['bare'][0]:5.0f} MiB ({seen['bare'][0][3]:,} elements)")
    print(f"diff + JSON report (streams): {median['diff']:7.2f} s  CPU {cpu['diff']:6.2f} s  "
          f"peak RSS {peak['diff'][0]:5.0f} MiB (worker {peak['diff'][1]:.0f} MiB; {seen['diff'][0][3]:,} bytes of JSON)")
    print(f"peak memory of the diff, its processes together (proportional set size, sampled every {SAMPLE} s, "
          "an untimed run): "
          f"{footprint:.0f} MiB (target <= 300 MB: {300e6 / 2**20:.0f} MiB)")
    if ingested:
        print(f"db ingest of both runs:       {sum(ingested.values()):7.2f} s  (once: "
              f"{', '.join(f'{side} {seconds:.2f} s' for side, seconds in ingested.items())})")
        print(f"re-diff of the ingested runs: {median['re-diff']:7.2f} s  CPU {cpu['re-diff']:6.2f} s  "
              f"peak RSS {peak['re-diff'][0]:5.0f} MiB (target < 3 s)")
    if "diff-before" in seen:
        before_ratios = [d[0] / b[0] for d, b in zip(seen["diff"], seen["diff-before"])]
        print(f"diff before the change ({args.before}): {median['diff-before']:7.2f} s  "
              f"CPU {cpu['diff-before']:6.2f} s; ratio diff / diff-before: {statistics.median(before_ratios):.3f} "
              f"(median of {len(before_ratios)} rounds: {', '.join(f'{r:.3f}' for r in before_ratios)}; "
              "target <= 1.05)")
    print(f"ratio diff / bare iterparse:  {statistics.median(ratios):.2f} elapsed (median of {len(ratios)} rounds: "
          f"{', '.join(f'{r:.2f}' for r in ratios)}; target <= 1.2), "
          f"{statistics.median(cpu_ratios):.2f} in CPU time (the diff reads both sides at once, in two processes)")


if __name__ == "__main__":
    main()

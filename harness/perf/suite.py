"""The pyperf benchmark script: `python -m harness.perf.suite -o OUT.json [--bench NAME ...] [pyperf options]`.

pyperf runs this script once as a manager, which re-executes it as worker processes (one per
benchmark and process, `--worker --worker-task=N`) with only the environment variables it was
told to pass on (`--inherit-environ`, set by `harness perf run`). Every worker therefore reads
the JIT request from the HARNESS_* variables itself and applies it with harness.run.jit, exactly
as a test process does.

The clock is the benchmark thread's CPU time by default (`--clock cpu`, time.thread_time): this
machine's 2 cores are shared, and wall time also counts the time a worker waited for a core
(measured here: wall time of one body varied 30-56 us while its CPU time stayed at 26-29 us).
Torch runs with one intra-op thread and DataLoader without worker processes, so the benchmark's
work is on that thread; the JIT's background compile thread is not, and is settled before each
value. `--clock wall` (time.perf_counter) measures elapsed time instead, on a quiet machine.

Compilation must not fall inside measured values: each worker first warms its benchmark up
(WARMUP_CALLS calls, enough for the default threshold's "compile on call 1001", or
WARMUP_SECONDS, whichever comes first), waits for the JIT's background compiles, records what the
JIT compiled in the benchmark's metadata, and waits again before every value. The same warm-up
runs in every configuration, stock included, so warm caches are not a JIT-only advantage.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyperf

from harness.perf.benchmarks import Benchmark, Body, select
from harness.protocol import Activation, JitMode, Request
from harness.run import jit

WARMUP_CALLS = 1001  # compile_after_n_calls(1000), the default threshold, compiles on call 1001
WARMUP_SECONDS = 1.0  # slow bodies (dynamo tracing) stop earlier; the metadata says how many calls ran
PROCESSES = 6  # worker processes per manager; `harness perf run` sets them per round (see effort.py)
VALUES = 8  # measured values per worker process, after one pyperf warm-up value
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.thread_time, "wall": pyperf.perf_counter}


@dataclass(frozen=True)
class WarmUp:
    """What the warm-up did before the first measured value."""

    calls: int
    seconds: float


def settle() -> None:
    """Let background compiles finish, so that they do not overlap a measured value."""
    module = sys.modules.get("cinderx.jit")
    if module is not None and jit.is_available(module):
        module.wait_for_background_compiles()


def warm_up(body: Body) -> WarmUp:
    """Call the body until WARMUP_CALLS calls or WARMUP_SECONDS passed (at least twice), then settle."""
    started = time.monotonic()  # a budget, not a measurement: pyperf measures
    calls = 0
    while calls < WARMUP_CALLS and (calls < 2 or time.monotonic() - started < WARMUP_SECONDS):
        body()
        calls += 1
    settle()
    return WarmUp(calls=calls, seconds=time.monotonic() - started)


def timer(body: Body, clock: Callable[[], float]) -> Callable[[int], float]:
    """pyperf's time function for `body`: settle outside the timed region, then time `loops` calls."""

    def time_func(loops: int) -> float:
        settle()
        started = clock()
        for _ in range(loops):
            body()
        return clock() - started

    return time_func


def jit_metadata(request: Request, error: str | None, warm: WarmUp) -> dict[str, str | int | float]:
    """Per-worker facts the comparison needs: JIT mode, what it compiled, the warm-up, contamination."""
    state = jit.snapshot()
    metadata: dict[str, str | int | float] = {
        "harness_jit": str(request.mode),
        "harness_activation": str(request.activation),
        "harness_jit_enabled": int(state.enabled),
        "harness_jit_compiled": state.compiled,
        "harness_warmup_calls": warm.calls,
        "harness_warmup_seconds": round(warm.seconds, 3),
    }
    if request.threshold is not None:
        metadata["harness_threshold"] = request.threshold
    if state.compile_time_ms is not None:
        metadata["harness_jit_compile_ms"] = state.compile_time_ms
    problem = error or state.error
    if problem:
        metadata["harness_jit_error"] = " ".join(problem.split())
    origin = jit.cinderx_origin() if request.mode == JitMode.ABSENT else None
    if origin:
        metadata["harness_cinderx_origin"] = " ".join(origin.split())
    return metadata


def prepare(benchmark: Benchmark, request: Request, warm: bool) -> tuple[Body, dict[str, str | int | float]]:
    """In the worker that runs `benchmark`: set it up, switch the JIT on, warm up, read the JIT back.

    pyperf's calibration worker (it only chooses loops per value; its values are discarded) skips
    the warm-up: at threshold 1, waiting for dynamo's ~2,000 compiles costs half a minute per process.
    """
    error = jit.apply(request) if request.activation == Activation.STARTUP else None
    body = benchmark.setup()
    if request.activation != Activation.STARTUP:  # after-collection: imports and set-up ran interpreted
        error = jit.apply(request)
    if error and request.mode == JitMode.ON:
        sys.exit(f"harness.perf.suite: {benchmark.name}: the JIT could not be switched on: {error}")
    done = warm_up(body) if warm else WarmUp(calls=0, seconds=0.0)
    return body, jit_metadata(request, error, done)


def _never(loops: int) -> float:
    raise RuntimeError("the manager process never runs a benchmark body")


def _pass_options(command: list[str], args: argparse.Namespace) -> None:
    """Workers must select the same benchmarks as the manager (task N is the N-th one) and clock."""
    command.extend(["--clock", args.clock])
    if args.bench:
        command.extend(["--bench", *args.bench])


def main() -> None:
    runner = pyperf.Runner(values=VALUES, processes=PROCESSES, warmups=1,
                           program_args=("-m", "harness.perf.suite"), add_cmdline_args=_pass_options)
    runner.argparser.add_argument("--bench", nargs="+", metavar="NAME", help="only these benchmarks")
    runner.argparser.add_argument("--clock", choices=CLOCKS, default="cpu",
                                  help="cpu: the benchmark thread's CPU time (default); wall: elapsed time")
    args = runner.parse_args()
    try:
        benchmarks = select(args.bench)
    except ValueError as error:
        sys.exit(f"harness.perf.suite: {error}")
    request = Request.from_env()
    for index, benchmark in enumerate(benchmarks):
        metadata: dict[str, object] = {"description": benchmark.description, "tags": [benchmark.tag],
                                       "harness_clock": args.clock}
        time_func: Callable[[int], float] = _never
        if args.worker and args.worker_task == index:
            calibrating = bool(args.calibrate_loops or args.recalibrate_loops)
            body, facts = prepare(benchmark, request, warm=not calibrating)
            metadata.update(facts)
            time_func = timer(body, CLOCKS[args.clock])
        runner.bench_time_func(benchmark.name, time_func, metadata=metadata)


if __name__ == "__main__":
    main()

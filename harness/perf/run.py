"""Run the pyperf suite under one configuration and leave a perf run directory.

A worker that dies (seen here: SIGSEGV in a CinderX JIT worker during fx tracing, once in several
runs) makes pyperf abandon that invocation without writing anything; it is run again, up to
ATTEMPTS times, and every failure is kept in the record and shown by the comparison.

The suite runs in a child process of the configuration's interpreter (the one running this, or
`--python` for an interpreter used as it is), with the same environment discipline as a test run
(`harness.run.runner.child_environment`). pyperf passes only named variables on to its worker
processes, so every variable that discipline sets, and every one that changes what Python or
torch does, is named in `--inherit-environ`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

import pyperf

import harness
from harness.configure.configurations import Configuration
from harness.errors import HarnessError
from harness.exits import ExitStatus
from harness.perf.effort import EFFORTS, Effort
from harness.perf.record import PerfRecord, PerfRunDirectory, finished, new_run_directory
from harness.protocol import ENV_PREFIX
from harness.record.fingerprint import describe_interpreter, environment_fingerprint
from harness.run.runner import child_environment

# The test-run environment discipline needs a tier; a perf run has none, so an empty one stands in.
# A failed pyperf invocation writes nothing, so it can be run again; its failure stays in the record.
ATTEMPTS = 3
# Besides the variables the discipline sets, workers inherit any variable with these prefixes.
INHERITED_PREFIXES = (ENV_PREFIX, "PYTHON", "CINDER", "PYTORCH", "TORCH", "TRITON", "OMP_", "MKL_", "OPENBLAS",
                      "KMP_", "LD_")


@dataclass(frozen=True)
class PerfRequest:
    """One perf run, resolved from the command line and the configuration data."""

    configuration: Configuration
    results_root: Path
    python: str
    benchmarks: tuple[str, ...]
    effort: Effort = EFFORTS["default"]
    clock: str = "cpu"  # cpu: the benchmark thread's CPU time; wall: elapsed time (see suite.py)
    command: tuple[str, ...] = ()


def inherited_names(env: dict[str, str], configuration: Configuration) -> list[str]:
    """Names for pyperf's --inherit-environ: the configuration's own variables and every relevant one."""
    names = set(configuration.env) | {name for name in env if name.startswith(INHERITED_PREFIXES)}
    return sorted(names & set(env))


def suite_command(request: PerfRequest, run: PerfRunDirectory, env: dict[str, str], benchmark: str,
                  loops: int | None) -> list[str]:
    """One pyperf manager: one benchmark, one round's worker processes, appended to pyperf.json."""
    effort = request.effort
    command = [request.python, "-m", "harness.perf.suite", "--quiet", "--append", str(run.pyperf_json),
               "--inherit-environ", ",".join(inherited_names(env, request.configuration)), "--clock", request.clock,
               "--processes", str(effort.per_round), "--values", str(effort.values), "--bench", benchmark]
    return command + (["--loops", str(loops)] if loops else [])


def calibrated_loops(pyperf_json: Path, benchmark: str) -> int | None:
    """The loops per value pyperf calibrated for `benchmark` in the first round (reused afterwards)."""
    if not pyperf_json.is_file():
        return None
    for bench in pyperf.BenchmarkSuite.load(str(pyperf_json)).get_benchmarks():
        if bench.get_name() == benchmark:
            loops = {run.get_metadata().get("loops") for run in bench.get_runs() if run.values}
            return loops.pop() if len(loops) == 1 else None
    return None


def pyperf_version(python: str, env: dict[str, str]) -> str:
    """pyperf's version in the interpreter, or a clear error: the suite cannot run without it."""
    probe = subprocess.run([python, "-c", "import pyperf; print(pyperf.__version__)"],
                           capture_output=True, text=True, env=env)
    if probe.returncode != 0:
        raise HarnessError(f"pyperf is not importable by {python}: install it there "
                           "(pip install pyperf, or the harness's `perf` extra)")
    return probe.stdout.strip()


def execute(request: PerfRequest, announce: Callable[[str], None] = print) -> Path:
    """Run the suite in a new perf run directory, round by round; the record says how it ended."""
    config, effort = request.configuration, request.effort
    started = datetime.now(timezone.utc)
    run = new_run_directory(request.results_root, config.name, config.threshold, started)
    run.create()
    env = child_environment(config, {}, run.cache)
    env["PYTHONFAULTHANDLER"] = "1"  # a crashing worker dumps its Python stack into suite.log
    interpreter = describe_interpreter(request.python)
    versions = {**interpreter["versions"], "pyperf": pyperf_version(request.python, env),
                "harness": harness.__version__, "python": interpreter["version"]}
    record = PerfRecord(
        configuration=config.name, threshold=config.threshold, jit=config.jit,
        interpreter={k: interpreter[k] for k in ("path", "version", "implementation", "in_venv", "cinderx_origin")},
        versions=versions, fingerprint=environment_fingerprint(env, interpreter),
        command=request.command, benchmarks=request.benchmarks, started=started.isoformat(),
        settings={"clock": request.clock, "processes": effort.per_round * effort.rounds, "values": effort.values,
                  "rounds": effort.rounds, "activation": config.activation,
                  "compile_disengage": config.compile_disengage, "env": dict(config.env)},
    )
    run.write_record(record)
    announce(f"perf run directory: {run.root}")
    exit_status = 0
    try:
        with run.log.open("w", encoding="utf-8") as log:
            for round_index in range(effort.rounds):
                for name in request.benchmarks:
                    for attempt in range(1, ATTEMPTS + 1):
                        announce(f"round {round_index + 1}/{effort.rounds}: {name}"
                                 + (f" (attempt {attempt})" if attempt > 1 else ""))
                        command = suite_command(request, run, env, name, calibrated_loops(run.pyperf_json, name))
                        exit_status = _stream(command, env, log, announce)
                        if exit_status == 0:
                            break
                        failure = f"{name}, round {round_index + 1}, attempt {attempt}: {_last_line(run.log)}"
                        record = replace(record, failures=(*record.failures, failure))
                        run.write_record(record)
                        announce(f"worker failure: {failure}")
                    else:
                        raise HarnessError(f"the benchmark suite failed on {name} {ATTEMPTS} times: "
                                           f"{_last_line(run.log)} (full output: {run.log})")
    except HarnessError:
        run.write_record(finished(record, exit_status, _now()))
        raise
    except KeyboardInterrupt:
        run.write_record(finished(record, ExitStatus.INTERRUPTED, _now(), interrupted=True))
        raise
    run.write_record(finished(record, 0, _now()))
    return run.root


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _stream(command: list[str], env: dict[str, str], log: TextIO, announce: Callable[[str], None]) -> int:
    """Run one pyperf manager, echoing and logging its output line by line."""
    log.write("$ " + " ".join(command) + "\n")
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            log.flush()
            announce(line.rstrip("\n"))
        return process.wait()


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
             if line.strip() and not line.startswith("$ ")]
    return lines[-1].strip() if lines else "no output"

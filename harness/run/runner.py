"""Run one configuration x one tier: one process per test file, everything recorded as it happens.

Each test process loads the harness plugin, which streams every test's start and outcome to an
events file. When a process dies (a signal, `os._exit`, a kill after the time limit) the test
that was running is recorded as crashed or timeout, with the tail of the faulthandler output,
and nothing that finished before it is lost. The run record is rewritten after every file, so an
interrupt leaves a consistent run directory.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import harness
from harness.configure.configurations import Configuration
from harness.configure.tiers import HARNESS_ROOT, Tier
from harness.errors import HarnessError
from harness.record import junit
from harness.record.fingerprint import describe_interpreter, environment_fingerprint, sources_identity
from harness.record.model import FileRecord, RunRecord, TestResult, junit_names
from harness.record.store import RunDirectory

LOG_TAIL_LINES = 40  # kept of a dead process's output when faulthandler printed nothing
MAX_DUMP_LINES = 400  # a faulthandler dump of every thread's stack; the full log stays on disk
KILL_GRACE_SECONDS = 10  # after SIGABRT (which makes faulthandler dump every stack) before SIGKILL


@dataclass(frozen=True)
class RunRequest:
    """Everything one run needs, resolved from the command line and the data files."""

    configuration: Configuration
    tier: Tier
    tests_dir: Path
    targets: tuple[str, ...]  # test files or node ids, relative to tests_dir
    results_root: Path
    python: str
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileOutcome:
    record: FileRecord
    results: tuple[TestResult, ...]


def group_targets(targets: tuple[str, ...]) -> dict[str, list[str]]:
    """Node ids grouped by their file, in first-seen order: one process per file."""
    grouped: dict[str, list[str]] = {}
    for target in targets:
        grouped.setdefault(target.split("::", 1)[0], []).append(target)
    return grouped


def module_key(file: str) -> str:
    return file.removesuffix(".py").replace("/", ".")


def execute(request: RunRequest, announce=print) -> Path:
    """Run every target file and return the run directory."""
    interpreter = describe_interpreter(request.python)
    grouped = group_targets(request.targets)
    for file in grouped:
        if not (request.tests_dir / file).is_file():
            raise HarnessError(f"--select: {file} not found under {request.tests_dir}")
    config = request.configuration
    started = datetime.now(timezone.utc)
    run = RunDirectory(request.results_root / f"{config.name}-{request.tier.name}-{started:%Y%m%dT%H%M%S%f}")
    run.create()
    env = _child_environment(request, run)
    record = RunRecord(
        configuration={**config.__dict__, "env": dict(config.env)},
        tier=request.tier.name,
        threshold=config.threshold,
        interpreter={k: interpreter[k] for k in ("path", "version", "implementation", "in_venv", "cinderx_origin")},
        versions={**interpreter["versions"], "harness": harness.__version__, "python": interpreter["version"]},
        fingerprint=environment_fingerprint(env, interpreter),
        tests_dir=str(request.tests_dir),
        test_sources=sources_identity(request.tests_dir, list(grouped)),
        started=started.isoformat(),
        command=list(request.command),
    )
    skip = _unmet_requirement(request.tier, request.python, env)
    if skip:
        run.write_record(replace(record, status="complete", skipped_reason=skip, finished=_now()))
        announce(f"tier {request.tier.name} skipped: {skip}")
        return run.root
    run.write_record(record)
    files: list[FileRecord] = []
    try:
        with _sigterm_as_interrupt():
            for index, (file, targets) in enumerate(grouped.items(), 1):
                outcome = run_file(request, run, env, file, targets)
                files.append(outcome.record)
                run.write_record(replace(record, files=tuple(files)))
                announce(_progress_line(index, len(grouped), outcome.record))
    except KeyboardInterrupt:
        run.write_record(replace(record, files=tuple(files), status="interrupted", finished=_now()))
        announce(f"interrupted: {len(files)} of {len(grouped)} files recorded in {run.root}")
        raise
    run.write_record(replace(record, files=tuple(files), status="complete", finished=_now()))
    return run.root


def run_file(request: RunRequest, run: RunDirectory, env: dict[str, str], file: str, targets: list[str]) -> FileOutcome:
    """One test process for one file; its JUnit XML is written even if the process dies."""
    module = module_key(file)
    events_path = run.events(module)
    child_env = {**env, "HARNESS_EVENTS": str(events_path.resolve())}
    command = [request.python, "-bb", "-X", "faulthandler", "-m", "pytest", *targets,
               "-p", "harness.run.plugin", "-q", "--color=no", "-o", f"cache_dir={run.cache / 'pytest'}",
               *request.tier.pytest_args]
    began = time.monotonic()
    with open(run.log(module), "ab") as log:
        process = subprocess.Popen(command, cwd=request.tests_dir, env=child_env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = _wait(process, request.tier.timeout)
    duration = time.monotonic() - began
    replay = _replay_prefix(request, child_env)
    outcome = _collate(module, file, process.returncode, timed_out, duration, _read_events(events_path),
                       _log_tail(run.log(module)))
    junit.write_suite(
        run.junit(module), module, outcome.results,
        properties={"configuration": request.configuration.name, "tier": request.tier.name, "file": file,
                    "replay_prefix": replay},
        replay={r.nodeid: f"{replay} {shlex.quote(r.nodeid)}" for r in outcome.results if r.nodeid},
    )
    return outcome


def _wait(process: subprocess.Popen[bytes], timeout: int) -> bool:
    """Wait for the process; past the limit, dump its stacks (SIGABRT -> faulthandler), then kill it."""
    try:
        process.wait(timeout=timeout)
        return False
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGABRT)
        try:
            process.wait(timeout=KILL_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait()
        return True
    except KeyboardInterrupt:
        _signal_group(process, signal.SIGKILL)
        process.wait()
        raise


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def _read_events(path: Path) -> list[dict]:
    """The plugin's stream; a line cut short by a crash is ignored, every complete one is kept."""
    if not path.is_file():
        return []
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def _collate(module: str, file: str, returncode: int, timed_out: bool, duration: float,
             events: list[dict], log_tail: str) -> FileOutcome:
    """Turn the event stream and the exit status into one result per test and a file record."""
    results: dict[str, TestResult] = {}
    running: str | None = None
    finish: dict | None = None
    facts: dict[str, object] = {}
    for event in events:
        kind = event["event"]
        if kind == "start":
            running = event["nodeid"]
        elif kind == "result":
            running = None
            results[event["nodeid"]] = replace(
                _result(module, event["nodeid"], event["outcome"], event["duration"], event["message"], event["text"]),
                attempts=tuple(event.get("attempts", ())))
        elif kind == "collect_error":
            nodeid = event["nodeid"] or file
            results[nodeid] = _result(module, nodeid, "error", 0.0, f"collection error: {event['message']}", event["text"])
        elif kind == "session_start":
            facts["contamination"] = event.get("contamination")
        elif kind == "jit_applied":
            facts["jit_error"] = event.get("error")
        elif kind == "session_finish":
            finish = event
    signal_name = _signal_name(returncode)
    culprit = None
    if running is not None or finish is None:
        how = "timeout" if timed_out else "crashed"
        cause = (f"timed out after the tier's limit" if timed_out
                 else f"process died with {signal_name or f'exit status {returncode}'}")
        culprit_id = running or f"{file}::<process>"
        results[culprit_id] = _result(module, culprit_id, how, 0.0, f"{cause} while running {culprit_id}", log_tail)
        culprit = f"{culprit_id}: {cause}"
    counts = Counter(result.outcome for result in results.values())
    record = FileRecord(
        file=file,
        module=module,
        exit_status=returncode,
        signal=signal_name,
        duration=round(duration, 3),
        counts=dict(sorted(counts.items())),
        jit=finish.get("jit") if finish else None,
        jit_error=facts.get("jit_error"),  # type: ignore[arg-type]
        contamination=facts.get("contamination"),  # type: ignore[arg-type]
        culprit=culprit,
    )
    return FileOutcome(record, tuple(results.values()))


def _result(module: str, nodeid: str, outcome: str, duration: float, message: str, text: str) -> TestResult:
    classname, name = junit_names(nodeid)
    return TestResult(classname=classname, name=name, outcome=outcome, module=module, duration=duration,
                      message=message, text=text, nodeid=nodeid)


def _signal_name(returncode: int) -> str | None:
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _log_tail(path: Path) -> str:
    """The end of a process's output, from faulthandler's last dump if there is one."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    dumps = [i for i, line in enumerate(lines) if "Fatal Python error" in line or line.startswith("Timeout (")]
    start = max(dumps[-1] if dumps else len(lines) - LOG_TAIL_LINES, len(lines) - MAX_DUMP_LINES, 0)
    return "\n".join(lines[start:])


def _child_environment(request: RunRequest, run: RunDirectory) -> dict[str, str]:
    """The same environment discipline in every configuration; only the configuration's own part differs."""
    env = dict(os.environ)
    env.pop("CI", None)  # a non-empty CI switches PyTorch into CI mode (downloads, XML): off everywhere
    config = request.configuration
    env.update({
        "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
        "TORCHINDUCTOR_CACHE_DIR": str((run.cache / "inductor").resolve()),
        "TRITON_CACHE_DIR": str((run.cache / "triton").resolve()),
        **request.tier.env,
        **config.env,
        "HARNESS_JIT": config.jit,
        "HARNESS_THRESHOLD": "" if config.threshold is None else str(config.threshold),
        "HARNESS_ACTIVATION": config.activation,
    })
    # The plugin must be importable by any interpreter, venv or not: the harness comes first.
    env["PYTHONPATH"] = os.pathsep.join([str(HARNESS_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
    return env


def _replay_prefix(request: RunRequest, env: dict[str, str]) -> str:
    """The exact command (minus the node id) that reruns a test alone in this configuration."""
    own = {k: env[k] for k in ("HARNESS_JIT", "HARNESS_THRESHOLD", "HARNESS_ACTIVATION", "PYTHONPATH",
                                "PYTORCH_PRINT_REPRO_ON_FAILURE", *request.tier.env, *request.configuration.env)}
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in own.items())
    return (f"cd {shlex.quote(str(request.tests_dir))} && env -u CI {assignments} {shlex.quote(request.python)} "
            f"-bb -X faulthandler -m pytest -p harness.run.plugin {' '.join(map(shlex.quote, request.tier.pytest_args))}").rstrip()


def _unmet_requirement(tier: Tier, python: str, env: dict[str, str]) -> str | None:
    if tier.requires != "cuda":
        return None
    probe = subprocess.run([python, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, env=env)
    if probe.stdout.strip() == "True":
        return None
    return "no CUDA device visible to torch (torch.cuda.is_available() is False)"


def _progress_line(index: int, total: int, record: FileRecord) -> str:
    counts = ", ".join(f"{n} {outcome}" for outcome, n in record.counts.items()) or "no tests"
    jit = f", {record.jit['compiled']} JIT-compiled" if record.jit and record.jit.get("loaded") else ""
    culprit = f"\n    !! {record.culprit}" if record.culprit else ""
    return f"[{index}/{total}] {record.file}: {counts} ({record.duration:.1f} s{jit}){culprit}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI cancel, `kill`) takes the same path as Ctrl-C: record, then stop."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def default_python() -> str:
    return sys.executable

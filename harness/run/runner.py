"""Run one configuration x one tier (x one shard): files in parallel, everything recorded as it happens.

Each file runs through `filerun` (fresh processes, crash and hang attribution). The run record is
rewritten after every file, so Ctrl-C or SIGTERM leaves a consistent run directory, and `--resume`
continues it: finished files are not run again, and a file cut short resumes after its last test.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import harness
from harness.configure.configurations import Configuration
from harness.configure.tiers import HARNESS_ROOT, Tier
from harness.errors import HarnessError
from harness.record.fingerprint import describe_interpreter, environment_fingerprint, sources_identity
from harness.record.ingest import ingest_finished
from harness.record.model import FileRecord, RunRecord
from harness.record.store import RunDirectory, new_run_directory
from harness.run.filerun import LIVE, FileContext, run_file
from harness.run.progress import RunProgress
from harness.run.schedule import earlier_durations, longest_first


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
    jobs: int = 1
    shard: str | None = None


def group_targets(targets: tuple[str, ...]) -> dict[str, list[str]]:
    """Node ids grouped by their file, in first-seen order: one process per file."""
    grouped: dict[str, list[str]] = {}
    for target in targets:
        grouped.setdefault(target.split("::", 1)[0], []).append(target)
    return grouped


def execute(request: RunRequest, announce: Callable[[str], None] | None = None) -> Path:
    """Start a new run directory and run every target file in it; add the finished run to the
    results database.

    The first test processes start at once; the run record, for which the interpreter describes
    itself in a child process and the sources are hashed, is made and written beside them, before
    any file can finish. If it cannot be made, the test processes are stopped and the run
    directory is removed."""
    grouped = group_targets(request.targets)
    for file in grouped:
        if not (request.tests_dir / file).is_file():
            raise HarnessError(f"--select: {file} not found under {request.tests_dir}")
    if not os.access(request.python, os.X_OK):
        raise HarnessError(f"interpreter {request.python} cannot be started: not an executable file")
    config = request.configuration
    started = datetime.now(timezone.utc)
    run = new_run_directory(request.results_root, config.name, request.tier.name, request.shard, started)
    run.create()
    env = child_environment(config, request.tier, run)
    try:
        skip = _unmet_requirement(request.tier, request.python, env)
        if skip:
            record = _first_record(request, run, env, started, list(grouped))
            run.write_record(replace(record, status="complete", skipped_reason=skip, finished=_now()))
            (announce or print)(f"tier {request.tier.name} skipped: {skip}")
        else:
            context = FileContext(request.python, request.tests_dir, request.tier, config, run, env)
            order = longest_first(list(grouped), earlier_durations(request.results_root, request.tier.name))
            with ThreadPoolExecutor(max_workers=1) as background:
                record = background.submit(_first_record, request, run, env, started, list(grouped))
                _run_files(context, record, {file: grouped[file] for file in order}, request.jobs, announce)
    except HarnessError:
        shutil.rmtree(run.root, ignore_errors=True)
        raise
    ingest_finished(run.root, request.results_root, announce or print)  # the run is on disk, whatever happens here
    return run.root


def _first_record(request: RunRequest, run: RunDirectory, env: dict[str, str], started: datetime,
                  files: list[str]) -> RunRecord:
    """The record of a run that is starting, written to the run directory."""
    interpreter = describe_interpreter(request.python)
    config = request.configuration
    record = RunRecord(
        configuration={**config.__dict__, "env": dict(config.env)},
        tier=request.tier.name,
        threshold=config.threshold,
        interpreter={k: interpreter[k] for k in ("path", "version", "implementation", "in_venv", "cinderx_origin")},
        versions={**interpreter["versions"], "harness": harness.__version__, "python": interpreter["version"]},
        fingerprint=environment_fingerprint(env, interpreter),
        tests_dir=str(request.tests_dir),
        test_sources=sources_identity(request.tests_dir, files),
        started=started.isoformat(),
        command=list(request.command),
        targets=request.targets,
        shard=request.shard,
        python=request.python,
    )
    run.write_record(record)
    return record


def resume(run_dir: Path, configuration: Configuration, tier: Tier, jobs: int,
           announce: Callable[[str], None] | None = None) -> Path:
    """Continue an interrupted run: finished files stay, the rest run (after their last finished test);
    then add the finished run to the results database of the folder it is in."""
    run = RunDirectory(run_dir)
    record = run.read_record()
    if record.status == "complete":
        raise HarnessError(f"{run_dir}: the run is complete; nothing to resume")
    grouped = group_targets(record.targets)
    finished = {f.file for f in record.files}
    pending = {file: targets for file, targets in grouped.items() if file not in finished}
    context = FileContext(record.python, Path(record.tests_dir), tier, configuration, run,
                          child_environment(configuration, tier, run))
    record = replace(record, status="running", finished=None)
    run.write_record(record)
    written: Future[RunRecord] = Future()
    written.set_result(record)
    _run_files(context, written, pending, jobs, announce)
    ingest_finished(run.root, run.root.parent, announce or print)
    return run.root


def _run_files(context: FileContext, record: Future[RunRecord], pending: dict[str, list[str]], jobs: int,
               announce: Callable[[str], None] | None) -> None:
    """Run files `jobs` at a time; rewrite the record (once it is written) after each; on
    interrupt, record and stop."""
    files: list[FileRecord] = []
    progress = RunProgress(len(pending), announce)
    queue = iter(pending.items())
    pool = ThreadPoolExecutor(max_workers=jobs)
    running: set[Future] = set()
    LIVE.reset()

    def submit_next() -> None:
        for file, targets in queue:
            running.add(pool.submit(run_file, context, file, targets, progress.event))
            return

    def write(**changes: object) -> None:
        base = record.result()
        context.run.write_record(replace(base, files=(*base.files, *files), **changes))

    try:
        with progress, _sigterm_as_interrupt():
            for _ in range(jobs):
                submit_next()
            record.result()  # raises if the record cannot be made: the test processes are stopped below
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    running.discard(future)
                    outcome = future.result()
                    files.append(outcome.record)
                    write()
                    progress.file_done(outcome.record)
                    submit_next()
    except KeyboardInterrupt:
        LIVE.stop()  # kills the test processes; their files stay unfinished, to resume
        pool.shutdown(wait=True, cancel_futures=True)
        write(status="interrupted", finished=_now())
        progress.announce(f"interrupted: {len(files)} files recorded in {context.run.root}; "
                          f"continue with: python -m harness run --resume {context.run.root}")
        raise
    except HarnessError:
        LIVE.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    write(status="complete", finished=_now())


def child_environment(config: Configuration, tier: Tier, run: RunDirectory) -> dict[str, str]:
    """The same environment discipline in every configuration; only the configuration's own part differs."""
    env = dict(os.environ)
    env.pop("CI", None)  # a non-empty CI switches PyTorch into CI mode (downloads, XML): off everywhere
    env.update({
        "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
        "PYTORCH_HYPOTHESIS_PROFILE": "dev",  # PyTorch picks its hypothesis profile from this, same everywhere
        "TORCHINDUCTOR_CACHE_DIR": str((run.cache / "inductor").resolve()),
        "TRITON_CACHE_DIR": str((run.cache / "triton").resolve()),
        **tier.env,
        **config.env,
        **config.request.to_env(),
    })
    # The plugin must be importable by any interpreter, venv or not: the harness comes first.
    env["PYTHONPATH"] = os.pathsep.join([str(HARNESS_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
    return env


def _unmet_requirement(tier: Tier, python: str, env: dict[str, str]) -> str | None:
    if tier.requires != "cuda":
        return None
    probe = subprocess.run([python, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, env=env)
    if probe.stdout.strip() == "True":
        return None
    return "no CUDA device visible to torch (torch.cuda.is_available() is False)"


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

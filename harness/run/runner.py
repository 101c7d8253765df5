"""Run one configuration x one tier (x one shard): files in parallel, everything recorded as it happens.

Each file runs through `filerun` (fresh processes, crash and hang attribution). The run record is
rewritten after every file, so Ctrl-C or SIGTERM leaves a consistent run directory, and `--resume`
continues it: finished files are not run again, and a file cut short resumes after its last test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import harness
from harness.configure.configurations import Configuration
from harness.configure.tiers import HARNESS_ROOT, TORCH_SUITES, Tier
from harness.errors import WRITE_ERRNOS, HarnessError, WriteError, write_error
from harness.protocol import Env, Event, Setting
from harness.configure.architectures import host_machine, is_emulated
from harness.record.durations import NO_HISTORY, History
from harness.record.fingerprint import PER_RUN_FOLDERS, describe_interpreter, environment_fingerprint, sources_identity
from harness.record.ingest import ingest_finished
from harness.record.model import FileRecord, RunRecord, Sharding
from harness.record.store import RunDirectory, new_run_directory
from harness.record.writing import nearly_full
from harness.run import processes
from harness.run.coverage import record_coverage
from harness.run.filerun import LIVE, POLL_SECONDS, FileContext, run_file
from harness.run.progress import RunProgress
from harness.run.schedule import earlier_durations, longest_first
from harness.run.split import file_seconds, split_files


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
    absent: tuple[str, ...] = ()  # files the tier names that the tests directory lacks (recorded, announced)
    entries: tuple[str, ...] = ()  # PyTorch database entries the bundled suites are narrowed to (--select NAME)
    narrowed: tuple[str, ...] = ()  # the files that `entries` narrow (those selected by name, not by path)
    stages: tuple[str, ...] = ()  # the tier's stages this run selected (--stage)
    sharding: Sharding | None = None  # how the shard's targets were chosen (harness/run/shards.py)
    timeout_scale: int = 1  # the tier's time limits are already multiplied by this (an emulated interpreter)
    history: History = NO_HISTORY  # recorded durations the run's plan splits heavy files on (harness/run/split.py)


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
    directory, which holds no result yet, is removed. Once it is written, the run directory is
    never removed: a failure mid-run stops the run, resumable (`_run_files`)."""
    grouped = group_targets(request.targets)
    _check_targets(request.tests_dir, grouped, "--select")
    _require_interpreter(request.python)
    config = request.configuration
    started = datetime.now(timezone.utc)
    run = new_run_directory(request.results_root, config.name, request.tier.name, request.shard, started)
    run.create()
    env = child_environment(config, request.tier.env, run.cache)
    try:
        skip = _unmet_requirement(request.tier, request.python, env)
        if skip:
            record = _first_record(request, run, env, started, list(grouped))
            run.write_record(replace(record, status="complete", skipped_reason=skip, finished=_now()))
            (announce or print)(f"tier {request.tier.name} skipped: {skip}")
        else:
            context = FileContext(request.python, request.tests_dir, request.tier, config, run, env,
                                  narrowing(request.entries, request.narrowed),
                                  split_files(grouped, request.history, request.jobs))
            timed = file_seconds(request.history) or earlier_durations(request.results_root, request.tier.name)
            order = longest_first(list(grouped), timed)  # the durations a split is planned on, where there are any
            with run.hold(), ThreadPoolExecutor(max_workers=1) as background:
                record = background.submit(_first_record, request, run, env, started, list(grouped))
                _run_files(context, record, {file: grouped[file] for file in order}, request.jobs, announce)
    except HarnessError:
        if not run.record_path.exists():
            shutil.rmtree(run.root, ignore_errors=True)
        raise
    ingest_finished(run.root, request.results_root, announce or print)  # the run is on disk, whatever happens here
    return run.root


def _require_interpreter(python: str) -> None:
    if not python or not os.access(python, os.X_OK) or not os.path.isfile(python):
        raise HarnessError(f"interpreter {python or '(none recorded)'} cannot be started: not an executable file")


def _check_targets(tests_dir: Path, grouped: dict[str, list[str]], where: str) -> None:
    """Every file to run exists inside the tests directory (a selection, or a record's targets)."""
    for file in grouped:
        if not _inside(tests_dir, file):
            raise HarnessError(f"{where}: {file} is outside the tests directory {tests_dir}")
        if not (tests_dir / file).is_file():
            raise HarnessError(f"{where}: {file} not found under {tests_dir}")


def _inside(tests_dir: Path, file: str) -> bool:
    """A target file is a relative path that stays inside the tests directory (after '..' is applied)."""
    path, base = Path(file), Path(os.path.normpath(tests_dir))
    return not path.is_absolute() and Path(os.path.normpath(base / path)).is_relative_to(base)


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
        test_sources=sources_identity(request.tests_dir, files, _origin(request.tier, interpreter),
                                      _support_files(request)),
        started=started.isoformat(),
        command=list(request.command),
        targets=request.targets,
        shard=request.shard,
        sharding=request.sharding,
        stages=request.stages,
        python=request.python,
        architecture=interpreter.get("machine", ""),
        emulated=is_emulated(interpreter.get("machine") or host_machine()),
        timeout_scale=request.timeout_scale,
        absent=request.absent,
        entries=request.entries,
        narrowed=request.narrowed,
    )
    run.write_record(record)
    return record


def _origin(tier: Tier, interpreter: dict[str, Any]) -> dict[str, Any] | None:
    """Where a bundled tier's tests come from besides its files: the torch whose suites they run."""
    if tier.source != "torch":
        return None
    return {"kind": "torch", "torch": interpreter["versions"].get("torch"), "git": interpreter.get("torch_git")}


def _support_files(request: RunRequest) -> list[str]:
    """Shared modules of the bundled suites (their entry filter, catalog), hashed with the test files."""
    if request.tier.source != "torch":
        return []
    return sorted(path.relative_to(request.tests_dir).as_posix() for path in TORCH_SUITES.glob("*.py"))


def sources_line(record: RunRecord) -> str:
    """The run's first line: which tests these are, from where."""
    sources = record.test_sources
    origin = sources.get("origin")
    if origin and origin.get("kind") == "torch":
        return (f"tests: PyTorch's own suites inside the installed torch {origin.get('torch')} "
                f"(git {str(origin.get('git'))[:12]}), run by harness/torch_suites; no PyTorch checkout given "
                f"(--tests-dir or {Setting.TESTS_DIR} runs a checkout's files)")
    commit = f" (git {sources['commit'][:12]})" if sources.get("commit") else ""
    return f"tests: {record.tests_dir}{commit}, {sources.get('files')} files, content {sources.get('hash')}"


def resume(run_dir: Path, configuration: Configuration, tier: Tier, jobs: int,
           announce: Callable[[str], None] | None = None, history: History = NO_HISTORY) -> Path:
    """Continue an interrupted run: finished files stay, the rest run (after their last finished test);
    then add the finished run to the results database of the folder it is in."""
    run = RunDirectory(run_dir)
    with run.hold():
        _refuse_while_alive(run)
        record = run.read_record()
        if record.status == "complete":
            raise HarnessError(f"{run_dir}: the run is complete; nothing to resume")
        _require_interpreter(record.python)
        grouped = group_targets(record.targets)
        _check_targets(Path(record.tests_dir), grouped, f"{run.record_path}: targets")
        finished = {f.file for f in record.files}
        pending = {file: targets for file, targets in grouped.items() if file not in finished}
        context = FileContext(record.python, Path(record.tests_dir), tier, configuration, run,
                              child_environment(configuration, tier.env, run.cache), narrowing(record.entries, record.narrowed),
                              split_files(pending, history, jobs))
        record = replace(record, status="running", finished=None)
        run.write_record(record)
        written: Future[RunRecord] = Future()
        written.set_result(record)
        _run_files(context, written, pending, jobs, announce)
    ingest_finished(run.root, run.root.parent, announce or print)
    return run.root


ALIVE_WAIT_SECONDS = 5.0  # for processes of a killed runner that the kernel is still ending


def _refuse_while_alive(run: RunDirectory) -> None:
    """A resume beside processes of the same run (a killed runner's, or what its tests started)
    would run the same tests twice, at once: it waits a moment for them to go, then refuses."""
    deadline = time.monotonic() + ALIVE_WAIT_SECONDS
    while alive := sorted(processes.marked(processes.marks(run.root))):
        if time.monotonic() > deadline:
            listed = " ".join(map(str, alive[:10]))
            raise HarnessError(f"{run.root}: {len(alive)} process(es) of this run still alive (pid {listed}): "
                               f"end them (kill {listed}) or wait for them, then resume")
        time.sleep(POLL_SECONDS)


def _run_files(context: FileContext, record: Future[RunRecord], pending: dict[str, list[str]], jobs: int,
               announce: Callable[[str], None] | None) -> None:
    """Run files `jobs` at a time; rewrite the record (once it is written) after each; on
    interrupt, or when anything fails mid-run (a full disk, a vanished folder), stop, and leave the
    run resumable with every finished file kept."""
    files: list[FileRecord] = []
    recorded = 0  # files the record on disk holds (earlier runs' included)
    progress = RunProgress(len(pending), announce)
    queue = list(pending.items())
    pool = ThreadPoolExecutor(max_workers=jobs)
    running: dict[Future, str] = {}  # each running file's future
    held: dict[str, int] = {}  # the `--jobs` slots each running file holds
    forked: dict[str, int] = {}  # how many workers at once a split file's host said it forks (its RESTART)
    LIVE.reset()

    def submit_ready() -> None:
        """Start files in their order while the next one's slots are free: a split file holds one
        per piece, since its host forks that many workers at once."""
        while queue:
            slots = min(context.split[queue[0][0]].pieces, jobs) if queue[0][0] in context.split else 1
            if slots > jobs - sum(held.values()):
                return
            file, targets = queue.pop(0)
            running[pool.submit(run_file, context, file, targets, on_event)] = file
            held[file] = slots

    def on_event(file: str, event: dict[str, Any]) -> None:
        """(In the file's thread.) A split file whose host forks fewer workers than the plan gave it
        slots (it cannot fork: threads after collection, a JIT on before it; or too few tests)."""
        progress.event(file, event)
        if event["event"] == Event.RESTART and file in context.split:
            forked[file] = max(int(event.get("pieces") or 1), 1)

    def give_back() -> None:
        """The slots a split file holds beyond the workers its host forks: other files start in them."""
        for file, slots in held.items():
            held[file] = min(slots, forked.get(file, slots))

    def write(**changes: object) -> None:
        nonlocal recorded
        base = record.result()
        context.run.write_record(replace(base, files=(*base.files, *files), **changes))
        recorded = len(base.files) + len(files)
        context.run.reserve.hold()

    def stop() -> None:
        """End every process of the run and mark its record interrupted. A record the disk refuses
        stays as of the last file (status running), and resumes the same."""
        LIVE.stop()  # kills the test processes; their files stay unfinished, to resume
        pool.shutdown(wait=True, cancel_futures=True)
        processes.kill(processes.marked(processes.marks(context.run.root)))  # and what their tests started
        if not record.done() or record.exception() is not None:
            return  # no record was written: nothing to resume (execute removes the directory)
        context.run.reserve.release()  # room for this last record on a full disk
        with suppress(HarnessError):
            write(status="interrupted", finished=_now())
        context.run.reserve.release()

    try:
        with progress:
            submit_ready()
            progress.announce(sources_line(record.result()))  # raises if the record cannot be made:
            # the test processes are stopped below
            context.run.reserve.hold()
            if record.result().absent:
                progress.announce(f"absent: {len(record.result().absent)} files the tier names are not in "
                                  f"{record.result().tests_dir}: {', '.join(record.result().absent)}")
            while running:
                done, _ = wait(running, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                for future in done:
                    held.pop(running.pop(future))
                    outcome = future.result()
                    files.append(outcome.record)
                    write()
                    progress.file_done(outcome.record)
                give_back()
                submit_ready()
            pool.shutdown()
            covered = record_coverage(context.run, record.result(), context.env)
            if covered:
                progress.announce(covered)
            write(status="complete", finished=_now())
            context.run.reserve.release()
    except KeyboardInterrupt:
        stop()
        progress.announce(f"interrupted: {len(files)} files recorded in {context.run.root}; "
                          f"continue with: {resume_command(context.run.root)}")
        raise
    except (HarnessError, OSError) as error:
        stop()
        stopped = _machine_error(error, context.run.root)
        if not context.run.record_path.exists():
            raise stopped from None
        remedy = stopped.remedy if isinstance(stopped, WriteError) \
            else "free space" if nearly_full(context.run.root) else "fix the cause"
        raise HarnessError(f"run stopped: {stopped}; {_files(recorded)} results are kept in {context.run.root}: "
                           f"{remedy}, then continue with: {resume_command(context.run.root)}") from None
    except BaseException:
        stop()  # a bug of the harness (exit 4): the processes end, and what finished stays
        raise


def _machine_error(error: HarnessError | OSError, run_root: Path) -> HarnessError:
    """What stopped a run, as one line: a write the machine refused is named by the one rule
    (harness/errors.py); an OSError that is no refusal of the machine is a bug, raised as it is."""
    if isinstance(error, HarnessError):
        return error
    if error.errno not in WRITE_ERRNOS:
        raise error
    return write_error(error.filename or run_root, error)  # a write to an open file names none


def _files(count: int) -> str:
    return f"{count} file's" if count == 1 else f"{count} files'"


def resume_command(run_root: Path) -> str:
    """The command that continues a run cut short."""
    return f"python -m harness run --resume {run_root}"


def child_environment(config: Configuration, tier_env: Mapping[str, str], cache: Path) -> dict[str, str]:
    """The same environment discipline in every configuration; only the configuration's own part
    differs. Each run (test run or perf run) has its own caches under `cache`."""
    env = interpreter_environment(config, tier_env)
    env.update({name: str((cache / folder).resolve()) for name, folder in PER_RUN_FOLDERS.items()})
    return env


def narrowing(entries: tuple[str, ...], files: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """Per file, what narrows the bundled suites to the selected database entries (Env.ENTRIES)."""
    return {file: {Env.ENTRIES: ",".join(entries)} for file in files} if entries else {}


def interpreter_environment(config: Configuration, tier_env: Mapping[str, str]) -> dict[str, str]:
    """What every process of a configuration and tier (its `env`) sees, outside any one run."""
    env = dict(os.environ)
    env.pop("CI", None)  # a non-empty CI switches PyTorch into CI mode (downloads, XML): off everywhere
    env.pop(Env.ENTRIES, None)
    env.update({
        "PYTORCH_PRINT_REPRO_ON_FAILURE": "0",
        "PYTORCH_HYPOTHESIS_PROFILE": "dev",  # PyTorch picks its hypothesis profile from this, same everywhere
        **tier_env,
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


def default_python() -> str:
    return sys.executable

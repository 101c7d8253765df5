"""JIT coverage at the end of a JIT run: the compiled-function files of its processes attributed to
the definitions of the torch they ran, written as the run directory's `coverage.json`.

The definitions are counted once per torch and Python version by the configuration's own
interpreter (`python -m harness.run.census`, harness/run/census.py) and kept in the harness cache,
so every later run of that torch reads them in a moment. Coverage is a measurement beside the
verdict: when it cannot be made (no torch, a census that fails), the run says why and goes on.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

from harness.configure.provision import cache_root
from harness.errors import HarnessError, WriteError
from harness.record.coverage import Beyond, Coverage, Definitions, attribute, read_process_file, write
from harness.record.model import RunRecord
from harness.record.store import RunDirectory

CENSUS_TIMEOUT = 600  # seconds: ~2,400 files; a few seconds from torch's pyc files, about a minute from sources


def census_path(torch: str, python_version: str) -> Path:
    return cache_root() / "coverage" / f"torch-{torch}-python-{python_version}.json"


def definitions(python: str, env: dict[str, str], torch: str, python_version: str) -> Definitions:
    """The installed torch's definitions, counted by `python` (cached per torch and Python version)."""
    path = census_path(torch, python_version)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run([python, "-m", "harness.run.census", str(path)], env=env, capture_output=True,
                                  text=True, timeout=CENSUS_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"the census of torch's functions took over {CENSUS_TIMEOUT} s") from None
        except OSError as error:
            raise HarnessError(f"the census of torch's functions cannot start {python}: {error.strerror}") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise HarnessError(f"the census of torch's functions failed under {python}: {last}")
    return _read(path)


def _read(path: Path) -> Definitions:
    """The census in `path`, parsed once per process for each version of the file: a report reads it
    for every form it writes (markdown, JSON, HTML) and every candidate, and it is megabytes of JSON."""
    try:
        stat = path.stat()
    except OSError as error:
        raise HarnessError(f"{path}: not a census of torch's functions ({error}); delete it to count again") from None
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parsed(path: Path, mtime_ns: int, size: int) -> Definitions:
    try:
        return Definitions.from_census(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(f"{path}: not a census of torch's functions ({error}); delete it to count again") from None


def census_of(coverage: Coverage, beyond: Beyond) -> Definitions | None:
    """The cached census that counted `coverage` (same torch, same count in every module), for the
    names of the functions of the modules `beyond` splits, which a record does not keep; None when
    no module is split or this machine has no such census (they are then judged as a whole)."""
    if not any(beyond.splits(module) for modules in coverage.modules.values() for module in modules):
        return None
    pattern = census_path(str(coverage.torch), "*")  # any Python's: the one that counted the same
    for path in sorted(pattern.parent.glob(pattern.name)):
        try:
            census = _read(path)
        except HarnessError:
            continue
        if census.per_module() == coverage.modules:
            return census
    return None


def record_coverage(run: RunDirectory, record: RunRecord, env: dict[str, str]) -> str | None:
    """Write the coverage of a finished JIT run; returns the line to announce (None: not a JIT run)."""
    if record.jit_mode != "on":
        return None
    torch = record.versions.get("torch")
    if not torch:
        return "JIT coverage not recorded: the interpreter reported no torch version"
    processes = (content for content in map(read_process_file, run.compiled_files()) if content is not None)
    try:  # a census that fails is no error of the run; a coverage file the disk refuses stops it, to resume
        coverage = attribute(definitions(record.python, env, torch, str(record.versions.get("python"))), processes,
                             torch, run.root.name)
        write(run, coverage)
    except WriteError:
        raise
    except HarnessError as error:
        return f"JIT coverage not recorded: {error}"
    total = coverage.total
    return (f"JIT coverage: {total.compiled:,} of torch {torch}'s {total.defined:,} functions compiled "
            f"({100 * (total.share or 0.0):.1f}%); per subpackage: python -m harness coverage {run.root}")

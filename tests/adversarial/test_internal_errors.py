"""The last resort: an exception the harness did not expect is exit 4 and one line pointing at a log
that holds the traceback; never 0, 1 or 2 (a verdict), never a traceback on the terminal.

Class "internal errors" of docs/robustness.md. The fault is injected into a real command's handler:
every known bad input is handled before it, so only a bug of the harness can reach this path."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.commands import diff as compare_command
from harness.exits import ExitStatus

pytestmark = pytest.mark.unit


def crash_with(error: BaseException):
    def handler(args):
        raise error
    return handler


@pytest.fixture
def sides(tmp_path: Path) -> list[str]:
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    return [str(folder) for folder in folders]


def test_an_unexpected_exception_is_exit_4_with_a_pointer_to_its_log(sides, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(compare_command, "_diff", crash_with(KeyError("a bug\non two lines")))
    assert main(["diff", *sides]) == ExitStatus.INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("harness: internal error (a bug in the harness, not in your input): KeyError: 'a bug\\non two lines'")
    log = Path(re.search(r"the traceback is in (\S+)$", err.strip()).group(1))
    assert log.parent == tmp_path / "cache" / "errors"
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "KeyError" in text and "command: " in text


def test_without_a_writable_cache_the_log_goes_to_the_temporary_folder(sides, tmp_path, monkeypatch, capsys):
    (tmp_path / "cache").write_text("a file, so no folder can be made in it")
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    monkeypatch.setattr(compare_command, "_diff", crash_with(RuntimeError("boom")))
    assert main(["diff", *sides]) == ExitStatus.INTERNAL
    assert f"the traceback is in {tmp_path / 'tmp'}/internal-error-" in capsys.readouterr().err


@pytest.mark.parametrize("error, status, says", [
    (OSError(errno.ENOSPC, "No space left on device", "/results/run.json"), 3,
     "harness: error: /results/run.json: the disk is full"),
    (PermissionError(errno.EACCES, "Permission denied", "/results"), 3, "harness: error: /results: permission denied"),
    (OSError(errno.EIO, "Input/output error", "/results/run.json"), 4, "harness: internal error"),
    (BrokenPipeError(errno.EPIPE, "Broken pipe"), 3, "harness: error: standard output was closed"),
])
def test_errors_of_the_machine_are_one_line_and_never_a_verdict(error, status, says, sides, tmp_path, monkeypatch,
                                                               capsys):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(compare_command, "_diff", crash_with(error))
    monkeypatch.setattr("sys.stdout", open(tmp_path / "stdout", "w"))  # replaced after a closed pipe
    assert main(["diff", *sides]) == status
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(says)

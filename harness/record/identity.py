"""Test identity: the key under which one test is the same test in every run and configuration.

JUnit names a test by (classname, name). What must not make two runs of one test look like two
tests: a memory address printed into a parametrize id (`<object at 0x7f3a...>` differs in every
process), pytest-xdist's `@group` suffix (`--dist loadgroup`), and the same test reported twice
on one side (shards that overlap, a rerun report added to the folder): the last report decides,
earlier ones become its attempts, as pytest-rerunfailures' own reruns do.

The record stage owns it because results are stored under this key (harness/record/stream.py):
every run in the results database, and both sides of a comparison, name a test the same way.
"""

from __future__ import annotations

import re
from dataclasses import replace

from harness.record.junit import attempt_text
from harness.record.model import StoredResult, TestResult

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_XDIST_GROUP = re.compile(r"@[\w.-]+$")


def key_of(result: TestResult) -> str:
    """`classname::name`, with per-process noise taken out (the patterns are only searched for in
    names that can hold them: a million names are keyed per side)."""
    classname, name = result.classname, result.name
    if "0x" in name:
        name = _ADDRESS.sub("0x?", name)
    if "@" in name:
        name = _XDIST_GROUP.sub("", name)
    if "0x" in classname:
        classname = _ADDRESS.sub("0x?", classname)
    return f"{classname}::{name}"


def merge(earlier: TestResult | StoredResult, later: TestResult) -> TestResult:
    """One test reported twice: the later report, with the earlier one (and its attempts) first
    among its attempts."""
    return replace(later, attempts=(*earlier.attempts, attempt_text(earlier), *later.attempts))

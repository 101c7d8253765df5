"""Culprits: the JIT-compiled functions to blame for a test's failure, kept in its run directory.

`python -m harness culprit` (and `diff --culprit`) bisect a failing test's JIT list down to the
functions whose compilation makes it fail (harness/compare/culprit/). Each search's answer is
written where the run it explains lives, so a later diff of the same run shows it without searching
again:

    <run directory>/culprits/culprits.json       test key -> Culprit (every search so far)
    <run directory>/culprits/<test>.jitlist      the reproducer's JIT list (CinderX's format)

The report model shows the same dataclass (harness/report/model.py): one shape from search to page.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from harness.record.store import read_json_record, write_json_atomically
from harness.record.writing import make_folder

FOLDER = "culprits"
RECORD = "culprits.json"


class CulpritStatus(StrEnum):
    """How a search ended."""

    FOUND = "found"  # the smallest failing JIT list, and a reproducer that fails with it and passes without
    FLAKY = "flaky"  # a probe failed in some of its reruns and passed in others: the search stopped there
    NOT_REPRODUCED = "not reproduced"  # rerun under the JIT, it no longer fails (or the reproducer does not)
    COMPILING = "compiling when it died"  # died in CinderX's compile thread compiling these; not every time
    NOT_BISECTABLE = "not bisectable"  # fails with nothing compiled, or passes with every candidate compiled
    NO_CANDIDATES = "no candidates"  # CinderX compiled nothing while it failed


@dataclass(frozen=True)
class CulpritFunction:
    """One function CinderX compiled, as its JIT list names it, and where its code is."""

    name: str  # module:qualname, or qualname@file:line for code without a module name (CinderX's JIT list)
    file: str = ""  # "" when it cannot be located (a function defined inside another, generated code)
    line: int | None = None
    inlined: tuple[str, ...] = ()  # functions CinderX inlined into it when it compiled it
    origin: str = ""  # code torch.compile generated: what made it and how to see it ("" for a source file's)

    @property
    def where(self) -> str:
        """`name (file:line)`, then what generated it, the way the reports print a function."""
        place = f"{self.file}:{self.line}" if self.file and self.line else self.file
        named = f"{self.name} ({place})" if place else self.name
        return f"{named}: {self.origin}" if self.origin else named


@dataclass(frozen=True)
class Culprit:
    """What a search found for one failing test, and what it cost."""

    status: CulpritStatus
    functions: tuple[CulpritFunction, ...] = ()  # the smallest set whose compilation fails (when found)
    passes: tuple[str, ...] = ()  # HIR passes whose removal makes the failure disappear (one culprit only)
    reproducer: str = ""  # a command that fails with only the culprit compiled
    jit_list: str = ""  # the JIT list file the reproducer reads
    compiling: tuple[str, ...] = ()  # what CinderX was compiling when the failing process died
    candidates: int = 0  # functions CinderX compiled or inlined while the test failed
    probes: int = 0  # JIT lists tried (each rerun K times)
    reruns: int = 0  # test processes (or forks) run in all
    seconds: float = 0.0
    note: str = ""  # why the search stopped short, or what else it saw
    polluters: tuple[str, ...] = field(default=())  # tests run in front of it in every probe (order dependence)
    reused_from: str = ""  # the test of the same polluter group whose culprit this is, checked for this one

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values (lists, strings), as report.json and culprits.json hold them."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Culprit:
        values = dict(data)
        values["status"] = CulpritStatus(values["status"])
        values["functions"] = tuple(CulpritFunction(**{**f, "inlined": tuple(f.get("inlined", ()))})
                                    for f in values.get("functions", ()))
        for name in ("passes", "compiling", "polluters"):
            values[name] = tuple(values.get(name, ()))
        return cls(**values)


def folder(run: Path) -> Path:
    return run / FOLDER


def jit_list_path(run: Path, test: str) -> Path:
    """A file name for one test's JIT list: readable, and unique per test id."""
    readable = re.sub(r"[^\w.-]+", "_", test)[:80].strip("_")
    return folder(run) / f"{readable}-{hashlib.sha1(test.encode()).hexdigest()[:8]}.jitlist"


def read_culprits(run: Path) -> dict[str, Culprit]:
    """The culprits found so far for tests of this run, by test key (none: an empty mapping)."""
    path = folder(run) / RECORD
    if not path.is_file():
        return {}
    return read_json_record(path, lambda data: {test: Culprit.from_json(item) for test, item in data.items()},
                            "culprit record")


def write_culprit(run: Path, test: str, culprit: Culprit) -> None:
    """Add (or replace) one test's culprit; the others found earlier stay."""
    found = read_culprits(run)
    found[test] = culprit
    make_folder(folder(run))
    write_json_atomically(folder(run) / RECORD, {key: value.to_json() for key, value in sorted(found.items())})

"""PyTorch CI's test-report folders: what their names say about the job that wrote them.

PyTorch's CI uploads each test job's JUnit XML as one artifact,
`test-reports-<job>-<configuration>-<shard>-<shards>-<runner>_<job id>` (unzipped by its own tools
into a folder of that name with `unzipped-` before it), holding
`test/test-reports/python-pytest/<test file>/<test file>-<random hex>.xml`: one file per process
that ran the test file, so a test file that run_test.py ran again after a failure has several.
A folder of such artifacts (one job, or the shards of one configuration) is a side of a diff like
any folder of JUnit XML; this module only names it (`describe`): the reading is harness/record/junit.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_ARTIFACT = re.compile(r"(?:unzipped-)?test-reports-(?P<job>[^-]+)-(?P<configuration>.+)-(?P<shard>[0-9]+)-"
                       r"(?P<shards>[0-9]+)-(?P<runner>[^_]+)_(?P<job_id>[0-9]+)")


@dataclass(frozen=True)
class Artifact:
    """One test job's report artifact, as its folder name says."""

    job: str
    configuration: str
    shard: int
    shards: int
    runner: str
    job_id: str

    @classmethod
    def named(cls, name: str) -> Artifact | None:
        found = _ARTIFACT.fullmatch(name.removesuffix(".zip"))
        if found is None:
            return None
        return cls(found["job"], found["configuration"], int(found["shard"]), int(found["shards"]),
                   found["runner"], found["job_id"])


def artifacts(folder: Path) -> list[Artifact]:
    """The report artifacts a side's folder is, or holds (one level down), in shard order."""
    own = Artifact.named(folder.name)
    if own is not None:
        return [own]
    found = [Artifact.named(child.name) for child in folder.iterdir() if child.is_dir()] if folder.is_dir() else []
    return sorted((a for a in found if a is not None), key=lambda a: (a.configuration, a.shard, a.job_id))


def describe(folder: Path) -> str | None:
    """How a side made of PyTorch CI test reports is named: its configuration and shards, with the
    job and runner (`default shard 2/5 (test on linux.2xlarge, job 4711)`, `default shards 1/2, 2/2
    (linux.2xlarge, jobs 4711, 4712)`); None for other folders."""
    found = artifacts(folder)
    if not found:
        return None
    configurations = sorted({a.configuration for a in found})
    if len(found) == 1:
        [one] = found
        return f"{one.configuration} shard {one.shard}/{one.shards} ({one.job} on {one.runner}, job {one.job_id})"
    shards = ", ".join(f"{a.shard}/{a.shards}" for a in found)
    return (f"{' + '.join(configurations)} shards {shards} ({', '.join(sorted({a.runner for a in found}))}, "
            f"jobs {', '.join(a.job_id for a in found)})")
